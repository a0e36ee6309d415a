// PGBENCH ROW LOCKS: what a pgbench UPDATE or SELECT ... FOR UPDATE of a pgbench_tellers or
// pgbench_branches row does when another transaction got to the row first.
//
// ORIGIN (PostgreSQL 9.x-17; facts, not code)
//   - pgbench's scripts draw the row uniformly: tpcb_like updates one teller of 10 x scale and one
//     branch of scale (pgbench.c, the builtin "tpcb-like" script: \set tid random(1, 10 *
//     :scale), \set bid random(1, 1 * :scale)); the savepoints script here locks one of each.
//     pgbench -i loads them in key order, 185 tellers and 226 of the narrower branches rows to a
//     page (core/cell/full_page_images.h), so at scale s the tellers are on ceil(10 s / 185)
//     pages and the branches on ceil(s / 226).
//   - heapam.c heap_update / heap_lock_tuple: the row is changed under the buffer's content lock
//     (LWLock:BufferContent) held exclusively from reading the old version's xmax to after the
//     WAL record is inserted (START_CRIT_SECTION .. XLogInsert .. PageSetLSN, then
//     LockBuffer(UNLOCK)); the index scan that found the row read it under the content lock in
//     share mode (heap_hot_search_buffer).
//   - When xmax is a transaction still in progress (HeapTupleSatisfiesUpdate: TM_BeingModified),
//     the content lock is released, the backend takes the tuple's heavyweight lock
//     (heap_acquire_tuplock, LockTuple: Lock:tuple while an earlier waiter holds it, so the
//     waiters of a row queue in order behind the first) and waits for that transaction to end:
//     XactLockTableWait, a ShareLock on the holder's transaction id, which the holder has held
//     ExclusiveLock on since it got its xid and releases at its end (LockReleaseAll, after
//     RecordTransactionCommit and ProcArrayEndTransaction): wait event Lock:transactionid. It
//     keeps the tuple lock until it has changed the row (UnlockTupleTuplock).
//   - READ COMMITTED (nodeModifyTable.c ExecUpdate, TM_Updated; execMain.c EvalPlanQual): the
//     holder committed a newer version, so the waiter locks that version (table_tuple_lock with
//     TUPLE_LOCK_FLAG_FIND_LAST_VERSION: heap_lock_tuple writes Heap/LOCK, 59 B) and updates it.
//     A SELECT ... FOR UPDATE that waited locks the row as it would have anyway (its Heap/LOCK).
//     If a third transaction updated the row meanwhile, the waiter waits again.
//   - The same TM_Updated without any wait: the UPDATE's snapshot (taken when the statement
//     starts executing) sees the row version before the last updater's, because that updater
//     committed after the snapshot was taken; by the time the scan reaches the row it has ended,
//     so heap_update finds the visible version's xmax committed (HeapTupleSatisfiesUpdate:
//     TM_Updated) and EvalPlanQual re-locks the newest version (Heap/LOCK) before the update.
//   This is pgbench's classic contention at a scale below the client count ("the scale factor
//   should be at least the number of clients", pgbench documentation): at scale 1 every
//   tpcb_like transaction updates the one branch row, so transactions queue on it from the
//   branches update to their commit.
//
// MODEL
//   Row slots: one P::Shared<uint64_t> per teller and branch, the row's xmax (holder's xid <<
//   32 | its procno + 1; 0: never updated), read and written only under the page's content
//   lock (rows of a page are adjacent, 8 B each, so a page's slots share a few cache lines as
//   its tuples do). Page content locks: one LWLock per page of each of the two tables, tranche
//   LWLock:BufferContent. The transaction lock: one LWLock per client (tranche
//   Lock:transactionid) with a LockVar (VarProtocol::kAtomic) holding the xid it stands for;
//   its client takes it exclusively with its first row lock of a transaction and releases it
//   with the variable cleared at the transaction's end (end_transaction). A row's xmax is in
//   progress while its holder's variable still holds that xid (TransactionIdIsInProgress); a
//   waiter waits with wait_for_var(the xid), so it wakes at the release, or at once if the
//   holder has moved on to another transaction (its variable changed). The tuple lock: one
//   LWLock per row (tranche Lock:tuple).
//   Per row change, under the page's content lock taken exclusively: read the slot; if another
//   transaction in progress holds it, release; the first time, take the row's tuple lock
//   exclusively (queueing behind earlier waiters) and look again; else wait for the holder
//   (Lock:transactionid), then take the page again and re-read. Once the row is free or its
//   holder ended: write the slot and run the caller's change (its WAL records), release the
//   page, then the tuple lock if taken. Before all that, one share-mode acquisition for the
//   index scan's heap fetch. A change that waited (for the tuple lock or the holder), or that
//   found the row's last updater ended but invisible to its statement's snapshot (the caller's
//   visible(xid): XidInMVCCSnapshot over the snapshot the ProcArray model last gave this client,
//   core/clog/proc_array.h), is told so: its UPDATE writes the Heap/LOCK of READ COMMITTED's
//   re-lock first.
// DEPARTURES (named)
//   - The heavyweight lock manager (its 16 partition LWLocks, the lock and proclock hash tables,
//     the deadlock check after deadlock_timeout) is LWLocks: one with a variable per client for
//     its transaction, one per row for the tuple lock. Their queues sleep and wake as
//     PostgreSQL's do, at an LWLock's CPU cost, but an LWLock lets a newcomer take a lock that
//     was just released before the waiter it woke (the lock manager grants in queue order), and
//     PostgreSQL's tuple lock is per tuple version (a waiter that finds the row updated again
//     queues on the new version's), here per row. The transaction lock is taken at the
//     client's first row lock, not at its xid assignment, so transactions that lock no teller
//     or branch row pay nothing for it.
//   - Only UPDATEs re-lock without a wait: savepoints' rows are only ever locked FOR UPDATE, and
//     an ended locker's xmax (lock-only) gives TM_Ok (the caller's visible() says so).
//   - On real threads the snapshot's list of running xids is a copy made under ProcArrayLock and
//     searched under the page's content lock (PostgreSQL copies its xip array too, and
//     XidInMVCCSnapshot searches it); cells with row locks and a ProcArray model pay that,
//     others do not (the simulator does not price this client-local memory).
//   - The re-lock without a wait needs the statement's snapshot: with clog.procarray "off" no
//     snapshot is modelled, every ended updater counts as visible, and the Heap/LOCK is written
//     only after a wait. With snapshots, the window in which an updater can end unseen is
//     nearly closed: the executor's work between the UPDATE's snapshot and the row
//     (ExecutorStart, the index scan) is spent in the statement's overhead before the snapshot
//     (wal_cell.h statement()), so such re-locks are rare here (at most 5% as many as the
//     waits in configs/sim-row-locks-vm.json's cells) unless clients queue between the two
//     (on the row's page lock): one reason the model writes fewer Heap/LOCKs
//     than PostgreSQL 15 at scale 1 (README "Row locks").
//   - After a wait the Heap/LOCK and the update are made under one hold of the content lock;
//     PostgreSQL releases it between heap_lock_tuple and heap_update.
//   - TransactionIdIsInProgress reads the holder's variable (one cache line), not the ProcArray.
//   - The update's own CPU work (finding the HOT chain, writing the new version) is in the
//     statement's client_overhead_us, outside the content lock, which is held for the row check
//     and the WAL insertion.
//   - pgbench_accounts rows (100,000 x scale) and the last page of pgbench_history are not
//     locked: two clients meet on an accounts row with a probability of about the clients over
//     100,000 x scale; every history INSERT goes to the last page, whose content lock is
//     contended in PostgreSQL and left out here.
//   - No deadlock is possible: teller before branch in every script, and a branch holder locks
//     nothing after its branch.
//   Shared WAL only: ideal's private streams (each client its own data) have no row locks.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "core/aligned_array.h"
#include "core/cell/full_page_images.h"
#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/types.h"

