// What is special to insert_locks (the conformance suite covers the rest), issue 10 item 1:
//   - WaitXLogInsertionsToFinish's return value (insertion_locks.h L3/L4): PG 17's early exit
//     returns the logInsertResult it read, not upto; its monotonic advance returns the freshest
//     value; PG 15 ("waitlist") has neither and returns what it computed.
//   - XLogFlush's request handling in core/wal/wal.h ("FLUSH AND WRITE REQUESTS") as this
//     strategy drives it: a flusher reads LogwrtRqst.Write and never raises it, so it does not
//     wait for the later records of other flushers; a page crossing raises it; XLogWrite's end
//     keeps it >= the written position.
//   - The store order the lock and WAL code asks of the platform (platform.h STORE ORDER).
// Single-threaded and deterministic: the interleavings are forced by nesting one client's call
// inside another's (a spy strategy runs a hook inside WaitXLogInsertionsToFinish).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/platform/threads.h"
#include "core/wal/format.h"
#include "core/wal/storage.h"
#include "core/wal/wal.h"
#include "strategies/insert_locks/insert_locks.h"
#include "strategies/insert_locks/insertion_locks.h"

using namespace walbench;

namespace {

using TP = ThreadsPlatform;

bool has_insert_result(VarProtocol v) { return v != VarProtocol::kWaitList; }

// InsertLocks with a hook that runs inside the next wait_insertions (before the wait itself),
// and a record of every upto it was asked for.
template <class P>
struct SpyLocks {
  SpyLocks(ProcTable<P>& procs, const InsertLocksParams& p) : inner(procs, p) {}

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len, uint32_t crc) {
    return inner.insert(wal, me, record, len, crc);
  }
  void advertise(Proc<P>& me, Lsn pos) { inner.advertise(me, pos); }
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    waits.push_back(upto);
    if (on_wait) {
      auto hook = std::move(on_wait);
      on_wait = nullptr;
      hook();
    }
    return inner.wait_insertions(wal, me, upto);
  }
  bool logwrt_before_pg17() const { return inner.logwrt_before_pg17(); }

  InsertLocks<P> inner;
  std::vector<Lsn> waits;
  std::function<void()> on_wait;
};

struct SpyWal {
  using S = SpyLocks<TP>;
  WalGeometry g;
  std::unique_ptr<Storage> storage;
  ProcTable<TP> procs{3, 1};
  std::unique_ptr<Wal<TP, S>> wal;
  std::vector<uint8_t> buf = std::vector<uint8_t>(8192);
  uint64_t records = 0;

  explicit SpyWal(VarProtocol proto, XlogVersion xlog = XlogVersion::kAuto) {
    g.page_size = 1024;
    g.segment_size = 8192;
    storage = make_memory_storage(g);
    InsertLocksParams p;
    p.insertingat = proto;
    p.xlog = xlog;
    wal = std::make_unique<Wal<TP, S>>(g, 8, *storage, procs, p);
  }
  Wal<TP, S>::Inserted insert(uint32_t client, uint32_t len) {
    const uint32_t crc = build_record(buf.data(), len, Xid{0}, kRmHeap, 0,
                                      ClientId{client}, records++);
    return wal->insert(procs[client], buf.data(), len, crc);
  }
};

}  // namespace

