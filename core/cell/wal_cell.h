// WalCell: the model of one repetition of a cell — procs, storage, the shared WAL with its
// insertion strategy, the WAL writer, the CLOG with its CLOG strategy — and the workload's
// transaction loop, instantiated per (platform, strategy). The only virtual call is client_main,
// once per client; the workload is a template argument of the loop (one loop per workload). The
// CLOG with its CLOG strategy is the template argument C (CellClog below): strategies/make_cell.h
// passes strategies/clog_choice.h's ClogChoice, which picks the strategy with a switch per commit.
//
// Workloads (DESIGN.md section 6, PROTOCOLS.md section 7). Each statement starts with
// client_overhead_us of work outside any lock (parse, execute, network round trip). Record sizes
// are PostgreSQL 15's as pg_waldump shows them (wal_level=replica, 8 kB pages, no full-page
// images: the steady state), but for the COMMIT, 10 bytes longer; every record carries the
// (client, seq) tag the WAL verifier checks, in its last 10 bytes (core/wal/format.h "The tag";
// the README's "pg_waldump" section says which records PG 15's pg_waldump reads as its own).
// With workload.full_page_writes (default on, as PostgreSQL's GUC) a pgbench record that
// modifies a table page may carry that page's full-page image: FULL-PAGE IMAGES in
// core/cell/full_page_images.h (when, how large, and the table sizes from workload.scale);
// which page each record touches is named at its insert_record call below. An image's bytes
// are carried as more main data (filler), not as a block image: pg_waldump counts them in the
// record's size, not under its FPI column.
//   emit_message  SELECT pg_logical_emit_message(transactional, 'test', repeat('0', N)):
//                 one LogicalMessage record of 55+N bytes (N <= 226) or 58+N bytes (N below 10
//                 counts as 10: the message holds the tag), then, if transactional (xid
//                 assigned first), the commit.
//   simple_update pgbench -N (5 statements): BEGIN; UPDATE pgbench_accounts (the accounts
//                 update below); SELECT abalance; INSERT INTO pgbench_history (Heap/INSERT 80 B);
//                 END (the commit). Mean 278 B/txn of records (measured: 277), 288 with the
//                 tagged COMMIT.
//   tpcb_like     pgbench's default script (7 statements): BEGIN; UPDATE pgbench_accounts (the
//                 accounts update); SELECT abalance; UPDATE pgbench_tellers and UPDATE
//                 pgbench_branches (each a Heap/HOT_UPDATE 72 B of a row pgbench drew, under
//                 the row locks of core/cell/row_locks.h: a row whose previous updater was
//                 still in progress is waited for, then locked again, Heap/LOCK 59 B, before
//                 the update); INSERT INTO pgbench_history (Heap/INSERT 80 B); END. Mean 422
//                 B/txn without row-lock waits, 434 measured (at a scale and client count
//                 PROTOCOLS.md section 7 does not give; each wait adds a Heap/LOCK), 432 with
//                 the tagged COMMIT. PostgreSQL 15 also writes a Heap/LOCK with each non-HOT
//                 update whose new version goes to another page (measured here, README "Row
//                 locks"); the model's non-HOT accounts update has none, its probabilities
//                 having been chosen for the means when branches updates wrote a Heap/LOCK with
//                 p = 0.2.
//     the accounts update: Heap2/PRUNE 68 B first with p = 0.6 (before the xid is assigned, so
//                 it carries none in the first statement), then Heap/HOT_UPDATE 72 B, or with
//                 p = 0.3 a non-HOT Heap/UPDATE 180 B + Btree/INSERT_LEAF 64 B. The sizes are the
//                 measured ones (PROTOCOLS.md section 7); the three probabilities are ours, chosen
//                 so that both scripts' means match the measured bytes per transaction.
//   savepoints    the select-for-update script with three savepoints (9 statements): BEGIN;
//                 SELECT ... FROM pgbench_accounts FOR UPDATE (top-level xid, Heap/LOCK 59 B);
//                 then three times SAVEPOINT sN; SELECT ... FOR UPDATE (pgbench_tellers,
//                 pgbench_branches, another pgbench_accounts row): a subtransaction xid from the
//                 same counter and its Heap/LOCK 59 B (the teller and the branch under the row
//                 locks, core/cell/row_locks.h); END: a COMMIT of 54 B (34 + xinfo 4 +
//                 nsubxacts 4 + 3 x 4 subxact xids, xact.c XactLogCommitRecord; 64 B with the
//                 tag) and the tree's status set with the parent's (3 <= 5 subxids: the group
//                 path applies). 290 B/txn of records (300 with the tag).
//   The commit (RecordTransactionCommit): the COMMIT record (34 B + 4 per subxact + 8 when
//   there are any, + the 10-byte tag), then XLogFlush (synchronous_commit) or
//   XLogSetAsyncXactLSN, then the CLOG: TransactionIdCommitTree / TransactionIdAsyncCommitTree
//   (with the commit's end LSN as the group LSN), then the Proc's xids are cleared
//   (ProcArrayEndTransaction's part we model).
//   Non-transactional emit_message touches neither XidGen nor the CLOG (none is built).
//   Visibility and snapshots (README "CLOG as the experiment saw it"): every pgbench statement
//   that finds a row by key (accounts update; tellers and branches updates; each SELECT ... FOR
//   UPDATE) checks it: with probability clog.hint_bit_miss its hint bit is unset and the check
//   calls TransactionIdGetStatus (CLOG control lock shared) for an xid drawn uniformly from
//   those handed out, or (clog.lookup_xids "pgbench_pages") the last unhinted stamp on the row's
//   page, its age drawn from the table's size, the run sitting clog.xid_history xids after
//   pgbench -i (tuple_check). With clog.procarray on, every statement that reads or writes a table takes
//   clog.snapshots_per_statement snapshots (GetSnapshotData, ProcArrayLock shared; PostgreSQL
//   takes 2, see statement()), and the commit ends with
//   ProcArrayEndTransaction (core/clog/proc_array.h) instead of the owner clearing its xid.
//   With clog.xid_locks (on by default: README "Xid locks"), every xid assigned takes its heavyweight lock in the
//   shared lock table (XactLockTableInsert) and the commit releases them (LockReleaseAll) after
//   ProcArrayEndTransaction, before the row locks' waiters wake (core/clog/xid_lock_table.h).
//   Each statement's client overhead is reported to the sampler as Client:ClientRead.
// UNLOGGED TABLES (workload.tables "unlogged"; pgbench -i --unlogged-tables, as the 2011
// "Moving more work outside WALInsertLock" thread ran beside its permanent tables): a change to
// an unlogged relation writes no WAL (RelationNeedsWAL is false: no heap, prune, btree or lock
// record, and so no full-page image), while everything else a statement does stays: the xid
// is assigned by the first update, tuples are checked against the CLOG, snapshots are taken,
// and the commit writes its COMMIT record and sets the CLOG status. RecordTransactionCommit
// (xact.c) flushes only when the transaction wrote WAL before its commit record (wrote_xlog =
// XactLastRecEnd != 0) and synchronous_commit is on; a transaction that touched only
// unlogged tables takes XLogSetAsyncXactLSN's path whatever synchronous_commit says, so the
// WAL writer writes its commit record (commit() below decides by the transaction's WAL bytes
// before the commit, the same test). Departure: in PostgreSQL the one transaction in 32,768
// that extends the CLOG writes CLOG_ZEROPAGE before its commit and so does flush; the model
// writes no such record (core/clog/clog.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "core/aligned_array.h"
#include "core/clog/clog.h"
#include "core/clog/proc_array.h"
#include "core/clog/xid_lock_table.h"
#include "core/platform/platform.h"
#include "core/platform/sim.h"
#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"
#include "core/wal/wal.h"
#include "core/cell/cell.h"
#include "core/cell/full_page_images.h"
#include "core/cell/row_locks.h"
#include "core/cell/spec.h"
#include "core/cell/window.h"