namespace walbench {

template <class P>
class PgbenchRowLocks {
 public:
  PgbenchRowLocks(ProcTable<P>& procs, uint32_t clients, uint32_t scale) {
    for (uint32_t c = 0; c < clients; ++c) xact_.emplace_back(&procs);
    for (PgbenchTable table : {PgbenchTable::kTellers, PgbenchTable::kBranches}) {
      Table& tab = table_of(table);
      tab.rows = pgbench_table_shape(table).rows_per_scale * scale;
      tab.rows_per_page = pgbench_table_shape(table).rows_per_page;
      tab.slots = make_aligned_array<Slot>(tab.rows);  // line-aligned: which rows share a line
                                                      // must not depend on the heap (sim.h)
      const uint64_t pages = pgbench_table_pages(table, scale);
      for (uint64_t p = 0; p < pages; ++p) tab.pages.emplace_back(&procs, WaitEvent::kBufferContent);
      for (uint64_t r = 0; r < tab.rows; ++r) tab.tuple_locks.emplace_back(&procs, WaitEvent::kLockTuple);
    }
  }

  uint64_t rows(PgbenchTable table) { return table_of(table).rows; }

  // What one change_row met.
  struct RowChange {
    uint32_t waits = 0;      // for the tuple lock or the holder
    bool relocked = false;   // TM_Updated without a wait: the row's last updater had ended, but
                             // after the statement's snapshot
  };

  // Changes row `row` of `table` (tellers or branches) for the client's transaction `xid`:
  // waits while another transaction in progress holds it, then, under the page's content lock,
  // marks it as this transaction's and calls change(relock). relock: READ COMMITTED's
  // EvalPlanQual locks the newest version first (TM_Updated), because the row was found taken
  // at least once or because its last updater, ended now, is one the statement's snapshot
  // does not see (visible(xid) false: it committed after the snapshot).
  template <class Change, class Visible>
  RowChange change_row(Proc<P>& me, PgbenchTable table, uint64_t row, Xid xid, Change&& change,
                       Visible&& visible) {
    Table& tab = table_of(table);
    LWLock<P>& page = tab.pages[row / tab.rows_per_page].lock;
    Slot& slot = tab.slots[row];
    page.acquire(me, kLwShared);  // the index scan's heap fetch
    page.release(me);
    const uint64_t mine = pack(xid, me.id.value);
    RowChange met;
    LWLock<P>* tuple_lock = nullptr;  // heap_acquire_tuplock's, held from the first conflict
    for (;;) {
      page.acquire(me, kLwExclusive);
      const uint64_t xmax = slot.value.get();
      if (xmax == 0 || xmax == mine || !in_progress(xmax)) {
        met.relocked = met.waits == 0 && xmax != 0 && xmax != mine && !visible(Xid{uint32_t(xmax >> 32)});
        hold_xact_lock(me, xid);
        slot.value.set(mine);
        change(met.waits != 0 || met.relocked);
        page.release(me);
        if (tuple_lock != nullptr) tuple_lock->release(me);  // UnlockTupleTuplock
        return met;
      }
      page.release(me);
      if (tuple_lock == nullptr) {  // queue behind earlier waiters of the row (Lock:tuple)
        tuple_lock = &tab.tuple_locks[row].lock;
        tuple_lock->acquire(me, kLwExclusive);
        ++met.waits;
        continue;  // the row may have changed hands while this client queued: look again
      }
      wait_for_transaction(me, xmax);
      ++met.waits;
    }
  }

  // The transaction's end (LockReleaseAll): wakes whoever waits for it. Call after the commit
  // record, the CLOG and the ProcArray, as PostgreSQL releases its locks after them.
  void end_transaction(Proc<P>& me) {
    XactLock& x = xact_[static_cast<uint32_t>(me.id.value)];
    if (!x.held) return;
    x.held = false;
    x.lock.release_clear_var(me, VarProtocol::kAtomic, x.xid, 0);
  }

 private:
  struct alignas(64) XactLock {
    explicit XactLock(ProcTable<P>* procs) : lock(procs, WaitEvent::kLockTransactionId) {}
    LWLock<P> lock;
    LockVar<P> xid;     // the xid the lock stands for while held; 0 after the release
    bool held = false;  // owner-local: taken in this transaction
  };
  struct alignas(64) LineLock {  // an LWLock on a cache line of its own
    LineLock(ProcTable<P>* procs, WaitEvent tranche) : lock(procs, tranche) {}
    LWLock<P> lock;
  };
  struct Slot {
    typename P::template Shared<uint64_t> value{0};
  };
  struct Table {
    uint64_t rows = 0;
    uint32_t rows_per_page = 1;
    AlignedArray<Slot> slots;
    std::deque<LineLock> pages;        // content locks (LWLock:BufferContent)
    std::deque<LineLock> tuple_locks;  // one per row, a stand-in for one per tuple version
  };

  static uint64_t pack(Xid xid, int32_t procno) {
    return (uint64_t{xid.value} << 32) | (static_cast<uint32_t>(procno) + 1u);
  }
  XactLock& holder_of(uint64_t xmax) { return xact_[static_cast<uint32_t>(xmax & 0xFFFFFFFFu) - 1]; }
  bool in_progress(uint64_t xmax) {
    return holder_of(xmax).xid.atomic_value.load() == (xmax >> 32);
  }

  void hold_xact_lock(Proc<P>& me, Xid xid) {
    XactLock& x = xact_[static_cast<uint32_t>(me.id.value)];
    if (x.held) return;
    x.lock.acquire(me, kLwExclusive);  // only its owner takes it: never waits
    x.xid.atomic_value.exchange(xid.value);
    x.held = true;
  }

  // XactLockTableWait: until the holder's transaction `xmax >> 32` ends.
  void wait_for_transaction(Proc<P>& me, uint64_t xmax) {
    XactLock& x = holder_of(xmax);
    uint64_t seen = 0;
    x.lock.wait_for_var(me, VarProtocol::kAtomic, x.xid, xmax >> 32, &seen);
  }

  Table& table_of(PgbenchTable table) {
    return table == PgbenchTable::kTellers ? tables_[0] : tables_[1];
  }

  std::deque<XactLock> xact_;
  Table tables_[2];
};

}  // namespace walbench