TEST_CASE("wait_insertions: PG 17 returns the logInsertResult it read, advanced monotonically",
          "[insert_locks]") {
  for (VarProtocol proto :
       {VarProtocol::kWaitList, VarProtocol::kAtomic, VarProtocol::kAtomicFastPath}) {
    DYNAMIC_SECTION("insertingat " << var_protocol_name(proto)) {
      ProcTable<TP> procs(2, 1);
      InsertionLocksParams p;
      p.insertingat = proto;
      InsertionLocks<TP> locks(procs, p);
      // Flusher 0 read the reserved end 1000; before it finishes, flusher 1 (upto 4000, reserved
      // end 5000) completes. No insertion is in progress, so each computes its reserved end.
      Lsn inner{0};
      const Lsn outer = locks.wait_insertions(procs[0], Lsn{900}, [&] {
        inner = locks.wait_insertions(procs[1], Lsn{4000}, [] { return Lsn{5000}; });
        return Lsn{1000};
      });
      CHECK(inner == Lsn{5000});
      if (has_insert_result(proto)) {
        // pg_atomic_monotonic_advance_u64 did not move 5000 back to 1000 and returned 5000.
        CHECK(locks.log_insert_result() == Lsn{5000});
        CHECK(outer == Lsn{5000});
      } else {
        CHECK(outer == Lsn{1000});  // PG 15: finishedUpto
      }
      // upto 2000 <= logInsertResult: PG 17 returns at once with the value read (5000), without
      // reading the reserved end; PG 15 reads it and returns what it computed.
      bool read_reserved = false;
      const Lsn early = locks.wait_insertions(procs[0], Lsn{2000}, [&] {
        read_reserved = true;
        return Lsn{6000};
      });
      if (has_insert_result(proto)) {
        CHECK_FALSE(read_reserved);
        CHECK(early == Lsn{5000});  // not upto (2000): what the model returned before issue 10
      } else {
        CHECK(read_reserved);
        CHECK(early == Lsn{6000});
      }
    }
  }
}

TEST_CASE("xlog: the surroundings follow insertingat unless chosen; the 2023 patch on PG 16's",
          "[insert_locks]") {
  using J = nlohmann::json;
  auto parse = [](const J& j) { return InsertionLocksParams::from_json(j, "insert_locks"); };
  CHECK_FALSE(parse(J{{"insertingat", "waitlist"}}).pg17_xlog());
  CHECK(parse(J{{"insertingat", "atomic"}}).pg17_xlog());
  CHECK(parse(J{{"insertingat", "atomic_fastpath"}}).pg17_xlog());
  CHECK(parse(J::object()).pg17_xlog());  // insertingat's default is atomic
  CHECK_FALSE(parse(J{{"insertingat", "atomic_fastpath"}, {"xlog", "pg16"}}).pg17_xlog());
  CHECK(parse(J{{"insertingat", "waitlist"}, {"xlog", "pg17"}}).pg17_xlog());
  CHECK_THROWS_WITH(parse(J{{"xlog", "pg18"}}), "insert_locks: unknown xlog \"pg18\"");

  // The v6 patch on PG 16's xlog.c: no logInsertResult (the nested flushers' scenario of the
  // test above gives PG 15's answers), LogwrtResult under info_lck.
  ProcTable<TP> procs(2, 1);
  InsertionLocksParams p;
  p.insertingat = VarProtocol::kAtomicFastPath;
  p.xlog = XlogVersion::kPg16;
  InsertionLocks<TP> locks(procs, p);
  const Lsn outer = locks.wait_insertions(procs[0], Lsn{900}, [&] {
    CHECK(locks.wait_insertions(procs[1], Lsn{4000}, [] { return Lsn{5000}; }) == Lsn{5000});
    return Lsn{1000};
  });
  CHECK(outer == Lsn{1000});
  CHECK(locks.log_insert_result() == Lsn{0});
  CHECK(locks.logwrt_before_pg17());
  CHECK(SpyWal(VarProtocol::kAtomicFastPath, XlogVersion::kPg16).wal->logwrt_before_pg17());
  CHECK_FALSE(SpyWal(VarProtocol::kAtomicFastPath).wal->logwrt_before_pg17());
  CHECK_FALSE(SpyWal(VarProtocol::kWaitList, XlogVersion::kPg17).wal->logwrt_before_pg17());
}