namespace walbench {

// The message of emit_message's record_size n: n bytes, at least the 10 the tag needs (format.h
// "The tag"). Its record, format.h's message_record_size, is PG 15's
// pg_logical_emit_message(true, 'test', repeat('0', n)) (measured with pg_waldump: 16 -> 71,
// 226 -> 281, 256 -> 314). The COMMIT is format.h's commit_record_size: PG 15's 34 B (+ 8 + 4
// per subxact) plus the 10-byte tag.
constexpr uint32_t emit_message_size(uint32_t n) { return std::max(n, kMinMessageSize); }
constexpr uint32_t emit_message_record_size(uint32_t n) {
  return message_record_size(emit_message_size(n));
}

// pgbench's records (PROTOCOLS.md section 7, PG 15 pg_waldump, steady state).
constexpr uint32_t kHeapHotUpdateSize = 72;    // Heap/HOT_UPDATE
constexpr uint32_t kHeapUpdateSize = 180;      // Heap/UPDATE (non-HOT)
constexpr uint32_t kHeapInsertSize = 80;       // Heap/INSERT into pgbench_history
constexpr uint32_t kHeapLockSize = 59;         // Heap/LOCK (SELECT ... FOR UPDATE, EvalPlanQual)
constexpr uint32_t kHeap2PruneSize = 68;       // Heap2/PRUNE
constexpr uint32_t kBtreeInsertLeafSize = 64;  // Btree/INSERT_LEAF
constexpr uint32_t kMaxPgbenchRecordSize = kHeapUpdateSize;
// Info bytes as PostgreSQL's (heapam_xlog.h, nbtxlog.h); PRUNE is a Heap2 record.
constexpr uint8_t kInfoHeapInsert = 0x00;
constexpr uint8_t kInfoHeapUpdate = 0x20;
constexpr uint8_t kInfoHeapHotUpdate = 0x40;
constexpr uint8_t kInfoHeapLock = 0x60;
constexpr uint8_t kInfoHeap2Prune = 0x10;
constexpr uint8_t kInfoBtreeInsertLeaf = 0x00;
// The statement mix (ours; see the header): per mille.
constexpr uint32_t kPrunePermille = 600;        // accounts update preceded by a PRUNE
constexpr uint32_t kNonHotPermille = 300;       // accounts update is not HOT
constexpr uint32_t kSavepoints = 3;             // savepoints workload: subtransactions per txn
// The rows the savepoints workload locks inside its subtransactions, in order.
constexpr PgbenchTable kSavepointTables[kSavepoints] = {PgbenchTable::kTellers,
                                                        PgbenchTable::kBranches,
                                                        PgbenchTable::kAccounts};

enum class WorkloadKind { kEmitMessage, kSimpleUpdate, kTpcbLike, kSavepoints };
// NB: the names must match harness/config.cc (workload.name) and harness/list.cc.
inline WorkloadKind parse_workload(const std::string& name) {
  if (name == "emit_message") return WorkloadKind::kEmitMessage;
  if (name == "simple_update") return WorkloadKind::kSimpleUpdate;
  if (name == "tpcb_like") return WorkloadKind::kTpcbLike;
  if (name == "savepoints") return WorkloadKind::kSavepoints;
  throw std::invalid_argument("unknown workload \"" + name + "\"");
}

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

// What WalCell needs of the CLOG of a transactional cell (NB: strategies/clog_choice.h's
// ClogChoice, the one make_cell.h passes, must satisfy it): built from the cell's clog section
// over the cell's procs; the SLRU itself (xid assignment extends it, visibility checks read it,
// the verifier reads its image); the commit of a transaction tree (TransactionIdCommitTree, or
// TransactionIdAsyncCommitTree with lsn = the commit record's end); its counters for
// model_stats(), callable while clients run.
template <class C, class P>
concept CellClog = std::constructible_from<C, const ClogSpec&, ProcTable<P>&> &&
                   requires(C& c, const C& cc, Proc<P>& me, Xid xid, std::span<const Xid> subxids,
                            Lsn lsn) {
                     { c.clog() } -> std::same_as<Clog<P>&>;
                     c.commit_tree(me, xid, subxids, lsn);
                     { cc.stats() } -> std::convertible_to<nlohmann::json>;
                   };

template <class P, class S, CellClog<P> C>
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
        workload_(parse_workload(spec.workload.name)),
        xid_gen_(procs_, Xid{kFirstNormalXid.value + spec.clog.xid_history}),
        per_client_(spec.clients) {
    const ProcArrayMode pa_mode = parse_procarray_mode(spec.clog.procarray);
    seed_ = seed;
    if (workload_ != WorkloadKind::kEmitMessage && !spec.workload.transactional)
      throw std::invalid_argument("workload " + spec.workload.name + " is always transactional");
    if (spec.workload.transactional && !private_) {
      clog_ = std::make_unique<C>(spec.clog, procs_);
      if (pa_mode != ProcArrayMode::kOff)
        proc_array_ = std::make_unique<ProcArray<P>>(procs_, clients_, pa_mode,
                                                     parse_snapshot_form(spec.clog.snapshot),
                                                     &xid_gen_.variable_cache());
      if (spec.clog.xid_locks) xid_locks_ = std::make_unique<XidLockTable<P>>(procs_, clients_);
    }
    if (spec.workload.transactional && private_) {
      // ideal: each client assigns xids from its own counter into its own CLOG (the same work,
      // no lock contended), with its share of clog_buffers (at least 4).
      ClogSpec own = spec.clog;
      own.clog_buffers = std::min(spec.clog.clog_buffers,
                                  std::max(4u, (spec.clog.clog_buffers + clients_ - 1) / clients_));
      for (uint32_t c = 0; c < clients_; ++c)
        private_xacts_.push_back({std::make_unique<XidGen<P>>(
                                      procs_, Xid{kFirstNormalXid.value + own.xid_history}),
                                  std::make_unique<C>(own, procs_)});
    }
    const uint32_t max_len =
        workload_ == WorkloadKind::kEmitMessage
            ? std::max(emit_message_record_size(max_message_size(spec.workload.record_size)),
                       commit_record_size(0))
            : std::max(kMaxPgbenchRecordSize + (spec.workload.full_page_writes
                                                     ? 2 * full_page_image_bytes(PgbenchTable::kAccounts)
                                                     : 0),
                       commit_record_size(kSavepoints));
    if (!private_ && (workload_ == WorkloadKind::kTpcbLike || workload_ == WorkloadKind::kSavepoints))
      row_locks_ = std::make_unique<PgbenchRowLocks<P>>(procs_, clients_, spec.workload.scale);
    if (row_locks_ && proc_array_) proc_array_->keep_snapshots();  // for TM_Updated (row_locks.h)
    for (uint32_t i = 0; i < kNumPgbenchTables; ++i) {
      table_pages_[i] = static_cast<double>(
          pgbench_table_pages(static_cast<PgbenchTable>(i), spec.workload.scale));
      page_stamp_age_[i] = page_stamp_age(workload_, static_cast<PgbenchTable>(i), spec.workload.scale);
    }
    // Private streams (ideal, strategies/ideal/ideal.h): a small ring each, one device under
    // all of them (group fsync), and the writer's latch threshold split between them.
    const uint32_t streams = private_ ? clients_ : 1;
    const uint32_t ring_pages =
        private_ ? private_ring_pages(spec.wal.wal_buffers, clients_, max_len, geom_)
                 : spec.wal.wal_buffers;
    const uint32_t flush_after =
        private_ && spec.commit.wal_writer_flush_after > 0
            ? (spec.commit.wal_writer_flush_after + clients_ - 1) / clients_
            : spec.commit.wal_writer_flush_after;
    if (private_) device_ = std::make_unique<DeviceSync<P>>(procs_);
    for (uint32_t s = 0; s < streams; ++s) {
      Stream st;
      if (spec.wal.storage == "file") {
        st.dir = std::make_unique<ScratchDir>(
            spec.wal.path, "walbench-" + std::to_string(::getpid()) + "-cell" +
                               std::to_string(spec.index) + "-" + std::to_string(seed) + "-s" +
                               std::to_string(s));
        st.storage = make_file_storage(geom_, st.dir->path(), spec.wal.fsync);
      } else {
        // Bounded memory whatever the run's length; the verifier checks the WAL as it is written.
        // ideal's private streams share wal.memory_mb (at least 256 KiB each).
        const uint64_t ring =
            std::max<uint64_t>(uint64_t{256} << 10, (uint64_t{spec.wal.memory_mb} << 20) / streams);
        auto ring_storage = make_ring_storage(geom_, ring, /*reader=*/spec.run.verify);
        if (spec.run.verify)
          st.verifier = std::make_unique<StreamingVerifier>(
              *ring_storage, geom_, geom_.bytepos_to_lsn(BytePos{0}), clients_);
        st.storage = std::move(ring_storage);
      }
      st.wal = std::make_unique<WalT>(geom_, ring_pages, *st.storage, procs_, args...);
      st.wal->set_fsync(spec.wal.fsync);
      st.wal->set_writer_flush_after(flush_after);
      st.wal->set_device(device_.get());
      streams_.push_back(std::move(st));
    }
    for (auto& c : per_client_) c.buffer = make_aligned_array<uint8_t>(max_len, kRangeAlign);
    // C4 (core/clog/clog.h): a CLOG page with async commits is written only after WAL is flushed
    // up to them. Private streams (ideal) have no single LSN order: commits there pass no LSN.
    if (clog_ && !private_) clog_->clog().set_flush_hook(&clog_flush_hook, this);
    // On a simulated platform the WAL writer is a fiber that drive() spawns.
    if (!runs_in_virtual_time<P>()) writer_ = std::thread([this] { wal_writer_main(); });
  }

