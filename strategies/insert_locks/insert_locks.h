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
//   xlog (the surroundings): "pg17" is WaitXLogInsertionsToFinish with logInsertResult
//   (f3ff7bf83b: a fetch_add(0) read, early exit returning the value read, monotonic advance
//   returning the freshest value) and XLogFlush/XLogWrite on atomic LogwrtResult (ee1cbe806d);
//   "pg16" has no logInsertResult and keeps LogwrtResult under info_lck (core/wal/wal.h
//   "FLUSH AND WRITE REQUESTS"). By default ("auto") the waitlist form gets PG 16's (it models
//   PG 15) and the atomic forms PG 17's, so that "atomic_fastpath" differs from "atomic" in
//   UpdateVar only. The 2023 v6 patch predates both 2024 commits: to model the thread's runs,
//   give it xlog "pg16" (configs/sim-insert-locks-*.json do).
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
//   locks_                         InsertionLocks<P> (insertion_locks.h): the N LWLocks with
//                                  their insertingAt, logInsertResult and the per-client lock
//                                  choice state; shared with lockfree_reserve
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
#include "strategies/insert_locks/insertion_locks.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo insert_locks_info();

// insert_locks has no parameters beyond the shared ones (insertion_locks.h).
using InsertLocksParams = InsertionLocksParams;

constexpr uint64_t kNoPrevPos = ~uint64_t{0};

template <class P>
class InsertLocks {
 public:
  InsertLocks(ProcTable<P>& procs, const InsertLocksParams& params)
      : insertpos_lck_(WaitEvent::kInsertPosSpin), locks_(procs, params) {}

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.get()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    locks_.acquire(me);

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

    locks_.release(me);
    return {start_lsn, g.bytepos_to_end_lsn(BytePos{end})};
  }

  // WALInsertLockUpdateInsertingAt: called by Wal::get_buffer before it may block.
  void advertise(Proc<P>& me, Lsn pos) { locks_.advertise(me, pos); }

  // Which XLogFlush / XLogWrite form the WAL runs (core/wal/wal.h "FLUSH AND WRITE REQUESTS").
  bool logwrt_before_pg17() const { return locks_.logwrt_before_pg17(); }
  Lsn log_insert_result() const { return locks_.log_insert_result(); }  // tests

  // WaitXLogInsertionsToFinish (I3): CurrBytePos read under the spinlock.
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    return locks_.wait_insertions(me, upto, [&] {
      insertpos_lck_.acquire(me);
      const uint64_t reserved_pos = curr_byte_pos_.get();
      insertpos_lck_.release();
      return wal.geom().bytepos_to_end_lsn(BytePos{reserved_pos});
    });
  }

 private:
  alignas(128) SpinLock<P> insertpos_lck_;
  typename P::template Shared<uint64_t> curr_byte_pos_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrevPos};
  InsertionLocks<P> locks_;
};

}  // namespace walbench