TEST_CASE("wait_insertions: an insertion in progress below upto still bounds the result",
          "[insert_locks]") {
  ProcTable<TP> procs(2, 1);
  InsertionLocksParams p;
  p.insertingat = VarProtocol::kAtomic;
  InsertionLocks<TP> locks(procs, p);
  locks.acquire(procs[0]);
  locks.advertise(procs[0], Lsn{3000});  // client 0 copied everything below 3000
  // upto 2500 <= 3000: no wait; finished = min(reserved 4000, 3000).
  CHECK(locks.wait_insertions(procs[1], Lsn{2500}, [] { return Lsn{4000}; }) == Lsn{3000});
  CHECK(locks.log_insert_result() == Lsn{3000});
  locks.release(procs[0]);
  CHECK(locks.wait_insertions(procs[1], Lsn{3500}, [] { return Lsn{4000}; }) == Lsn{4000});
}

TEST_CASE("XLogFlush reads LogwrtRqst.Write, never raises it: no waiting for later flushers' "
          "records",
          "[insert_locks][walwriter]") {
  for (VarProtocol proto : {VarProtocol::kWaitList, VarProtocol::kAtomic}) {
    DYNAMIC_SECTION("insertingat " << var_protocol_name(proto)) {
      SpyWal w(proto);
      CHECK(w.wal->logwrt_before_pg17() == !has_insert_result(proto));
      const auto a = w.insert(0, 100);  // both on the first page: no page crossing
      const auto c = w.insert(2, 100);
      REQUIRE(a.end < c.end);
      CHECK(w.wal->logwrt_rqst_write() == Lsn{0});
      // Client 2 flushes c; inside its WaitXLogInsertionsToFinish, client 0 flushes a.
      w.wal->strategy.on_wait = [&] {
        CHECK(w.wal->logwrt_rqst_write() < c.end);  // client 2 did not raise it (F1)
        w.wal->flush(w.procs[0], a.end);
      };
      w.wal->flush(w.procs[2], c.end);
      const std::vector<Lsn>& waits = w.wal->strategy.waits;
      REQUIRE(waits.size() >= 2);
      CHECK(waits[0] == c.end);
      CHECK(waits[1] == a.end);  // client 0's own record (the model before issue 10: c.end)
      // Client 0 wrote what was finished (up to c.end: the group flush, F5), and XLogWrite's end
      // brought LogwrtRqst.Write up to the written position (W1); client 2 found c flushed.
      CHECK(w.wal->log_flush_result() == c.end);
      CHECK(w.wal->log_write_result() == c.end);
      CHECK(w.wal->logwrt_rqst_write() == c.end);
      CHECK(w.wal->counters().flush_calls == 1);
    }
  }
}

TEST_CASE("LogwrtRqst.Write is raised by an insertion that crosses a page, not by others",
          "[insert_locks][walwriter]") {
  for (VarProtocol proto : {VarProtocol::kWaitList, VarProtocol::kAtomic}) {
    DYNAMIC_SECTION("insertingat " << var_protocol_name(proto)) {
      SpyWal w(proto);
      const auto a = w.insert(0, 100);
      CHECK(a.start.value / 1024 == a.end.value / 1024);
      CHECK(w.wal->logwrt_rqst_write() == Lsn{0});
      const auto b = w.insert(1, 2000);  // crosses into the second and third pages
      CHECK(b.start.value / 1024 != b.end.value / 1024);
      CHECK(w.wal->logwrt_rqst_write() == b.end);
      const auto c = w.insert(0, 50);  // on b's last page
      REQUIRE(c.start.value / 1024 == c.end.value / 1024);
      CHECK(w.wal->logwrt_rqst_write() == b.end);
      // A flusher of a waits for insertions up to LogwrtRqst.Write (b.end), not further.
      w.wal->flush(w.procs[2], a.end);
      REQUIRE(w.wal->strategy.waits.size() == 1);
      CHECK(w.wal->strategy.waits[0] == b.end);
      CHECK(w.wal->log_flush_result() == c.end);  // but writes all that is finished (F5)
    }
  }
}