  // Pages in each private stream's ring: at least twice the stream's share of wal_buffers (the
  // shared ring's capacity, with room for one client running ahead of the others), PostgreSQL's
  // minimum of 4, and enough that the longest record fits without evicting its own pages; never
  // more than wal_buffers. Memory: at most max(2 x wal_buffers, clients x max(4, record pages))
  // pages, not clients x wal_buffers.
  static uint32_t private_ring_pages(uint32_t wal_buffers, uint32_t clients, uint32_t max_len,
                                     const WalGeometry& g) {
    const uint64_t share = 2 * ((uint64_t{wal_buffers} + clients - 1) / clients);
    const uint64_t usable = g.page_size - WalGeometry::kLongHeader;
    const uint64_t record_pages = (max_align(max_len) + usable - 1) / usable + 1;
    const uint64_t pages = std::max<uint64_t>({4, share, record_pages});
    return static_cast<uint32_t>(std::min<uint64_t>(pages, wal_buffers));
  }

  ~WalCell() override { stop_writer(); }

  void client_main(uint32_t client, RunControl& ctl) override {
    measuring_flag_.store(&ctl.measuring, std::memory_order_release);  // for the WAL writer
    switch (workload_) {
      case WorkloadKind::kEmitMessage: run_loop<WorkloadKind::kEmitMessage>(client, ctl); break;
      case WorkloadKind::kSimpleUpdate: run_loop<WorkloadKind::kSimpleUpdate>(client, ctl); break;
      case WorkloadKind::kTpcbLike: run_loop<WorkloadKind::kTpcbLike>(client, ctl); break;
      case WorkloadKind::kSavepoints: run_loop<WorkloadKind::kSavepoints>(client, ctl); break;
    }
    if (driver_links_ != nullptr) {  // the session ends: the driver thread returns
      DriverLink& d = driver_links_[client];
      d.session_over = true;
      d.to_driver.post();
    }
  }

  WaitEvent wait_event(uint32_t client) const override {
    return static_cast<WaitEvent>(
        procs_[static_cast<int32_t>(client)].wait_event.load(std::memory_order_relaxed));
  }

  bool drives_itself() const override { return runs_in_virtual_time<P>(); }

