// insert_locks: N WAL insertion locks (PostgreSQL 9.4 and later).
//
// Origin
//   Heikki Linnakangas' redesign, "Moving more work outside WALInsertLock" (pgsql-hackers 2011-
//   2013); commits 9a20a9b21b (insertion slots, 9.4), 68a2e52bba (slots become LWLocks with the
//   variable API), 5fa6c81a43 (NUM_XLOGINSERT_LOCKS fixed at 8), 7039760114 (9.5 var API).
//   insertingat protocols (PROTOCOLS.md section 2, implemented in core/locks/lwlock.h):
//     "waitlist"        PG 9.4-16: insertingAt read and written under the LWLock wait-list lock.
//     "atomic"          PG 17+ (71e4cc6b8ec6, "WAL Insertion Lock Improvements", Rupireddy
//                       2023): atomic insertingAt; UpdateVar still takes the wait-list lock.
//     "atomic_fastpath" the v6 patch benchmarked in that thread: UpdateVar also skips the
//                       wait-list lock when nobody waits (never committed).
//   lock_choice:
//     "procno"          WALInsertLockAcquire: lockToTry = procno % N, moved to the next lock
//                       after an acquisition that had to sleep.
//     "random_stride"   "Increase NUM_XLOGINSERT_LOCKS" (Sokolov, 2025): random start and odd
//                       stride per client, two conditional tries stepping by the stride, then a
//                       blocking acquire.
//   PG 17's early exit in WaitXLogInsertionsToFinish (upto <= logInsertResult) is used by the
//   atomic forms; the waitlist form models PG <= 16, which has no logInsertResult.
//
// Design summary
//   Reservation is short and serial (a spinlock around two counters); copying is long and runs
//   in parallel under one of N exclusive locks. A flusher must know that nothing below its
//   target is still being copied: each lock's variable insertingAt tells how far its holder
//   got (0 = "unknown, wait for me") and WaitXLogInsertionsToFinish waits on every lock whose
//   holder might still be below the target.
//
// Shared state (what protects it)
//   insertpos_lck_                 SpinLock, on its own cache line (375d8526f2)
//   curr_byte_pos_, prev_byte_pos_ protected by insertpos_lck_ (Insert->CurrBytePos/PrevBytePos)
//   locks_[i].lock                 the insertion LWLock (exclusive only here)
//   locks_[i].inserting_at         LockVar: written by the holder (UpdateVar/ReleaseClearVar),
//                                  read by waiters (WaitForVar), per the chosen protocol
//   log_insert_result_             atomic, only grows (17+ logInsertResult)
//   per-client state (clients_[]) owner-only: lock held, lockToTry, stride, progress
//
// Invariants
//   I1 A client reserves only while holding one insertion lock, so every reservation below the
//      CurrBytePos a flusher read belongs to a current holder or is finished.
//   I2 insertingAt is 0 from acquire until the holder first advertises; then it only grows and
//      never exceeds the start of bytes the holder has not copied yet.
//   I3 wait_insertions(upto) returns p >= min(upto, reserved end) with every insertion below p
//      finished.
//
// Insert (XLogInsertRecord)
//   1 acquire an insertion lock (lock_choice)   2 reserve under insertpos_lck_
//   3 set xl_prev, finish the CRC                4 copy (GetXLogBuffer may advertise + block)
//   5 ReleaseClearVar(insertingAt := 0)
// Wait (WaitXLogInsertionsToFinish)
//   read CurrBytePos under the spinlock, clamp upto; for each lock: WaitForVar until the lock is
//   free or insertingAt >= upto; finished = min over held locks' insertingAt.
// Wake path: UpdateVar wakes WaitForVar waiters; release wakes lock waiters (lwlock.h).
// Lock order: insertion lock -> insertpos_lck_; insertion lock -> WALBufMappingLock ->
//   (released) -> WALWriteLock. Never wait_insertions with WALWriteLock held.
// Hazards: advertising the page start when just past a page header (358cde320b) — done in
//   Wal::get_buffer; a flusher must not wait on a var it can never see change (I2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/types.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo insert_locks_info();

enum class LockChoice { kProcno, kRandomStride };

struct InsertLocksParams {
  uint32_t num_locks = 8;
  VarProtocol insertingat = VarProtocol::kAtomic;
  LockChoice lock_choice = LockChoice::kProcno;
  static InsertLocksParams from_json(const nlohmann::json& j);
};

constexpr uint64_t kNoPrevPos = ~uint64_t{0};

template <class P>
class InsertLocks {
 public:
  InsertLocks(ProcTable<P>& procs, const InsertLocksParams& params)
      : params_(params),
        insertpos_lck_(WaitEvent::kInsertPosSpin),
        locks_(params.num_locks),
        clients_(procs.size()) {
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

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.get()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    ClientState& c = clients_[me.id.value];
    acquire_insert_lock(me, c);

    // ReserveXLogInsertLocation.
    const uint64_t size = max_align(len);
    insertpos_lck_.acquire(me);
    const uint64_t start = curr_byte_pos_.get();
    const uint64_t end = start + size;
    const uint64_t prev = prev_byte_pos_.get();
    curr_byte_pos_.set(end);
    prev_byte_pos_.set(start);
    insertpos_lck_.release();

    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    const Lsn prev_lsn = prev == kNoPrevPos ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev});
    finish_record(record, payload_crc, prev_lsn);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);

    Slot& s = *locks_[c.held];
    s.lock.release_clear_var(me, params_.insertingat, s.inserting_at, 0);
    c.held = kNone;
    return {start_lsn, g.bytepos_to_end_lsn(BytePos{end})};
  }

  // WALInsertLockUpdateInsertingAt: called by Wal::get_buffer before it may block.
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    if (c.held == kNone) return;  // not inserting (e.g. the WAL writer)
    Slot& s = *locks_[c.held];
    s.lock.update_var(me, params_.insertingat, s.inserting_at, pos.value);
  }

  // WaitXLogInsertionsToFinish (I3).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    const bool has_insert_result = params_.insertingat != VarProtocol::kWaitList;
    if (has_insert_result && upto.value <= log_insert_result_.load()) return upto;

    insertpos_lck_.acquire(me);
    const uint64_t reserved_pos = curr_byte_pos_.get();
    insertpos_lck_.release();
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{reserved_pos});
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
    if (has_insert_result) {
      uint64_t cur = log_insert_result_.load();
      while (cur < finished && !log_insert_result_.compare_exchange(cur, finished)) {
      }
    }
    return Lsn{finished};
  }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};

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

  void acquire_insert_lock(Proc<P>& me, ClientState& c) {
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

  const InsertLocksParams params_;
  alignas(128) SpinLock<P> insertpos_lck_;
  typename P::template Shared<uint64_t> curr_byte_pos_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrevPos};
  alignas(128) typename P::template Atomic<uint64_t> log_insert_result_{0};
  std::vector<std::unique_ptr<Slot>> locks_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench
