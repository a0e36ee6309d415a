// InsertionLocks: the N WAL insertion locks as a reusable piece, owned by every strategy that
// copies under one of N locks and publishes its progress through insertingAt (insert_locks,
// lockfree_reserve). The strategy decides how space is reserved and how xl_prev is found; this
// class does the rest of what PostgreSQL's xlog.c does with WALInsertLocks.
//
// Origin
//   PostgreSQL xlog.c WALInsertLockAcquire / WALInsertLockRelease /
//   WALInsertLockUpdateInsertingAt / WaitXLogInsertionsToFinish, 9.4+ (68a2e52bba, 5fa6c81a43,
//   7039760114); the atomic insertingAt and logInsertResult of PG 17 (71e4cc6b8ec6,
//   f3ff7bf83b); the "random_stride" lock choice of "Increase NUM_XLOGINSERT_LOCKS" (Sokolov,
//   pgsql-hackers 2025). PROTOCOLS.md sections 1 and 2. The protocol of each parameter value is
//   described in strategies/insert_locks/insert_locks.h ("insertingat", "lock_choice").
//
// Shared state (what protects it)
//   locks_[i].lock          the insertion LWLock (exclusive only)
//   locks_[i].inserting_at  LockVar: written by the holder (UpdateVar / ReleaseClearVar), read
//                           by waiters (WaitForVar), per params.insertingat (core/locks/lwlock.h)
//   log_insert_result_      atomic, only grows (17+ logInsertResult); unused with "waitlist"
//   clients_[]              owner-only per client: lock held, lockToTry, stride
//
// Invariants (the owning strategy must keep L1; the others hold here)
//   L1 A client reserves WAL space only while holding one insertion lock (between acquire and
//      release), and the reservation is a read-modify-write of the reserved end that
//      wait_insertions' read_reserved_end() observes; hence every reservation below a reserved
//      end a flusher read belongs to a lock it will find held, or is finished.
//   L2 insertingAt is 0 ("unknown") from acquire until the holder first advertises; the values
//      it then advertises never exceed the start of bytes the holder has not copied yet.
//   L3 wait_insertions(upto) returns p >= min(upto, reserved end) with every insertion below p
//      finished: a held lock whose insertingAt is 0 or below upto is waited for.
//   L4 log_insert_result_ only grows, and only to values L3 computed. wait_insertions returns,
//      in the atomic forms, the logInsertResult it read (early exit) or the freshest one after
//      advancing it: never less than what it computed, possibly more (PG 17).
//
// Steps
//   acquire    "procno": blocking acquire of lockToTry (= procno % N); after a wait, lockToTry
//              moves to the next lock. "random_stride": two conditional tries stepping by the
//              client's odd stride from its random start, then a blocking acquire.
//   release    ReleaseClearVar(insertingAt := 0).
//   advertise  UpdateVar(insertingAt := pos) if this client holds a lock (the WAL writer
//              does not).
//   wait_insertions(upto, read_reserved_end)
//              (17+) inserted = pg_atomic_read_membarrier_u64(logInsertResult) (fetch_add 0);
//              if upto <= inserted return inserted; read the reserved end, clamp upto to it;
//              for each lock: WaitForVar until the lock is free or insertingAt >= upto;
//              finished = min(reserved end, still-held locks' non-zero insertingAt); (17+)
//              return pg_atomic_monotonic_advance_u64(logInsertResult, finished), the freshest
//              value. (<= 16, "waitlist": no logInsertResult, return finished.) Checked against
//              REL_15 (15.3) xlog.c and a post-17 master whose function is 17's (f3ff7bf83b).
// Wake path: UpdateVar wakes WaitForVar waiters; release wakes lock waiters (lwlock.h).
// Hazards: a waiter must not hold a lock whose insertingAt is below its target (it would wait
//   for itself): strategies advertise before any wait that another inserter may depend on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/types.h"
#include "strategies/strategy.h"

namespace walbench {

enum class LockChoice { kProcno, kRandomStride };

// The parameters every insertion-lock strategy shares: num_locks, insertingat, lock_choice,
// xlog.
// The xlog.c around the locks: PG 16's WaitXLogInsertionsToFinish (no logInsertResult) and
// LogwrtResult under info_lck, or PG 17's (logInsertResult early exit and monotonic advance,
// f3ff7bf83b; atomic LogwrtResult, ee1cbe806d). kAuto: PG 16 with "waitlist", PG 17 otherwise.
enum class XlogVersion { kAuto, kPg16, kPg17 };

struct InsertionLocksParams {
  uint32_t num_locks = 8;
  VarProtocol insertingat = VarProtocol::kAtomic;
  LockChoice lock_choice = LockChoice::kProcno;
  XlogVersion xlog = XlogVersion::kAuto;
  // Whether the surroundings are PG 17's (xlog, with kAuto resolved by insertingat).
  bool pg17_xlog() const {
    return xlog == XlogVersion::kAuto ? insertingat != VarProtocol::kWaitList
                                      : xlog == XlogVersion::kPg17;
  }
  // Reads the four keys when present (others are ignored: the strategy parses its own).
  // Throws std::invalid_argument naming `strategy` on a bad value.
  static InsertionLocksParams from_json(const nlohmann::json& j, const char* strategy);
};

// The ParamSpecs of the four shared parameters, for a strategy's StrategyInfo. num_locks_doc
// replaces the default description of num_locks when not empty.
std::vector<ParamSpec> insertion_locks_param_specs(const std::string& num_locks_doc = "");

template <class P>
class InsertionLocks {
 public:
  InsertionLocks(ProcTable<P>& procs, const InsertionLocksParams& params)
      : params_(params), locks_(params.num_locks), clients_(procs.size()) {
    for (auto& l : locks_) l = std::make_unique<Slot>(procs);
    for (uint32_t i = 0; i < procs.size(); ++i) {
      ClientState& c = clients_[i];
      c.lock_to_try = i % params.num_locks;
      if (params.lock_choice == LockChoice::kRandomStride) {
        c.lock_to_try = static_cast<uint32_t>(procs[i].next_random() % params.num_locks);
        c.stride = static_cast<uint32_t>(procs[i].next_random() % params.num_locks) | 1u;
      }
    }
  }