namespace {

// ThreadsPlatform whose atomics record the order of every store (one test at a time, one
// thread): checks which stores the code asks to be plain.
struct OrderRecordingPlatform : ThreadsPlatform {
  static inline std::vector<std::memory_order> orders;
  template <class T>
  class Atomic : public ThreadsPlatform::Atomic<T> {
   public:
    using ThreadsPlatform::Atomic<T>::Atomic;
    void store(T v, std::memory_order order = std::memory_order_seq_cst) {
      orders.push_back(order);
      ThreadsPlatform::Atomic<T>::store(v, order);
    }
  };
  static inline uint64_t fences = 0;  // P::memory_barrier calls (MFENCE)
  static void memory_barrier() {
    ++fences;
    ThreadsPlatform::memory_barrier();
  }
};
static_assert(Platform<OrderRecordingPlatform>);

}  // namespace

TEST_CASE("store order: S_UNLOCK and XLogWrite's results are plain stores, not full barriers",
          "[insert_locks]") {
  using RP = OrderRecordingPlatform;
  SECTION("S_UNLOCK") {
    ProcTable<RP> procs(1, 1);
    SpinLock<RP> lock(WaitEvent::kTestLock);
    lock.acquire(procs[0]);
    RP::orders.clear();
    lock.release();
    REQUIRE(RP::orders.size() == 1);
    CHECK(RP::orders[0] == std::memory_order_release);
  }
  SECTION("XLogWrite publishes LogwrtResult with plain stores, in both forms") {
    for (VarProtocol proto : {VarProtocol::kWaitList, VarProtocol::kAtomic}) {
      WalGeometry g;
      g.page_size = 1024;
      g.segment_size = 8192;
      auto storage = make_memory_storage(g);
      ProcTable<RP> procs(1, 1);
      InsertLocksParams p;
      p.insertingat = proto;
      Wal<RP, InsertLocks<RP>> wal(g, 8, *storage, procs, p);
      std::vector<uint8_t> buf(256);
      const uint32_t crc = build_record(buf.data(), 100, Xid{0}, kRmHeap, 0, ClientId{0}, 0);
      const auto r = wal.insert(procs[0], buf.data(), 100, crc);
      RP::orders.clear();
      wal.flush(procs[0], r.end);
      // Every store of the flush is plain: S_UNLOCK of info_lck and insertpos_lck (twice each
      // at most), the two LogwrtResult stores. None is a seq_cst store (xchg).
      CHECK(RP::orders.size() >= 3);
      for (std::memory_order o : RP::orders) CHECK(o != std::memory_order_seq_cst);
      CHECK(wal.log_flush_result() == r.end);
    }
  }
  // ThreadsPlatform itself forwards the order to std::atomic (a mov for release on x86).
  ThreadsPlatform::Atomic<uint64_t> x{0};
  x.store(5, std::memory_order_release);
  CHECK(x.load() == 5);
}