  // One repetition on the simulated machine: clients (and the WAL writer) are fibers; warm-up,
  // the timed window, progress lines and wait-event samples happen at exact virtual instants.
  DrivenRun drive(RunControl& ctl, const RunSpec& rs) override {
    DrivenRun out;
    if constexpr (runs_in_virtual_time<P>()) {
      nlohmann::json machine = spec_.platform.sim;
      machine["kind"] = "sim";
      const SimConfig cfg = SimConfig::from_json(machine, "/platform");
      const uint32_t n = clients_;
      // Outlives the simulation, whose fibers wait on them.
      std::unique_ptr<DriverLink[]> links;
      if (driver_ns_ > 0) links = std::make_unique<DriverLink[]>(n);
      driver_links_ = links.get();
      struct ForgetLinks {  // before `links` goes, however this scope is left
        DriverLink*& links;
        ~ForgetLinks() { links = nullptr; }
      } forget_links{driver_links_};
      Simulation sim(cfg, seed_);
      if (spec_.top_lines > 0) sim.keep_line_stats();
      std::vector<Simulation::LineReport> lines_at_open, lines_at_close;
      measuring_flag_.store(&ctl.measuring, std::memory_order_release);
      for (uint32_t i = 0; i < n; ++i)
        sim.spawn([this, &ctl, i] { client_main(i, ctl); }, "client " + std::to_string(i));
      sim.spawn([this] { wal_writer_main(); }, "walwriter");
      if (links)  // fibers n + 1 ... 2n: client i's driver is fiber n + 1 + i
        for (uint32_t i = 0; i < n; ++i)
          sim.spawn([this, i] { driver_main(i); }, "driver " + std::to_string(i),
                    /*keeps_working_set=*/false);
      sim.set_describe_wait([this, n](size_t f) -> std::string {
        if (f < n) return wait_event_name(wait_event(static_cast<uint32_t>(f)));
        if (f == n) return "WAL writer";
        return "driver of client " + std::to_string(f - n - 1) + " (waits for its result)";
      });
      auto ns = [](double s) { return static_cast<uint64_t>(s * 1e9 + 0.5); };
      const uint64_t warm = ns(rs.warmup_s), window = std::max<uint64_t>(ns(rs.duration_s), 1);
      const uint64_t end = warm + window;
      auto snapshot = [&](std::vector<uint64_t>& t, std::vector<uint64_t>& b) {
        t.resize(n);
        b.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
          t[i] = ctl.counters[i].txns.load(std::memory_order_relaxed);
          b[i] = ctl.counters[i].wal_bytes.load(std::memory_order_relaxed);
        }
      };
      SimCounters sim_at_open;
      sim.at(warm, [&] {
        snapshot(out.txns0, out.bytes0);
        out.model_at_open = model_stats();
        sim_at_open = sim.counters();
        if (spec_.top_lines > 0) lines_at_open = sim.line_stats();
        ctl.measuring.store(true, std::memory_order_relaxed);
      });
      // pg_stat_activity-like sampling: 500 samples spread over the timed window.
      const uint64_t sample_step = std::max<uint64_t>(window / 500, 1);
      for (uint64_t t = warm; t < end; t += sample_step)
        sim.at(t, [&] {
          for (uint32_t i = 0; i < n; ++i)
            ++out.wait_samples[std::min(static_cast<size_t>(wait_event(i)), kNumWaitEvents)];
        });
      ProgressMeter meter(n);
      uint64_t last_t = 0;
      {  // progress points: always recorded (the trust warnings read them)
        const uint64_t step = std::max<uint64_t>(ns(progress_step_s(rs)), 1);
        for (uint64_t t = step; t <= end; t += step)
          sim.at(t, [&, t] {
            const ProgressPoint p = meter.point(ctl.counters, static_cast<double>(t - last_t) / 1e9);
            last_t = t;
            out.progress.push_back({static_cast<double>(t) / 1e9, p.tps, p.lat_ms, p.stddev_ms});
            if (ctl.on_progress) ctl.on_progress(static_cast<double>(t) / 1e9, p.tps, p.lat_ms, p.stddev_ms);
          });
      }
      SimCounters sim_at_close;
      sim.request_stop_at(end, [&] {
        snapshot(out.txns1, out.bytes1);
        out.model_at_close = model_stats();
        sim_at_close = sim.counters();
        if (spec_.top_lines > 0) lines_at_close = sim.line_stats();
        ctl.measuring.store(false, std::memory_order_relaxed);
        ctl.stop.store(true, std::memory_order_relaxed);
        writer_stop_.store(true, std::memory_order_relaxed);
        out.measured = true;
      });
      // The watchdog: clients must return within watchdog_s (at least 1 s) of virtual time
      // after stop; a deadlock ends the run at once with every fiber's wait state.
      const SimOutcome o = sim.run(end + ns(std::max(rs.watchdog_s, 1.0)));
      if (!o.finished()) {
        out.error = "simulation: " + o.message();
        sim.cancel_unfinished();
      }
      out.window_s = static_cast<double>(window) / 1e9;
      // The simulator's counters over the timed window; the run's own length (warm-up, window,
      // and the drain after stop) separately.
      out.platform_stats = {
          {"sim", out.measured ? counter_delta(sim_at_close.to_json(), sim_at_open.to_json())
                               : nlohmann::json(nullptr)},
          {"virtual_time_s", static_cast<double>(o.now_ns) / 1e9}};
      if (spec_.top_lines > 0 && out.measured) {
        uint64_t txns = 0;
        for (uint32_t i = 0; i < n; ++i) txns += out.txns1[i] - out.txns0[i];
        out.platform_stats["top_lines"] =
            Simulation::top_lines_json(lines_at_open, lines_at_close, spec_.top_lines, txns);
      }
    } else {
      (void)ctl;
      (void)rs;
    }
    return out;
  }

  void finish() override {
    stop_writer();  // then the end-of-run flush below, one stream at a time
    Proc<P>& me = procs_[static_cast<int32_t>(clients_)];
    for (auto& st : streams_) {
      const Lsn end = geom_.bytepos_to_end_lsn(st.wal->strategy.reserved_end());
      st.wal->write_upto(me, end, /*flush_too=*/true);
    }
  }

  // WAL (every stream) and, after a transactional workload, the CLOG; the first error wins.
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
      VerifyResult r = streams_[s].verifier ? streams_[s].verifier->finish(ex)
                                            : verify_wal(*streams_[s].storage, geom_, ex);
      total.records += r.records;
      total.bytes += r.bytes;
      for (const auto& [type, tally] : r.record_types) {
        total.record_types[type].count += tally.count;
        total.record_types[type].bytes += tally.bytes;
      }
      total.streamed = total.streamed || r.streamed;  // private streams: the sum of the rings
      total.ring_bytes += r.ring_bytes;
      total.max_lag_bytes = std::max(total.max_lag_bytes, r.max_lag_bytes);
      total.writer_waits += r.writer_waits;
      total.writer_wait_ms += r.writer_wait_ms;
      total.host_timing = !runs_in_virtual_time<P>();
      if (!r.ok && total.ok) {
        total.ok = false;
        total.error = private_ ? "stream of client " + std::to_string(s) + ": " + r.error : r.error;
      }
    }
    if (clog_) {
      ClogExpect ex;
      ex.first = clog_->clog().first();
      ex.next = xid_gen_.next();
      for (const auto& c : per_client_) {
        ex.assigned += c.xids;
        ex.top_level += c.top_level;
      }
      VerifyResult r = verify_clog(clog_->clog().image(), ex);
      if (r.ok && proc_array_) {  // A1: every top-level xid cleared once, none left running
        const uint64_t cleared = proc_array_->totals().cleared;
        if (cleared != ex.top_level) {
          r.ok = false;
          r.error = "procarray: " + std::to_string(cleared) + " xids cleared; " +
                    std::to_string(ex.top_level) + " transactions committed";
        }
        for (uint32_t c = 0; r.ok && c < clients_; ++c)
          if (proc_array_->advertised_xid(c) != 0) {
            r.ok = false;
            r.error = "procarray: client " + std::to_string(c) + " still has an xid after the run";
          }
      }
      if (r.ok && xid_locks_ &&  // X3: every transaction ended, so every xid lock was released
          (xid_locks_->held() != 0 || xid_locks_->lock_entries() != 0 ||
           xid_locks_->proclock_entries() != 0)) {
        r.ok = false;
        r.error = "xid locks: " + std::to_string(xid_locks_->held()) + " still held, " +
                  std::to_string(xid_locks_->lock_entries()) + " LOCK and " +
                  std::to_string(xid_locks_->proclock_entries()) + " PROCLOCK entries left";
      }
      total.clog_checked = true;
      total.clog_xids = r.clog_xids;
      total.clog_committed = r.clog_committed;
      total.clog_top_level = r.clog_top_level;
      if (!r.ok && total.ok) {
        total.ok = false;
        total.error = r.error;
      }
    }
    for (uint32_t c = 0; c < private_xacts_.size(); ++c) {  // ideal: one CLOG per client
      ClogExpect ex;
      ex.first = private_xacts_[c].clog->clog().first();
      ex.next = private_xacts_[c].xids->next();
      ex.assigned = per_client_[c].xids;
      ex.top_level = per_client_[c].top_level;
      const VerifyResult r = verify_clog(private_xacts_[c].clog->clog().image(), ex);
      total.clog_checked = true;
      total.clog_xids += r.clog_xids;
      total.clog_committed += r.clog_committed;
      total.clog_top_level += r.clog_top_level;
      if (!r.ok && total.ok) {
        total.ok = false;
        total.error = "CLOG of client " + std::to_string(c) + ": " + r.error;
      }
    }
    return total;
  }

  nlohmann::json lock_stats() const override {
    ProcStats t = writer_window_.locks;
    for (const auto& c : per_client_) t.add(c.window.locks);
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

  // Lock-wait tracing (harness/trace.h): the clients, then the WAL writer.
  std::vector<std::string> trace_tracks() const override {
    std::vector<std::string> names;
    for (uint32_t i = 0; i < clients_; ++i) names.push_back("client " + std::to_string(i));
    names.push_back("WAL writer");
    return names;
  }
  void set_tracers(const std::vector<ClientTrace*>& tracers) override {
    for (uint32_t i = 0; i < procs_.size(); ++i)
      procs_[static_cast<int32_t>(i)].tracer = i < tracers.size() ? tracers[i] : nullptr;
  }

  WindowTotals window_totals() const override {
    WindowTotals w;
    for (const auto& c : per_client_) {
      w.txns += c.window.totals.txns;
      w.records += c.window.totals.records;
      w.wal_bytes += c.window.totals.wal_bytes;
      w.xids += c.window.totals.xids;
    }
    return w;
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
      sum.pages_preinitialised += c.pages_preinitialised;
      sum.flush_calls += c.flush_calls;
      storage_bytes += st.storage->bytes_written();
    }
    // Private streams fsync through the shared device (DeviceSync), counted there.
    if (device_) sum.fsyncs += device_->syncs();
    nlohmann::json j = {{"writes", sum.writes},
            {"fsyncs", sum.fsyncs},
            {"wal_buffers_full", sum.wal_buffers_full},
            {"pages_initialised", sum.pages_initialised},
            {"pages_preinitialised", sum.pages_preinitialised},
            {"flushes", sum.flush_calls},
            {"storage_bytes", storage_bytes},
            {"streams", streams_.size()},
            {"ring_pages", streams_.front().wal->num_buffers()}};
    // Transaction ids are counted by the clients over the window (window_totals()).
    if (clog_) j["clog"] = clog_->stats();
    if (proc_array_) j["procarray"] = proc_array_->stats();
    if (xid_locks_) j["xid_locks"] = xid_locks_->stats();
    if (workload_ != WorkloadKind::kEmitMessage && spec_.workload.full_page_writes) {
      uint64_t images = 0, image_bytes = 0;
      for (const auto& c : per_client_) {
        images += c.images.load(std::memory_order_relaxed);
        image_bytes += c.image_bytes.load(std::memory_order_relaxed);
      }
      j["full_page_images"] = images;
      j["full_page_image_bytes"] = image_bytes;
    }
    if (row_locks_) {
      uint64_t waits = 0;
      uint64_t relocks = 0;
      for (const auto& c : per_client_) {
        waits += c.row_waits.load(std::memory_order_relaxed);
        relocks += c.row_relocks.load(std::memory_order_relaxed);
      }
      j["row_lock_waits"] = waits;
      j["row_relocks"] = relocks;
    }
    if (!private_xacts_.empty()) {  // ideal: the per-client CLOGs' counters summed
      nlohmann::json clog = nlohmann::json::object();
      for (const PrivateXact& x : private_xacts_) {
        const nlohmann::json stats = x.clog->stats();
        for (const auto& [k, v] : stats.items()) {
          if (v.is_number_unsigned())
            clog[k] = clog.value(k, uint64_t{0}) + v.template get<uint64_t>();
          else if (!clog.contains(k))
            clog[k] = v;
        }
      }
      j["clog"] = clog;
      j["clogs"] = private_xacts_.size();
    }
    return j;
  }

 private:
  struct Stream {
    std::unique_ptr<ScratchDir> dir;
    std::unique_ptr<Storage> storage;
    std::unique_ptr<WalT> wal;
    std::unique_ptr<StreamingVerifier> verifier;  // memory storage with run.verify; reads storage
  };
  // A client's (or the WAL writer's) part of the timed window (WindowTotals): opened and closed
  // by its owner at its own transaction (loop) boundaries; read after the run.
  struct Window {
    bool open = false;
    ProcStats locks_at_open;
    uint64_t records_at_open = 0;
    uint64_t xids_at_open = 0;
    ProcStats locks;      // acquired inside the window
    WindowTotals totals;  // txns and wal_bytes counted by the loop; records and xids at close
  };
  // Owner-only; read after the run.
  struct alignas(64) PerClient {
    AlignedArray<uint8_t> buffer;  // record under construction (write_group's leader reads it)
    uint64_t records = 0;               // records inserted = next sequence number
    uint64_t xids = 0;                  // xids assigned (top-level and subtransactions)
    uint64_t top_level = 0;             // of which top-level
    Window window;
    // Full-page images: this client's modifications of each pgbench table (written by the
    // owner only, summed by every client for the tables' rates), its latest estimate of each
    // table's rate, and the images written (model_stats reads them while clients run).
    std::atomic<uint64_t> touches[kNumPgbenchTables] = {};
    double table_rate[kNumPgbenchTables] = {};
    std::atomic<uint64_t> images{0};
    std::atomic<uint64_t> image_bytes{0};
    std::atomic<uint64_t> row_waits{0};  // row changes that waited (row_locks.h), owner-written
    std::atomic<uint64_t> row_relocks{0};  // of the others, TM_Updated re-locks, owner-written
  };

  // Opens or closes w when the runner's `measuring` flag changed since the owner last looked.
  static void window_edge(Window& w, const Proc<P>& me, const PerClient* pc, bool measuring) {
    if (measuring == w.open) return;
    w.open = measuring;
    if (measuring) {
      w.locks_at_open = me.stats;
      if (pc) {
        w.records_at_open = pc->records;
        w.xids_at_open = pc->xids;
      }
    } else {
      w.locks.add_delta(me.stats, w.locks_at_open);
      if (pc) {
        w.totals.records += pc->records - w.records_at_open;
        w.totals.xids += pc->xids - w.xids_at_open;
      }
    }
  }

  // One client's transaction in progress.
  struct Txn {
    Txn(Proc<P>& m, WalT& w, PerClient& c, uint64_t overhead, double jitter)
        : me(m), wal(w), pc(c), overhead_ns(overhead),
          jitter_span_ns(static_cast<uint64_t>(2.0 * jitter * static_cast<double>(overhead))) {}
    Proc<P>& me;
    WalT& wal;
    PerClient& pc;
    uint64_t overhead_ns;
    uint64_t jitter_span_ns;  // statement work is overhead_ns - span/2 + uniform[0, span]
    uint64_t bytes = 0;       // reserved WAL bytes of this transaction
    Xid xid = kInvalidXid;    // top-level xid once assigned
    uint32_t nsub = 0;
    Xid subxids[kSavepoints]; // ascending: assigned in order from one counter
  };

  // ---- The workloads (the header says what each is). ----

  template <WorkloadKind W>
  void run_loop(uint32_t client, RunControl& ctl) {
    Txn t{procs_[static_cast<int32_t>(client)], *streams_[private_ ? client : 0].wal,
          per_client_[client], static_cast<uint64_t>(spec_.workload.client_overhead_us * 1000.0),
          spec_.workload.client_overhead_jitter};
    ClientCounters& counters = ctl.counters[client];
    Window& window = t.pc.window;
    // One clock read per transaction: its end is the next one's start (nothing between them
    // takes time on the simulated platform; on real threads, the loop's own bookkeeping).
    uint64_t t0 = P::now_ns();
    uint64_t unset = kNoStart;  // the first client to start opens the rate's clock
    run_start_ns_.compare_exchange_strong(unset, t0, std::memory_order_relaxed);
    while (!ctl.stop.load(std::memory_order_relaxed)) {
      window_edge(window, t.me, &t.pc, ctl.measuring.load(std::memory_order_relaxed));
      t.bytes = 0;
      if constexpr (W == WorkloadKind::kEmitMessage) {
        emit_message_txn(t);
      } else if constexpr (W == WorkloadKind::kSimpleUpdate) {
        statement(t);  // BEGIN
        statement(t, true);  // UPDATE pgbench_accounts
        accounts_update(t);
        statement(t, true);  // SELECT abalance
        statement(t, true);  // INSERT INTO pgbench_history
        table_record(t, kRmHeap, kInfoHeapInsert, kHeapInsertSize, t.xid,
                     page_image(t, PgbenchTable::kHistory));
        statement(t);  // END
        commit(t);
      } else if constexpr (W == WorkloadKind::kTpcbLike) {
        statement(t);  // BEGIN
        statement(t, true);  // UPDATE pgbench_accounts
        accounts_update(t);
        statement(t, true);  // SELECT abalance
        statement(t, true);  // UPDATE pgbench_tellers
        tuple_check(t, PgbenchTable::kTellers);
        update_row(t, PgbenchTable::kTellers);
        statement(t, true);  // UPDATE pgbench_branches
        tuple_check(t, PgbenchTable::kBranches);
        update_row(t, PgbenchTable::kBranches);
        statement(t, true);  // INSERT INTO pgbench_history
        table_record(t, kRmHeap, kInfoHeapInsert, kHeapInsertSize, t.xid,
                     page_image(t, PgbenchTable::kHistory));
        statement(t);  // END
        commit(t);
      } else {
        static_assert(W == WorkloadKind::kSavepoints);
        statement(t);  // BEGIN
        statement(t, true);  // SELECT ... FROM pgbench_accounts FOR UPDATE
        tuple_check(t, PgbenchTable::kAccounts);
        assign_top(t);
        table_record(t, kRmHeap, kInfoHeapLock, kHeapLockSize, t.xid,
                     page_image(t, PgbenchTable::kAccounts));
        for (uint32_t i = 0; i < kSavepoints; ++i) {
          statement(t);  // SAVEPOINT s<i+1>
          statement(t, true);  // SELECT ... FOR UPDATE, inside the subtransaction
          tuple_check(t, kSavepointTables[i]);
          const Xid sub = assign_sub(t);
          lock_row(t, kSavepointTables[i], [&] {
            table_record(t, kRmHeap, kInfoHeapLock, kHeapLockSize, sub,
                         page_image(t, kSavepointTables[i]));
          });
        }
        statement(t);  // END
        commit(t);
      }
      const uint64_t t1 = P::now_ns();
      counters.count_txn(t.bytes, t1 - t0, ctl.measuring.load(std::memory_order_relaxed));
      if (window.open) {
        ++window.totals.txns;
        window.totals.wal_bytes += t.bytes;
      }
      t0 = t1;
    }
    window_edge(window, t.me, &t.pc, false);
  }

  void emit_message_txn(Txn& t) {
    const WorkloadSpec& w = spec_.workload;
    statement(t, true);
    if (w.transactional) assign_top(t);
    const uint32_t n = draw_size(w.record_size, t.me);
    if (w.payload_ns_per_byte > 0) P::work(static_cast<uint64_t>(w.payload_ns_per_byte * n));
    const uint32_t len = emit_message_record_size(n);
    const uint32_t crc = build_message_record(t.pc.buffer.get(), emit_message_size(n),
                                              w.transactional, t.xid, t.me.id, t.pc.records++);
    insert_built(t, len, crc);
    if (w.transactional) commit(t);
  }

  // UPDATE pgbench_accounts: maybe a PRUNE of the page first, then a HOT or a non-HOT update.
  // The first record on the row's page carries its image; a non-HOT update's new version goes
  // to another accounts page (its second block reference) and its key to a pkey leaf.
  void accounts_update(Txn& t) {
    tuple_check(t, PgbenchTable::kAccounts);  // the row found by the index scan
    uint32_t image = page_image(t, PgbenchTable::kAccounts);
    if (chance(t, kPrunePermille)) {
      table_record(t, kRmHeap2, kInfoHeap2Prune, kHeap2PruneSize, t.xid, image);
      image = 0;
    }
    if (t.xid == kInvalidXid) assign_top(t);
    if (chance(t, kNonHotPermille)) {
      image += page_image(t, PgbenchTable::kAccounts);
      table_record(t, kRmHeap, kInfoHeapUpdate, kHeapUpdateSize, t.xid, image);
      table_record(t, kRmBtree, kInfoBtreeInsertLeaf, kBtreeInsertLeafSize, t.xid,
                   page_image(t, PgbenchTable::kAccountsPkey));
    } else {
      table_record(t, kRmHeap, kInfoHeapHotUpdate, kHeapHotUpdateSize, t.xid, image);
    }
  }

  // UPDATE pgbench_tellers / pgbench_branches (tpcb_like): a HOT update of a row pgbench drew,
  // under the row locks (core/cell/row_locks.h): when the row's previous updater was still in
  // progress, or ended after the statement's snapshot, READ COMMITTED locks the newest version
  // (Heap/LOCK) before updating it. The first record on the row's page carries its image.
  void update_row(Txn& t, PgbenchTable table) {
    auto change = [&](bool relock) {
      uint32_t image = page_image(t, table);
      if (relock) {
        table_record(t, kRmHeap, kInfoHeapLock, kHeapLockSize, t.xid, image);
        image = 0;
      }
      table_record(t, kRmHeap, kInfoHeapHotUpdate, kHeapHotUpdateSize, t.xid, image);
    };
    change_row(t, table, /*after_updates=*/true, change);
  }

  // A change of a pgbench row under the row locks: change(relock) runs under its page's content
  // lock; without row locks (ideal) or on an accounts row (not locked) it runs at once. A
  // change that waited at least once is counted (one Heap/LOCK in tpcb_like however many
  // waits), and one that re-locked without a wait (TM_Updated against the statement's last
  // snapshot; none without a ProcArray model, which takes no snapshots) is counted apart.
  // `after_updates`: the row's earlier xmax are updaters (tpcb_like's UPDATEs), whose ended
  // transaction an older snapshot does not see (TM_Updated); false where every earlier xmax is
  // a lock only (savepoints' FOR UPDATE: an ended locker's xmax is HEAP_XMAX_LOCK_ONLY, and
  // heap_lock_tuple returns TM_Ok whatever the snapshot).
  template <class Change>
  void change_row(Txn& t, PgbenchTable table, bool after_updates, Change&& change) {
    if (!row_locks_ || table == PgbenchTable::kAccounts) return change(false);
    const uint64_t row = t.me.next_random() % row_locks_->rows(table);
    const auto visible = [&](Xid updater) {
      return !after_updates || !proc_array_ || proc_array_->xid_visible(t.me, updater);
    };
    const auto met = row_locks_->change_row(t.me, table, row, t.xid, change, visible);
    if (met.waits != 0) t.pc.row_waits.fetch_add(1, std::memory_order_relaxed);
    if (met.relocked) t.pc.row_relocks.fetch_add(1, std::memory_order_relaxed);
  }

  // SELECT ... FOR UPDATE (savepoints): lock() writes the row's Heap/LOCK under the row locks;
  // a lock that waited writes nothing more. pgbench_accounts rows are not locked
  // (core/cell/row_locks.h DEPARTURES).
  template <class Lock>
  void lock_row(Txn& t, PgbenchTable table, Lock&& lock) {
    change_row(t, table, /*after_updates=*/false, [&](bool) { lock(); });
  }

  // A modification of a page of `table`: the bytes its full-page image adds to the record, or
  // 0 (FULL-PAGE IMAGES, core/cell/full_page_images.h: p(N, r, T) with r = every client's
  // touches of the table so far over the time since the first client started, re-read at each
  // of the first kRateRefresh own touches and every kRateRefresh after; before any estimate
  // (the first touch) p is 1). Each client's count is its own (relaxed, owner-written), so the
  // sum costs no shared write; it is model bookkeeping, outside P like the per-client
  // statistics.
  static constexpr uint64_t kRateRefresh = 16;
  static constexpr uint64_t kNoStart = ~uint64_t{0};
  uint32_t page_image(Txn& t, PgbenchTable table) {
    if (!spec_.workload.full_page_writes || spec_.workload.unlogged_tables) return 0;
    const auto i = static_cast<uint32_t>(table);
    const uint64_t own = t.pc.touches[i].load(std::memory_order_relaxed);
    t.pc.touches[i].store(own + 1, std::memory_order_relaxed);
    if (own > 0 && (own < kRateRefresh || own % kRateRefresh == 0)) {
      uint64_t all = 0;
      for (const auto& c : per_client_) all += c.touches[i].load(std::memory_order_relaxed);
      const uint64_t elapsed_ns = P::now_ns() - run_start_ns_.load(std::memory_order_relaxed);
      if (elapsed_ns > 0)
        t.pc.table_rate[i] = static_cast<double>(all) * 1e9 / static_cast<double>(elapsed_ns);
    }
    const double p = first_touch_probability(table_pages_[i], t.pc.table_rate[i],
                                             spec_.workload.checkpoint_timeout_s);
    if (t.me.next_unit() >= p) return 0;
    const uint32_t bytes = full_page_image_bytes(table);
    t.pc.images.fetch_add(1, std::memory_order_relaxed);
    t.pc.image_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return bytes;
  }

  // ---- Transaction steps shared by the workloads. ----

  // One statement's work outside any lock: client_overhead_us, drawn with its jitter.
  static uint64_t statement_overhead_ns(Txn& t) {
    if (t.jitter_span_ns == 0) return t.overhead_ns;
    return t.overhead_ns - t.jitter_span_ns / 2 + t.me.next_random() % (t.jitter_span_ns + 1);
  }

  // THE CLIENT DRIVER (workload.driver_us > 0, simulated platform): pgbench runs a thread per
  // connection (-c N -j N) on the same machine. Per statement it takes the result off the
  // socket, builds the next query and sends it (driver_us of CPU, part of client_overhead_us),
  // while its backend blocks in the socket read (ClientRead); then the backend runs and the
  // driver blocks. So a connection's two threads alternate (at most one of them runs) and every
  // statement costs two wake-ups, each priced by the simulator as a semaphore post to a blocked
  // thread (a unix-socket send wakes the reader the same way): an idle CPU's wake-up latency,
  // a dispatch, and, on a busy machine, a turn in a run queue and a chance to preempt
  // (platform.wakeup_preemption) whoever runs there, a lock holder included. Departures: the
  // socket's bytes and the kernel's send and receive paths are in the two CPU figures; the
  // driver's own data (a few KiB of connection buffers) is left out of the working-set model
  // (sim.h "Working set": its dispatches neither refill nor evict); driver_us is per statement
  // and the same for every statement; the jitter is the backend's part alone. Each semaphore has
  // a cache line of its own, as each connection's socket has its own kernel state.
  struct DriverLink {
    alignas(64) typename P::Semaphore to_driver;   // a result (or the session's end) is there
    alignas(64) typename P::Semaphore to_backend;  // the next statement is there
    bool session_over = false;  // set by the backend before its last post (run control, not
                                // modelled memory: both fibers share one OS thread)
  };

  void driver_main(uint32_t client) {
    DriverLink& d = driver_links_[client];
    for (;;) {
      d.to_driver.wait();
      if (d.session_over) return;
      P::work(driver_ns_);
      d.to_backend.post();
    }
  }

  // One statement's client overhead, reported as Client:ClientRead (the backend between two
  // statements waits for the client's next command; the parse/plan/execute CPU time in the
  // overhead is lumped in, see the header; with a client driver, ClientRead is the wait for the
  // driver alone and the backend's part is CPU time, as pg_stat_activity shows it), then, for a
  // statement that reads or writes a table (takes_snapshot), GetSnapshotData when a ProcArray is
  // modelled, clog.snapshots_per_statement times. PostgreSQL takes two for a SELECT/INSERT/UPDATE/DELETE in READ COMMITTED, one in
  // exec_simple_query (parse analysis and planning; exec_bind_message: planning, and with
  // unnamed extended-protocol statements exec_parse_message takes a third) and a new one in
  // PortalStart (or PortalRunMulti) for execution (postgres.c explains why the first is not
  // reused: pgsql-hackers 5075D8DF.6050500@fuzzy.cz, 2012). Departure: the planning work
  // between the two is lumped into the overhead before both, so they are taken back to back
  // (in the "dense" form the second is reused whenever no transaction with an xid ended
  // between the two).
  void statement(Txn& t, bool takes_snapshot = false) {
    if (driver_links_ != nullptr && t.overhead_ns) {
      // The previous result goes to the driver, which sends the next statement back.
      DriverLink& d = driver_links_[t.me.id.value];
      t.me.set_wait(WaitEvent::kClientRead);
      d.to_driver.post();
      d.to_backend.wait();
      t.me.clear_wait();
      charge_working_set<P>();  // the backend's own code runs: sim.h "Working set"
      const uint64_t whole = statement_overhead_ns(t);
      P::work(whole > driver_ns_ ? whole - driver_ns_ : 0);
    } else {
      charge_working_set<P>();  // the backend's own code runs: sim.h "Working set"
      if (t.overhead_ns) {
        t.me.set_wait(WaitEvent::kClientRead);
        P::work(statement_overhead_ns(t));
        t.me.clear_wait();
      }
    }
    if (takes_snapshot && proc_array_)
      for (uint32_t i = 0; i < snapshots_per_statement_; ++i) proc_array_->get_snapshot(t.me);
  }

  // A visibility check of a row of `table` the statement found (HeapTupleSatisfiesMVCC /
  // ...Update on a tuple whose xmin, or a dead predecessor's xmax, another transaction
  // stamped): with probability clog.hint_bit_miss its hint bit is not set and
  // TransactionIdDidCommit asks the CLOG (TransactionIdGetStatus, control lock shared). Which
  // xid (clog.lookup_xids):
  //   "run"           uniform over those handed out since pgbench -i (the history included).
  //   "pgbench_pages" the last unhinted stamp on the row's heap page. Any visit to a page hints
  //                   the tuples it checks (SetHintBits), and a visit that prunes the page
  //                   (heap_page_prune_opt on a full page) checks every tuple on it with
  //                   HeapTupleSatisfiesVacuum; so what a visitor looks up is a stamp made since
  //                   the page's previous visit. pgbench picks rows uniformly: the visits to a
  //                   table of N pages that gets s stamps per transaction of x xids are a
  //                   geometric number of xids apart, mean N x / s (page_stamp_age_); the age is
  //                   drawn from that (as an exponential). A stamp older than pgbench -i was
  //                   hinted by its VACUUM: no lookup. Simplifications: every visit counts as
  //                   one that hints the page's stamps (in PostgreSQL only a pruning one checks
  //                   every tuple; the model prunes at kPrunePermille), one stamp per update (a
  //                   non-HOT update stamps a second page), hint bits set at once (with
  //                   asynchronous commit SetHintBits waits until the commit record is flushed),
  //                   and a lookup of an xid still running asks the CLOG (PostgreSQL's snapshot
  //                   or ProcArray answers it first; tpcb_like's tellers and branches stamps are
  //                   a mean of 10 x scale / 185 and scale / 226 xids old). (Robert Haas, pgsql-hackers "CLOG
  //                   contention", 2011-12: lookups of rows updated earlier in the run spread
  //                   over more CLOG pages than 8 buffers held; with 9.6's 128 they fit.)
  // Shared WAL only (ideal's private CLOGs see no lookups: nobody else's rows).
  void tuple_check(Txn& t, PgbenchTable table) {
    if (!clog_ || hint_miss_permille_ == 0) return;
    if (!chance(t, hint_miss_permille_)) return;
    const uint32_t first = kFirstNormalXid.value;
    const uint32_t next = xid_gen_.recent_next().value;
    if (next <= first) return;
    uint32_t x;
    if (!pgbench_pages_) {
      x = first + static_cast<uint32_t>(t.me.next_random() % (next - first));
    } else {
      const double age = -page_stamp_age_[static_cast<uint32_t>(table)] * std::log1p(-t.me.next_unit());
      if (!(age < static_cast<double>(next - first))) return;  // stamped before pgbench -i: hinted
      x = next - 1 - static_cast<uint32_t>(age);
    }
    const XidStatus status = clog_->clog().get_status(t.me, Xid{x});
    WALBENCH_CLOG_CHECK(x >= clog_->clog().first().value || status == XidStatus::kCommitted, "C7",
                        "a lookup found a history xid not COMMITTED");
  }

  // pgbench_pages: the mean age in xids of the last unhinted stamp on a row's page, per table
  // (tuple_check): the table's pages (full_page_images.h, at workload.scale) x xids per
  // transaction / stamps per transaction. Stamps: simple_update and tpcb_like update one
  // accounts row (tpcb_like also one teller and one branch), one xid each; savepoints locks two
  // accounts rows, a teller and a branch (SELECT ... FOR UPDATE sets xmax) with four xids.
  static double page_stamp_age(WorkloadKind w, PgbenchTable table, uint32_t scale) {
    const double pages = static_cast<double>(pgbench_table_pages(table, scale));
    const bool savepoints = w == WorkloadKind::kSavepoints;
    const double xids_per_txn = savepoints ? 1 + kSavepoints : 1;
    const double stamps = savepoints && table == PgbenchTable::kAccounts ? 2 : 1;
    return pages * xids_per_txn / stamps;
  }

  bool chance(Txn& t, uint32_t permille) { return t.me.next_random() % 1000 < permille; }

  void assign_top(Txn& t) {
    t.xid = xid_gen_of(t.me).assign(t.me, &clog_of(t.me).clog(), /*subtransaction=*/false,
                                    proc_array_ ? &proc_array_->xid_slot(t.me) : nullptr);
    if (xid_locks_) xid_locks_->insert(t.me, t.xid);  // XactLockTableInsert
    ++t.pc.xids;
    ++t.pc.top_level;
  }

  // AssignTransactionId for a subtransaction: the parent gets its xid first.
  Xid assign_sub(Txn& t) {
    if (t.xid == kInvalidXid) assign_top(t);
    const Xid x = xid_gen_of(t.me).assign(t.me, &clog_of(t.me).clog(), /*subtransaction=*/true,
                                          nullptr,
                                          proc_array_ ? proc_array_->subxid_status_slot(t.me) : nullptr);
    if (xid_locks_) xid_locks_->insert(t.me, x);  // XactLockTableInsert
    ++t.pc.xids;
    t.subxids[t.nsub++] = x;
    return x;
  }

  // Build (CRC before any lock) and insert one record carrying the client's next seq.
  // image: bytes of full-page images the record carries (page_image), on top of len.
  typename WalT::Inserted insert_record(Txn& t, uint8_t rmid, uint8_t info, uint32_t len, Xid xid,
                                        uint32_t image = 0) {
    len += image;
    const uint32_t crc = build_record(t.pc.buffer.get(), len, xid, rmid, info, t.me.id,
                                      t.pc.records++);
    return insert_built(t, len, crc);
  }

  // A pgbench table's change: its record, or nothing when the tables are unlogged (UNLOGGED
  // TABLES in the header).
  void table_record(Txn& t, uint8_t rmid, uint8_t info, uint32_t len, Xid xid, uint32_t image) {
    if (spec_.workload.unlogged_tables) return;
    insert_record(t, rmid, info, len, xid, image);
  }

  // Insert the record built in the client's buffer (len bytes, crc its build_*_record state).
  typename WalT::Inserted insert_built(Txn& t, uint32_t len, uint32_t crc) {
    uint8_t* buf = t.pc.buffer.get();
    charge_crc<P>(len);
    t.bytes += max_align(len);
    return t.wal.insert(t.me, buf, len, crc);
  }

  // RecordTransactionCommit + ProcArrayEndTransaction's xid part (see the header).
  void commit(Txn& t) {
    const bool wrote_xlog = t.bytes > 0;  // RecordTransactionCommit: XactLastRecEnd != 0
    const uint32_t crc = build_commit_record(t.pc.buffer.get(), t.xid,
                                             std::span<const Xid>(t.subxids, t.nsub), t.me.id,
                                             t.pc.records++);
    const auto rec = insert_built(t, commit_record_size(t.nsub), crc);
    Lsn clog_lsn = kInvalidLsn;
    if (spec_.commit.synchronous_commit && wrote_xlog) {
      t.wal.flush(t.me, rec.end);
    } else {
      if (t.wal.set_async_xact_lsn(t.me, rec.end)) set_writer_latch();
      if (!private_) clog_lsn = rec.end;
    }
    clog_of(t.me).commit_tree(t.me, t.xid, std::span<const Xid>(t.subxids, t.nsub), clog_lsn);
    if (proc_array_)  // ProcArrayEndTransaction: latestXid is the tree's largest xid
      proc_array_->end_transaction(t.me, t.nsub ? t.subxids[t.nsub - 1] : t.xid);
    else
      XidGen<P>::end_transaction(t.me);
    if (xid_locks_) xid_locks_->release_all(t.me);       // LockReleaseAll: the xid locks,
    if (row_locks_) row_locks_->end_transaction(t.me);  // and their waiters woken
    t.xid = kInvalidXid;
    t.nsub = 0;
  }

  // The client's XidGen and CLOG: the shared ones, or its own (private streams, ideal).
  XidGen<P>& xid_gen_of(const Proc<P>& me) {
    return private_ ? *private_xacts_[static_cast<uint32_t>(me.id.value)].xids : xid_gen_;
  }
  C& clog_of(const Proc<P>& me) {
    return private_ ? *private_xacts_[static_cast<uint32_t>(me.id.value)].clog : *clog_;
  }

  static void clog_flush_hook(void* ctx, Proc<P>& me, Lsn upto) {
    static_cast<WalCell*>(ctx)->streams_[0].wal->flush(me, upto);
  }

  // The WAL writer (postmaster/walwriter.c WalWriterMain): ResetLatch, one XLogBackgroundFlush
  // round (core/wal/wal.h, "THE WAL WRITER'S SIDE"), then WaitLatch for wal_writer_delay or
  // until an async commit sets the latch. The latch is a P word the writer polls while it
  // waits (every kLatchPollSimNs of virtual time, kLatchPollThreadsNs on threads), only in
  // cells where async commits can set it; otherwise it sleeps the whole delay.
  static constexpr uint64_t kLatchPollSimNs = 20'000;
  static constexpr uint64_t kLatchPollThreadsNs = 1'000'000;
  static constexpr uint64_t kStopPollNs = 5'000'000;  // how soon a sleeping writer sees stop

  void wal_writer_main() {
    Proc<P>& me = procs_[static_cast<int32_t>(clients_)];
    const uint64_t delay_ns = static_cast<uint64_t>(spec_.commit.wal_writer_delay_ms * 1e6);
    const uint32_t flush_after = spec_.commit.wal_writer_flush_after;
    const bool latch = spec_.workload.transactional &&
                       (!spec_.commit.synchronous_commit || spec_.workload.unlogged_tables);
    const uint64_t poll_ns =
        latch ? (runs_in_virtual_time<P>() ? kLatchPollSimNs : kLatchPollThreadsNs) : kStopPollNs;
    typename WalT::WriterClock clock;
    std::vector<Lsn> targets(streams_.size());  // private streams: this round's write requests
    auto measuring = [this] {
      const std::atomic<bool>* flag = measuring_flag_.load(std::memory_order_acquire);
      return flag && flag->load(std::memory_order_relaxed);
    };
    while (!writer_stop_.load(std::memory_order_relaxed)) {
      window_edge(writer_window_, me, nullptr, measuring());
      if (latch && writer_latch_.load() != 0) writer_latch_.store(0);  // ResetLatch
      if (private_)
        background_flush_private(me, clock, delay_ns, flush_after, targets);
      else
        streams_[0].wal->background_flush(me, clock, delay_ns, flush_after);
      const uint64_t until = P::now_ns() + delay_ns;  // WaitLatch(wal_writer_delay)
      while (!writer_stop_.load(std::memory_order_relaxed)) {
        if (latch && writer_latch_.load() != 0) break;
        const uint64_t now = P::now_ns();
        if (now >= until) break;
        P::sleep_ns(std::min(until - now, poll_ns));
      }
    }
    window_edge(writer_window_, me, nullptr, false);
  }

  // SetLatch on the WAL writer (XLogSetAsyncXactLSN asked for it).
  void set_writer_latch() {
    if (writer_latch_.load() == 0) writer_latch_.store(1);
  }

  // XLogBackgroundFlush over every private stream (ideal) with one fsync for all of them: the
  // same decision as the shared WAL's writer on the streams' total of unflushed pages; each
  // stream writes what it would alone, then one DeviceSync makes all of it durable, then each
  // stream with work is pre-initialised.
  void background_flush_private(Proc<P>& me, typename WalT::WriterClock& clock,
                                uint64_t delay_ns, uint32_t flush_after, std::vector<Lsn>& targets) {
    uint64_t flushblocks = 0;
    bool any = false;
    for (size_t s = 0; s < streams_.size(); ++s) {
      targets[s] = streams_[s].wal->background_request(me);
      if (targets[s] == kInvalidLsn) continue;
      any = true;
      flushblocks += streams_[s].wal->pending_flush_pages(targets[s]);
    }
    if (!any) return;
    const bool flush =
        WalT::background_should_flush(clock, P::now_ns(), delay_ns, flush_after, flushblocks);
    for (size_t s = 0; s < streams_.size(); ++s)
      if (targets[s] != kInvalidLsn) streams_[s].wal->background_write(me, targets[s], false);
    if (flush) {
      if (spec_.wal.fsync) device_->sync(me, *streams_[0].storage);
      for (size_t s = 0; s < streams_.size(); ++s)
        if (targets[s] != kInvalidLsn) streams_[s].wal->mark_flushed(me, targets[s]);
    }
    for (size_t s = 0; s < streams_.size(); ++s)
      if (targets[s] != kInvalidLsn) streams_[s].wal->preinitialise(me);
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
  std::unique_ptr<DeviceSync<P>> device_;  // private streams only; outlives streams_
  std::vector<Stream> streams_;
  const WorkloadKind workload_;
  alignas(128) XidGen<P> xid_gen_;
  std::unique_ptr<C> clog_;  // transactional workloads only, shared WAL
  std::unique_ptr<ProcArray<P>> proc_array_;  // with clog_, unless clog.procarray is "off"
  std::unique_ptr<XidLockTable<P>> xid_locks_;  // with clog_, unless clog.xid_locks is false
  std::unique_ptr<PgbenchRowLocks<P>> row_locks_;  // tpcb_like and savepoints, shared WAL
  double table_pages_[kNumPgbenchTables] = {};  // pgbench_table_pages at workload.scale
  std::atomic<uint64_t> run_start_ns_{kNoStart};  // the first client's start (page_image)
  const uint32_t hint_miss_permille_ =
      static_cast<uint32_t>(std::lround(spec_.clog.hint_bit_miss * 1000.0));
  const uint32_t snapshots_per_statement_ = spec_.clog.snapshots_per_statement;
  const bool pgbench_pages_ = spec_.clog.lookup_xids == "pgbench_pages";
  double page_stamp_age_[kNumPgbenchTables] = {};  // pgbench_pages: mean xids, per table
  // Private streams (ideal), transactional workloads: each client's own XID counter and CLOG.
  struct PrivateXact {
    std::unique_ptr<XidGen<P>> xids;
    std::unique_ptr<C> clog;
  };
  std::vector<PrivateXact> private_xacts_;
  std::vector<PerClient> per_client_;
  std::thread writer_;
  std::atomic<bool> writer_stop_{false};
  // The runner's RunControl::measuring, published by the clients (and drive()) for the WAL
  // writer, which starts before them; its window is owned by the writer.
  std::atomic<const std::atomic<bool>*> measuring_flag_{nullptr};
  // THE CLIENT DRIVER: its CPU per statement, and one link per client while drive() runs.
  const uint64_t driver_ns_ = static_cast<uint64_t>(spec_.workload.driver_us * 1000.0);
  DriverLink* driver_links_ = nullptr;
  Window writer_window_;
  // The WAL writer's latch (procLatch): set by async commits, reset and polled by the writer.
  alignas(64) typename P::template Atomic<uint64_t> writer_latch_{0};
  uint64_t seed_ = 0;
};

}  // namespace walbench