  const InsertionLocksParams& params() const { return params_; }

  // WALInsertLockAcquire.
  void acquire(Proc<P>& me) {
    ClientState& c = clients_[me.id.value];
    const uint32_t mask = params_.num_locks - 1;
    if (params_.lock_choice == LockChoice::kProcno) {
      const uint32_t i = c.lock_to_try;
      const bool immediate = locks_[i]->lock.acquire(me, kLwExclusive);
      // Move to another lock after a wait, so clients spread out (WALInsertLockAcquire).
      if (!immediate) c.lock_to_try = (i + 1) & mask;
      c.held = i;
      return;
    }
    uint32_t i = c.lock_to_try;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (locks_[i]->lock.conditional_acquire(me, kLwExclusive)) {
        c.lock_to_try = i;
        c.held = i;
        return;
      }
      i = (i + c.stride) & mask;
    }
    locks_[i]->lock.acquire(me, kLwExclusive);
    c.lock_to_try = i;
    c.held = i;
  }

  // WALInsertLockRelease: LWLockReleaseClearVar(insertingAt := 0).
  void release(Proc<P>& me) {
    ClientState& c = clients_[me.id.value];
    Slot& s = *locks_[c.held];
    s.lock.release_clear_var(me, params_.insertingat, s.inserting_at, 0);
    c.held = kNone;
  }

  bool holding(const Proc<P>& me) const { return clients_[me.id.value].held != kNone; }

  // WALInsertLockUpdateInsertingAt (L2). A no-op for a client that holds no insertion lock.
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    if (c.held == kNone) return;  // not inserting (e.g. the WAL writer)
    Slot& s = *locks_[c.held];
    s.lock.update_var(me, params_.insertingat, s.inserting_at, pos.value);
  }

  // WaitXLogInsertionsToFinish (L3). read_reserved_end() returns the end LSN of reserved WAL
  // (Insert->CurrBytePos through XLogBytePosToEndRecPtr), read the way the strategy protects it.
  template <class ReadReservedEnd>
  Lsn wait_insertions(Proc<P>& me, Lsn upto, ReadReservedEnd&& read_reserved_end) {
    const bool has_insert_result = has_insert_result_();
    if (has_insert_result) {
      // PG 17: pg_atomic_read_membarrier_u64(&logInsertResult), i.e. fetch_add(0) (a locked
      // RMW); already there: return what was read, not upto (L4).
      const uint64_t inserted = log_insert_result_.fetch_add(0);
      if (upto.value <= inserted) return Lsn{inserted};
    }

    const Lsn reserved = read_reserved_end();
    if (upto > reserved) upto = reserved;

    uint64_t finished = reserved.value;
    for (auto& slot : locks_) {
      uint64_t inserting_at = 0;
      bool free;
      do {
        uint64_t seen = inserting_at;
        free = slot->lock.wait_for_var(me, params_.insertingat, slot->inserting_at, seen,
                                       &inserting_at);
        if (free) break;
      } while (inserting_at < upto.value);
      if (!free && inserting_at != 0 && inserting_at < finished) finished = inserting_at;
    }
    // L4, PG 17: pg_atomic_monotonic_advance_u64 returns the freshest value, which may be
    // beyond finished when a concurrent flusher with a later upto got there first.
    if (has_insert_result) finished = monotonic_advance(log_insert_result_, finished);
    return Lsn{finished};
  }

  // PG <= 16 (xlog "pg16", the default with insertingat "waitlist") has no logInsertResult, and
  // its XLogFlush / XLogWrite keep LogwrtResult under info_lck (Wal::logwrt_before_pg17).
  bool logwrt_before_pg17() const { return !has_insert_result_(); }
  // Inspection for tests (racy while clients run).
  Lsn log_insert_result() const { return Lsn{log_insert_result_.load()}; }

  // pg_atomic_monotonic_advance_u64 (atomics.h, PG 17): read; if already >= target, a full
  // barrier and return it; else CAS until it is >= target; return the latest value observed
  // (target if our CAS won). Full barrier semantics either way.
  static uint64_t monotonic_advance(typename P::template Atomic<uint64_t>& a, uint64_t target) {
    uint64_t cur = a.load();
    if (cur >= target) {
      P::memory_barrier();
      return cur;
    }
    while (cur < target) {
      if (a.compare_exchange(cur, target)) return target;
    }
    return cur;
  }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};

  bool has_insert_result_() const { return params_.pg17_xlog(); }

  struct Slot {
    explicit Slot(ProcTable<P>& procs) : lock(&procs, WaitEvent::kWalInsert) {}
    alignas(128) LWLock<P> lock;  // the lock and its variable share a line, as in PG
    LockVar<P> inserting_at;
  };

  struct alignas(64) ClientState {
    uint32_t held = kNone;
    uint32_t lock_to_try = 0;
    uint32_t stride = 1;
  };

  const InsertionLocksParams params_;
  alignas(128) typename P::template Atomic<uint64_t> log_insert_result_{0};
  std::vector<std::unique_ptr<Slot>> locks_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench
