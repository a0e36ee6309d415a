// WalCell: the model of one repetition of a cell — procs, storage, the shared WAL with its
// insertion strategy, the WAL writer — and the workload's transaction loop, instantiated per
// (platform, strategy). The only virtual call is client_main, once per client.
//
// Workloads (DESIGN.md section 6, PROTOCOLS.md section 7):
//   emit_message  SELECT pg_logical_emit_message(transactional, 'test', repeat('0', N)):
//                 one LogicalMessage record of 55+N bytes (N <= 226) or 58+N bytes, then, if
//                 transactional, an xid from XidGenLock, a 34-byte COMMIT record and XLogFlush
//                 (synchronous_commit) or XLogSetAsyncXactLSN (asynchronous commit).
#pragma once

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"
#include "core/wal/wal.h"
#include "harness/cell.h"
#include "harness/spec.h"

namespace walbench {

// Record length of pg_logical_emit_message(true, 'test', repeat('0', n)) on PG 15
// (measured with pg_waldump: 16 -> 71, 226 -> 281, 256 -> 314).
constexpr uint32_t emit_message_record_size(uint32_t n) { return n <= 226 ? 55 + n : 58 + n; }
constexpr uint32_t kCommitRecordSize = 34;  // Transaction/COMMIT, wal_level=replica

inline WalGeometry geometry_of(const WalSpec& w) {
  WalGeometry g;
  g.page_size = w.page_size;
  g.segment_size = w.segment_size;
  g.validate();
  return g;
}

// Draws a message length from a SizeSpec with the client's PRNG.
template <class P>
uint32_t draw_size(const SizeSpec& s, Proc<P>& me) {
  switch (s.kind) {
    case SizeSpec::Kind::kFixed:
      return s.value;
    case SizeSpec::Kind::kUniform:
      return s.min + static_cast<uint32_t>(me.next_random() % (uint64_t{s.max} - s.min + 1));
    case SizeSpec::Kind::kExponential: {
      const double u = 1.0 - me.next_unit();  // (0, 1]
      double v = -s.mean * std::log(u);
      if (v < s.min) v = s.min;
      if (s.max != 0 && v > s.max) v = s.max;
      return static_cast<uint32_t>(v < 1 ? 1 : v);
    }
  }
  return s.value;
}

inline uint32_t max_message_size(const SizeSpec& s) {
  switch (s.kind) {
    case SizeSpec::Kind::kFixed: return s.value;
    case SizeSpec::Kind::kUniform: return s.max;
    case SizeSpec::Kind::kExponential: return s.max != 0 ? s.max : 1u << 24;
  }
  return s.value;
}

// A storage directory owned by one repetition ("file" storage): created fresh, removed after.
class ScratchDir {
 public:
  ScratchDir(const std::string& base, const std::string& name) {
    if (base.empty()) throw std::runtime_error("wal.storage \"file\" needs wal.path (a directory)");
    path_ = std::filesystem::path(base) / name;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_, ec);
    if (ec) throw std::runtime_error("cannot create WAL directory " + path_.string() + ": " + ec.message());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

template <class P, class S>
class WalCell final : public CellRun {
 public:
  using WalT = Wal<P, S>;