TEST_CASE("store order: AdvanceXLInsertBuffer publishes xlblocks with plain stores and write "
          "barriers, no fence", "[insert_locks]") {
  // xlog.c AdvanceXLInsertBuffer (PG 17 and bc22dc0e0d): pg_atomic_write_u64(xlblocks, Invalid);
  // pg_write_barrier(); MemSet + header; pg_write_barrier(); pg_atomic_write_u64(xlblocks, end):
  // plain stores, and write barriers that are compiler barriers on x86 (wal.h XLBLOCKS STORES).
  using RP = OrderRecordingPlatform;
  for (BufferInit init : {BufferInit::kMappingLock, BufferInit::kLockFree}) {
    INFO(buffer_init_name(init));
    WalGeometry g;
    g.page_size = 1024;
    g.segment_size = 8192;
    auto storage = make_memory_storage(g);
    ProcTable<RP> procs(1, 1);
    InsertLocksParams p;
    Wal<RP, InsertLocks<RP>> wal(g, 8, *storage, procs, init, p);
    // The first lap fills the empty slots; records then fill 7+ pages and are written, and the
    // second lap re-initialises the slots whose old page is written (I1).
    RP::orders.clear();
    RP::fences = 0;
    wal.preinitialise(procs[0]);
    CHECK(RP::fences == 0);
    for (std::memory_order o : RP::orders) CHECK(o != std::memory_order_seq_cst);
    CHECK(RP::orders.size() >= 2 * 8);  // Invalid then the new end, per page
    for (uint64_t slot = 0; slot < 8; ++slot) CHECK(wal.xlblocks(slot) == (slot + 1) * g.page_size);
    std::vector<uint8_t> buf(512);
    Lsn end;
    for (uint64_t i = 0; i < 15; ++i) {
      const uint32_t crc = build_record(buf.data(), 500, Xid{0}, kRmHeap, 0, ClientId{0}, i);
      end = wal.insert(procs[0], buf.data(), 500, crc).end;
    }
    wal.flush(procs[0], end);
    REQUIRE(end.value > 7 * g.page_size);
    RP::orders.clear();
    RP::fences = 0;
    wal.preinitialise(procs[0]);
    CHECK(RP::fences == 0);
    for (std::memory_order o : RP::orders) CHECK(o != std::memory_order_seq_cst);
    CHECK(RP::orders.size() >= 2 * 7);
    for (uint64_t slot = 0; slot < 7; ++slot)
      CHECK(wal.xlblocks(slot) == (8 + slot + 1) * g.page_size);
  }
}

TEST_CASE("XLogWrite fsyncs a segment when it writes its last page, flush request or not",
          "[insert_locks]") {
  // xlog.c XLogWrite, finishing_seg: issue_xlog_fsync, then LogwrtResult.Flush = Write.
  WalGeometry g;
  g.page_size = 1024;
  g.segment_size = 8192;
  auto storage = make_memory_storage(g);
  ProcTable<TP> procs(1, 1);
  InsertLocksParams p;
  Wal<TP, InsertLocks<TP>> wal(g, 32, *storage, procs, p);
  std::vector<uint8_t> buf(512);
  auto insert = [&](uint64_t seq) {
    const uint32_t crc = build_record(buf.data(), 500, Xid{0}, kRmHeap, 0, ClientId{0}, seq);
    return wal.insert(procs[0], buf.data(), 500, crc).end;
  };
  Lsn end;
  uint64_t seq = 0;
  while (end.value < 4000) end = insert(seq++);
  wal.write_upto(procs[0], end, /*flush_too=*/false);  // within the first segment: no fsync
  CHECK(wal.counters().fsyncs == 0);
  CHECK(wal.log_flush_result() == Lsn{0});
  while (end.value < 8192 + 2000) end = insert(seq++);
  wal.write_upto(procs[0], end, /*flush_too=*/false);  // completes segment 0
  CHECK(wal.counters().fsyncs == 1);
  CHECK(wal.log_flush_result() == Lsn{8192});
  wal.flush(procs[0], end);  // the flush's own fsync
  CHECK(wal.counters().fsyncs == 2);
  CHECK(wal.log_flush_result() == end);
  // fsync off: no sync, but the segment still counts as flushed (LogwrtResult.Flush = Write).
  auto storage2 = make_memory_storage(g);
  Wal<TP, InsertLocks<TP>> nosync(g, 32, *storage2, procs, p);
  nosync.set_fsync(false);
  Lsn end2;
  for (uint64_t i = 0; end2.value < 8192 + 100; ++i) {
    const uint32_t crc = build_record(buf.data(), 500, Xid{0}, kRmHeap, 0, ClientId{0}, i);
    end2 = nosync.insert(procs[0], buf.data(), 500, crc).end;
  }
  nosync.write_upto(procs[0], end2, /*flush_too=*/false);
  CHECK(nosync.counters().fsyncs == 0);
  CHECK(nosync.log_flush_result() == Lsn{8192});
}