  // private_streams: one WAL per client (the `ideal` strategy); otherwise one shared WAL.
  template <class... StrategyArgs>
  WalCell(const CellSpec& spec, uint64_t seed, bool private_streams, StrategyArgs&&... args)
      : spec_(spec),
        clients_(spec.clients),
        private_(private_streams),
        procs_(spec.clients + 1, seed),  // + the WAL writer
        geom_(geometry_of(spec.wal)),
        xid_gen_lock_(&procs_, WaitEvent::kXidGen),
        per_client_(spec.clients) {
    const uint32_t streams = private_ ? clients_ : 1;
    for (uint32_t s = 0; s < streams; ++s) {
      Stream st;
      if (spec.wal.storage == "file") {
        st.dir = std::make_unique<ScratchDir>(
            spec.wal.path, "walbench-" + std::to_string(::getpid()) + "-cell" +
                               std::to_string(spec.index) + "-" + std::to_string(seed) + "-s" +
                               std::to_string(s));
        st.storage = make_file_storage(geom_, st.dir->path(), spec.wal.fsync);
      } else {
        st.storage = make_memory_storage(geom_);
      }
      st.wal = std::make_unique<WalT>(geom_, spec.wal.wal_buffers, *st.storage, procs_, args...);
      streams_.push_back(std::move(st));
    }
    const uint32_t max_len = std::max(emit_message_record_size(max_message_size(spec.workload.record_size)),
                                      kCommitRecordSize);
    for (auto& c : per_client_) c.buffer.reset(new uint8_t[max_len]);
    if (!private_) writer_ = std::thread([this] { wal_writer_main(); });
  }

  ~WalCell() override { stop_writer(); }

  void client_main(uint32_t client, RunControl& ctl) override {
    Proc<P>& me = procs_[static_cast<int32_t>(client)];
    WalT& wal = *streams_[private_ ? client : 0].wal;
    ClientCounters& counters = ctl.counters[client];
    PerClient& pc = per_client_[client];
    uint8_t* buf = pc.buffer.get();
    const WorkloadSpec& w = spec_.workload;
    const uint64_t overhead_ns = static_cast<uint64_t>(w.client_overhead_us * 1000.0);
    const bool sync = spec_.commit.synchronous_commit;

    while (!ctl.stop.load(std::memory_order_relaxed)) {
      const uint64_t t0 = P::now_ns();
      if (overhead_ns) P::work(overhead_ns);
      const Xid xid = w.transactional ? assign_xid(me) : kInvalidXid;
      const uint32_t len = emit_message_record_size(draw_size(w.record_size, me));
      uint32_t crc = build_record(buf, len, xid, kRmLogicalMsg, 0, me.id, pc.records++);
      wal.insert(me, buf, len, crc);
      uint64_t bytes = max_align(len);
      if (w.transactional) {
        crc = build_record(buf, kCommitRecordSize, xid, kRmXact, 0, me.id, pc.records++);
        const auto commit = wal.insert(me, buf, kCommitRecordSize, crc);
        bytes += max_align(kCommitRecordSize);
        if (sync)
          wal.flush(me, commit.end);
        else
          wal.set_async_xact_lsn(me, commit.end);
      }
      const uint64_t t1 = P::now_ns();
      counters.count_txn(bytes);
      if (ctl.measuring.load(std::memory_order_relaxed)) counters.record_latency(t1 - t0);
    }
  }

  WaitEvent wait_event(uint32_t client) const override {
    return static_cast<WaitEvent>(
        procs_[static_cast<int32_t>(client)].wait_event.load(std::memory_order_relaxed));
  }

  void finish() override {
    stop_writer();
    Proc<P>& me = procs_[static_cast<int32_t>(clients_)];
    for (auto& st : streams_) {
      const Lsn end = geom_.bytepos_to_end_lsn(st.wal->strategy.reserved_end());
      st.wal->write_upto(me, end, /*flush_too=*/true);
    }
  }

  VerifyResult verify() override {
    VerifyResult total;
    for (size_t s = 0; s < streams_.size(); ++s) {
      VerifyExpect ex;
      ex.start = geom_.bytepos_to_lsn(BytePos{0});
      ex.end = geom_.bytepos_to_end_lsn(streams_[s].wal->strategy.reserved_end());
      ex.records_per_client.assign(clients_, 0);
      ex.total_records = 0;
      for (uint32_t c = 0; c < clients_; ++c) {
        if (private_ && c != s) continue;
        ex.records_per_client[c] = per_client_[c].records;
        ex.total_records += per_client_[c].records;
      }
      VerifyResult r = verify_wal(*streams_[s].storage, geom_, ex);
      total.records += r.records;
      total.bytes += r.bytes;
      if (!r.ok && total.ok) {
        total.ok = false;
        total.error = private_ ? "stream of client " + std::to_string(s) + ": " + r.error : r.error;
      }
    }
    return total;
  }

  nlohmann::json lock_stats() const override {
    const ProcStats t = procs_.total_stats();
    nlohmann::json j = nlohmann::json::object();
    for (size_t e = 1; e < kNumWaitEvents; ++e) {
      const LockStats& s = t.locks[e];
      if (s.acquisitions == 0 && s.spins == 0 && s.sleeps == 0) continue;
      j[wait_event_name(static_cast<WaitEvent>(e))] = {
          {"acquisitions", s.acquisitions}, {"contended", s.contended}, {"spins", s.spins},
          {"sleeps", s.sleeps}, {"wait_ms", static_cast<double>(s.wait_ns) / 1e6}};
    }
    return j;
  }

  nlohmann::json model_stats() const override {
    WalCounters sum;
    uint64_t storage_bytes = 0;
    for (const auto& st : streams_) {
      const WalCounters& c = st.wal->counters();
      sum.writes += c.writes;
      sum.fsyncs += c.fsyncs;
      sum.wal_buffers_full += c.wal_buffers_full;
      sum.pages_initialised += c.pages_initialised;
      sum.flush_calls += c.flush_calls;
      storage_bytes += st.storage->bytes_written();
    }
    return {{"writes", sum.writes},
            {"fsyncs", sum.fsyncs},
            {"wal_buffers_full", sum.wal_buffers_full},
            {"pages_initialised", sum.pages_initialised},
            {"flushes", sum.flush_calls},
            {"storage_bytes", storage_bytes},
            {"streams", streams_.size()}};
  }

 private:
  struct Stream {
    std::unique_ptr<ScratchDir> dir;
    std::unique_ptr<Storage> storage;
    std::unique_ptr<WalT> wal;
  };
  struct alignas(64) PerClient {
    std::unique_ptr<uint8_t[]> buffer;  // record under construction
    uint64_t records = 0;               // records inserted = next sequence number
  };

  Xid assign_xid(Proc<P>& me) {
    xid_gen_lock_.acquire(me, kLwExclusive);
    const uint32_t x = next_xid_.get();
    next_xid_.set(x + 1 < kFirstNormalXid.value ? kFirstNormalXid.value : x + 1);
    xid_gen_lock_.release(me);
    return Xid{x};
  }

  // The WAL writer (walwriter.c): every wal_writer_delay, flush what async commits asked for.
  void wal_writer_main() {
    Proc<P>& me = procs_[static_cast<int32_t>(clients_)];
    WalT& wal = *streams_[0].wal;
    const uint64_t delay_ns = static_cast<uint64_t>(spec_.commit.wal_writer_delay_ms * 1e6);
    uint64_t next = P::now_ns() + delay_ns;
    while (!writer_stop_.load(std::memory_order_relaxed)) {
      const uint64_t now = P::now_ns();
      if (now < next) {
        P::sleep_ns(std::min<uint64_t>(next - now, 5'000'000));
        continue;
      }
      next = now + delay_ns;
      const Lsn target = wal.async_xact_lsn(me);
      if (target > wal.log_flush_result()) wal.write_upto(me, target, /*flush_too=*/true);
    }
  }

  void stop_writer() {
    writer_stop_.store(true);
    if (writer_.joinable()) writer_.join();
  }

  const CellSpec spec_;
  const uint32_t clients_;
  const bool private_;
  ProcTable<P> procs_;
  const WalGeometry geom_;
  std::vector<Stream> streams_;
  alignas(128) LWLock<P> xid_gen_lock_;
  typename P::template Shared<uint32_t> next_xid_{kFirstNormalXid.value};
  std::vector<PerClient> per_client_;
  std::thread writer_;
  std::atomic<bool> writer_stop_{false};
};

}  // namespace walbench
