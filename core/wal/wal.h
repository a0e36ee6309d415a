// The shared WAL model (PostgreSQL's XLogCtl): the buffer ring, page initialisation and eviction,
// copying records into pages, the writer and flush with group commit.
//
// Origin: PostgreSQL access/transam/xlog.c as of 9.4-17 (PROTOCOLS.md section 1):
// CopyXLogRecordToWAL, GetXLogBuffer, AdvanceXLInsertBuffer (WALBufMappingLock, 9a20a9b21b),
// XLogWrite, XLogFlush (group commit through LWLockAcquireOrWait, 9b38d46d9f), XLogSetAsyncXactLSN
// and XLogBackgroundFlush (see "THE WAL WRITER'S SIDE" below). LogwrtResult is kept in atomics as
// in 17+ (ee1cbe806d).
// Buffer initialisation is a runtime choice (BufferInit, config wal.buffer_init):
//   kMappingLock  AdvanceXLInsertBuffer under WALBufMappingLock (9.4-17, and 18.0 as released);
//   kLockFree     the lock-free AdvanceXLInsertBuffer of "Get rid of WALBufMappingLock" (Yura
//                 Sokolov, Alexander Korotkov; 6a2275b895 reverted by 3fb58625d1, re-committed as
//                 bc22dc0e0d for 18, reverted by c13070a27b / 2ce6abdf50: a condition-variable
//                 wait inside a critical section; PROTOCOLS.md section 5). See "LOCK-FREE BUFFER
//                 INITIALISATION" below.
//   One predictable branch per page advance picks the path (no virtual call, no template
//   parameter: a policy parameter would instantiate every WalCell twice more); the
//   mapping_lock path touches none of the lock-free state.
//
// The insertion strategy S decides how space is reserved and how insertion progress is known;
// this class calls back into it for exactly two things (NB: every strategy must provide both):
//   S::advertise(me, pos)              "I am about to block at pos; everything I reserved before
//                                       pos is copied" (WALInsertLockUpdateInsertingAt)
//   S::wait_insertions(wal, me, upto)  WaitXLogInsertionsToFinish: returns a position p >= upto
//                                       (clamped to the reserved end) before which every insertion
//                                       has finished.
//
// Shared state and what protects it:
//   pages_[]             page bytes. A page is written by inserters (disjoint byte ranges they
//                        reserved, plus the continuation fields of a page header their record
//                        continues onto) after xlblocks_ says it is initialised; read by the
//                        writer only below a wait_insertions() result.
//                        Page-aligned. Every write into it goes through copy_in (P::copy +
//                        P::touch_range kWrite), the writer's read through touch_range kRead,
//                        so the sim charges the lines other cores hold (sim.h "RANGES").
//   cached_page_[procno] GetXLogBuffer's backend-local cachedPage: owner only, not shared.
//   xlblock(slot)      atomic: end LSN of the page the slot holds, Invalid (0) while the slot is
//                        being (re)initialised.
//   initialized_upto_    kMappingLock: protected by buf_mapping_lock_ (exclusive).
//   initialize_reserved_, initialized_upto_lf_, init_cv_   kLockFree only: see below.
//   logwrt_rqst_write_   protected by info_lck_; async_xact_lsn_ likewise. Raised only at a page
//                        crossing (insert), by an eviction (AdvanceXLInsertBuffer) and by
//                        XLogWrite's end (W1); XLogFlush only reads it (F1).
//   log_write_result_, log_flush_result_   atomics, advanced only under wal_write_lock_, at the
//                        end of XLogWrite (W2); PG <= 16 form: written under info_lck_ too.
//   storage_             written only under wal_write_lock_.
//   device_              null, or a DeviceSync shared by several Wals (private streams, the
//                        `ideal` baseline): their fsyncs go through it, group-committed across
//                        the Wals; see DeviceSync.
//
// Invariants:
//   I1  A slot is re-initialised only after its old page is written (log_write_result_ >= old end).
//   I2  The writer writes [log_write_result_, upto) only with upto <= a wait_insertions() result.
//   I3  log_write_result_ and log_flush_result_ only grow; flush <= write.
//   I4  The record copy ends exactly at the reserved end (the MAXALIGN padding stays zero).
// PAGE INITIALISATION AND RING BYTES, AS THEY COST (AdvanceXLInsertBuffer, GetXLogBuffer,
// CopyXLogRecordToWAL and XLogWrite of PostgreSQL 17, checked against REL_17_STABLE xlog.c and
// bc22dc0e0d)
//   - init_page (both BufferInit paths): MemSet of the whole page, then the header fields, between
//     xlblocks = Invalid and xlblocks = new end (plain stores) with write barriers (compiler
//     barriers on x86: "XLBLOCKS STORES" below), under WALBufMappingLock
//     (kMappingLock) or by the page's reserver (kLockFree). The memset is a write into lines the
//     page's previous occupants hold (the clients that copied into it one lap ago, the
//     XLogWrite caller that read it): charged through P::touch_range (sim.h "RANGES").
//   - Eviction: the slot's old page unwritten -> raise LogwrtRqst, WaitXLogInsertionsToFinish,
//     WALWriteLock, XLogWrite up to the old page's end only (WriteRqst.Write = OldPageRqstPtr,
//     no flush), pgWalUsage.wal_buffers_full++; the writer's read of the ring is charged as
//     reading lines other cores wrote.
//   - GetXLogBuffer: the backend-local cachedPage fast path (no shared access), else one
//     xlblocks read and pg_read_barrier (a compiler barrier on x86: no cost).
//   - copy_record: every byte copied into the ring, including the continuation fields of a page
//     header, is a range write: a record sharing its first or last line with a neighbour
//     written by another core pays that line's transfer.
//   Departures: WAL page bytes are charged per 4 KiB block and per partial edge line, not per
//   line (sim.h "RANGES"); XLogWrite's closing update of LogwrtRqst under info_lck and the
//   checks of XLogCtl->InitializedFrom / RecoveryInProgress are not modelled.
//
// Lock order: buf_mapping_lock_ is never held while waiting for insertions or for
// wal_write_lock_ (AdvanceXLInsertBuffer releases it first). wait_insertions() is never called
// with wal_write_lock_ held (inserters may need that lock to evict a page). With a DeviceSync:
// wal_write_lock_ before the device's lock, never the other way round.
//
// FLUSH AND WRITE REQUESTS (xlog.c XLogFlush, XLogWrite, XLogInsertRecord; checked against
// REL_15 (15.3) and a post-17 master, whose XLogFlush/XLogWrite/WaitXLogInsertionsToFinish are
// 17's: ee1cbe806d "Operate XLogCtl->log{Write,Flush}Result with atomics", f3ff7bf83b
// logInsertResult; issue 10 item 1a). Two forms, chosen by the strategy
// (S::logwrt_before_pg17(): single_lock, and insert_locks / lockfree_reserve with xlog "pg16"
// (the default with insertingat "waitlist"), model PG <= 16; every other strategy PG 17):
//   F1 XLogFlush(rec) loop. WriteRqstPtr = rec, raised to LogwrtRqst.Write read under info_lck
//      (PG reads it; it never raises it: only page crossings, evictions and W1 do).
//      PG <= 16: the same info_lck section also copies LogwrtResult; done if rec <= Flush.
//      PG 17: RefreshXLogWriteResult (atomics, no lock) first; done if rec <= Flush; only then
//      info_lck for LogwrtRqst.Write.
//   F2 insertpos = WaitXLogInsertionsToFinish(WriteRqstPtr) (the strategy's wait_insertions:
//      PG 17 returns the monotonic logInsertResult, which may be beyond WriteRqstPtr).
//   F3 LWLockAcquireOrWait(WALWriteLock); not taken: someone flushed, loop to F1.
//   F4 Recheck LogwrtResult (holding WALWriteLock, no info_lck); done if flushed.
//   F5 XLogWrite(Write = Flush = insertpos): everything finished is written and fsynced, so
//      one fsync covers every record inserted before it (group flush). commit_delay: not
//      modelled (0, PostgreSQL's default).
//   XLogWrite (write_locked) works on a local LogwrtResult and publishes at its end:
//   W1 under info_lck: LogwrtRqst.Write = max(LogwrtRqst.Write, LogwrtResult.Write).
//   W2 PG <= 16: XLogCtl->LogwrtResult = LogwrtResult inside that same info_lck section.
//      PG 17: after it, pg_atomic_write_u64(logWriteResult), pg_write_barrier,
//      pg_atomic_write_u64(logFlushResult): plain stores (release stores here).
//   A flusher therefore waits only for insertions below its own record or below what a page
//   crossing, an eviction or a completed write put into LogwrtRqst.Write, never for the later
//   records of other flushers (the model before issue 10 raised LogwrtRqst.Write to rec).
//   Departures: LogwrtRqst.Flush is not kept (nobody reads it here); the backend-local
//   LogwrtResult copy and its quick exit before the loop are not modelled (F1's read stands for
//   it); XLogWrite writes in runs that neither wrap the ring nor cross a segment instead of
//   page by page, with one pwrite per run.
//
// THE WAL WRITER'S SIDE (PostgreSQL 9.6+, xlog.c XLogSetAsyncXactLSN / XLogBackgroundFlush,
// postmaster/walwriter.c; wal_writer_flush_after is 4de82f7d7c5, 9.6; PROTOCOLS.md section 7)
//   insert()                After a record that crossed a page boundary, raise LogwrtRqst.Write
//                           to its end under info_lck (XLogInsertRecord), so the writer knows
//                           which pages are complete.
//   set_async_xact_lsn()    Raise asyncXactLSN under info_lck; if it moved, tell the caller to
//                           wake the writer (SetLatch) when wal_writer_flush_after is 0 or at
//                           least that many pages lie between the flushed position and the
//                           commit. (The writer's hibernation after 50 idle loops, which also
//                           makes this wake it, is not modelled: the writer never hibernates.)
//   background_flush()      XLogBackgroundFlush, one writer round:
//     1. WriteRqst = LogwrtRqst.Write backed off to a page boundary: whole, complete pages.
//     2. If that is already flushed, WriteRqst = asyncXactLSN (a partial page).
//     3. Nothing beyond the flushed position: return false.
//     4. Flush too if wal_writer_flush_after is 0 or this is the writer's first flush, or
//        wal_writer_delay passed since its last flush, or at least wal_writer_flush_after pages
//        lie between the flushed position and WriteRqst; otherwise write only.
//     5. wait_insertions(WriteRqst), then under wal_write_lock_ write (and fsync) up to it
//        unless someone did.
//     6. preinitialise(): AdvanceXLInsertBuffer(InvalidXLogRecPtr, opportunistic = true)
//        initialises the ring ahead of the inserters, through whichever BufferInit the WAL uses,
//        stopping at the first slot whose old page is not written yet (it never writes);
//        counted in pages_preinitialised.
//   The pieces (background_request, background_write, preinitialise) are public so that one
//   writer can serve several private streams with one fsync (core/cell/wal_cell.h).
//
// LOCK-FREE BUFFER INITIALISATION (kLockFree; bc22dc0e0d, "Get rid of WALBufMappingLock")
//   Many clients initialise different pages of the ring at once. B = page size, N = wal_buffers.
//   Shared state:
//     initialize_reserved_   P::Atomic (InitializeReserved): start of the next page nobody has
//                            reserved yet; moved only by CAS, one page at a time.
//     initialized_upto_lf_   P::Atomic (InitializedUpTo): every page below it is initialised;
//                            moved only by the CAS chain (step 6).
//     InitializedFrom        0 here (the WAL starts at LSN 0), so a page starting at R replaces
//                            the page ending at R + B - N*B, or none while R < (N-1)*B + B.
//     init_cv_               ConditionVariable (InitializedUpToCondVar, wait event
//                            IPC:WALBufferInit): core/locks/condition_variable.h, sleeping on a
//                            per-client latch semaphore, so waiters give up the CPU.
//   advance_buffer_lockfree(upto):
//     1. R = initialize_reserved_; while upto >= R:
//     2.   old_end = R + B - N*B if R + B > N*B, else 0 (the slot's previous occupant).
//     3.   CAS initialize_reserved_ R -> R + B; on failure R is the current value: retry (BI1).
//     4.   Wait on init_cv_ until initialized_upto_lf_ >= old_end; then xlblocks[slot] ==
//          old_end (BI3). If the old page is unwritten: raise LogwrtRqst, wait_insertions(old_end),
//          WALWriteLock and write unless someone did (I1, as in the mapping-lock path).
//     5.   xlblocks[slot] = Invalid; barrier; zero + header; barrier; xlblocks[slot] = R + B (BI4).
//     6.   CAS chain: b = R; while CAS(initialized_upto_lf_, b -> b + B) succeeds: b += B; if the
//          slot of b does not hold b + B yet, broadcast init_cv_ and stop (BI5).
//          (R is not re-read: the next CAS in step 3 fails once and fetches it, as in PG.)
//     7. Wait on init_cv_ until initialized_upto_lf_ > upto (BI6).
//   Invariants (asserts cite them):
//     BI1 Each page is reserved exactly once: the client whose CAS moved initialize_reserved_
//         from R to R + B is the only one that initialises page R; it only grows.
//     BI2 initialized_upto_lf_ only grows, is a page boundary, and is <= initialize_reserved_;
//         every page below it has been initialised (its slot holds it, or a later lap's page
//         once it was written).
//     BI3 Page R's slot is touched only once initialized_upto_lf_ >= old_end: the previous
//         occupant is fully initialised and counted, so two laps never initialise one slot at
//         once, and the slot then holds exactly old_end (checked).
//     BI4 A slot's xlblocks goes Invalid -> new end only around a complete initialisation, with
//         barriers, so GetXLogBuffer never uses a half-initialised page.
//     BI5 initialized_upto_lf_ moves from b to b + B only after page b's xlblocks holds b + B.
//         Progress (the proof in bc22dc0e0d's comment): if the chain stopped at k < the highest
//         initialised page, the client that stopped read xlblocks of k before page k's owner set
//         it (both with barriers), so that owner's own CAS(k -> k + B) comes later and succeeds.
//         Whoever stops the chain broadcasts, so every waiter whose target it passed is woken.
//     BI6 advance_buffer returns only with initialized_upto_lf_ > upto, hence (BI2) with upto's
//         page initialised; get_buffer re-checks xlblocks.
//   Lock order: no lock is held while waiting on init_cv_ except the caller's own insertion lock
//   (whose insertingAt it advertised first), exactly as in PostgreSQL 18devel; WALWriteLock is
//   taken with nothing else held. Hazard (why it was reverted): PostgreSQL's CV sleep inside a
//   critical section does not PANIC on postmaster death; walbench has no postmaster.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "core/counter.h"
#include "core/locks/condition_variable.h"
#include "core/platform/platform.h"
#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/types.h"

namespace walbench {

#define WALBENCH_CHECK(cond, inv)                                                         \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "walbench: invariant %s violated at %s:%d: %s\n", inv, __FILE__, \
                   __LINE__, #cond);                                                      \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// Model-level counters (instrumentation, written under the lock named; core/counter.h: any
// thread may snapshot them while clients run).
struct WalCounters {
  Counter writes;               // storage write calls (under WALWriteLock)
  Counter fsyncs;               // under WALWriteLock
  Counter wal_buffers_full;     // writes forced by a page eviction (pg_stat_wal)
  Counter pages_initialised;    // under WALBufMappingLock (kLockFree: summed by counters())
  Counter pages_preinitialised; // of those, by the WAL writer ahead of inserters (writer only)
  Counter flush_calls;          // XLogFlush calls that had to do something (no common lock: may
                                // lose an increment under a race, so approximate)
};

// How buffer pages are initialised ahead of inserters (config wal.buffer_init).
enum class BufferInit : uint8_t {
  kMappingLock,  // "mapping_lock": AdvanceXLInsertBuffer under WALBufMappingLock
  kLockFree,     // "lockfree": InitializeReserved / InitializedUpTo / CAS chain (bc22dc0e0d)
};

inline const char* buffer_init_name(BufferInit b) {
  return b == BufferInit::kLockFree ? "lockfree" : "mapping_lock";
}

// NB: must accept exactly what harness/config.cc allows for wal.buffer_init.
inline BufferInit parse_buffer_init(const std::string& s) {
  if (s == "mapping_lock") return BufferInit::kMappingLock;
  if (s == "lockfree") return BufferInit::kLockFree;
  throw std::invalid_argument("wal.buffer_init \"" + s + "\" is not implemented");
}

// One storage device under several WALs: the private streams of the `ideal` baseline
// (strategies/ideal/ideal.h). A stream that needs its WAL durable takes a ticket, writes its
// pages, and calls sync(ticket). Group commit as in XLogFlush, but lighter than queueing on
// WALWriteLock: callers push themselves on a list (one exchange, not a CAS loop: a CAS loop
// retried by dozens of clients woken by the same fsync costs a transfer per retry, quadratic in
// the group, and made the device slower than the shared WAL's); the one that found it empty
// is the leader, which takes the device lock (one fsync at a time), detaches the list, issues
// one fsync for all of them and wakes them; the others sleep on their semaphore until woken.
// (The pattern of ProcArrayGroupClearXid / TransactionGroupUpdateXidStatus, 0e141c0fbb /
// baaf272ac9; PostgreSQL has no such thing for WAL, which is why it is a bound's device.)
//   first_               list head (procno), moved by exchange (push and detach).
//   slots_[procno]       member (set by the owner before its push, cleared by the leader that
//                        woke it), next (kPendingProcNo from before the push until the owner
//                        stores the head its push replaced; reset by the leader), ticket (the
//                        owner's, read by the leader).
//   lock_                the device lock: held by a leader across its fsync.
//   syncs_started_       incremented under lock_ just before the fsync.
//   syncs_done_          set to the fsync's number under lock_ once it returned; only grows.
//   D1 A ticket taken when syncs_started_ == k is k + 1: fsync k+1 and later began after it.
//   D2 XLogFlush takes its ticket first thing, right after the commit record was inserted, and
//      counts as covered by any fsync that began after that, although its own pages reach the
//      storage only before it returns. The shared WAL's flusher writes every record inserted
//      before it looked (WaitXLogInsertionsToFinish) and then fsyncs, so this covers at least
//      the records that the shared WAL would, without one client touching another's stream:
//      optimistic by the time of one write, as a bound may be. On the sim the written bytes
//      join the device's queue when written, and the next fsync pays for them.
//   D3 Every member of a detached list pushed itself after taking its ticket, so before the
//      leader's fetch_add: the leader's fsync number is >= every member's ticket.
//   D4 A follower returns only after seeing member == 0, which its leader stores after the
//      fsync; stray semaphore posts (LWLock wake-ups) are counted and re-posted, as in
//      clog_group_update.
// Valid only where one fsync covers every stream: the sim's device is one FIFO for all storage
// (core/platform/sim.h), and a "memory" storage's sync is a counter. File storage keeps each
// stream in files of its own, which one fdatasync does not cover; `ideal` refuses that cell.
template <class P>
class DeviceSync {
 public:
  explicit DeviceSync(ProcTable<P>& procs)
      : procs_(procs), lock_(&procs, WaitEvent::kWalWrite), slots_(new Slot[procs.size()]) {}

  uint64_t ticket() const { return syncs_started_.load() + 1; }  // D1

  // Returns once an fsync numbered at least ticket completed (0: a ticket taken now).
  // `storage` is the caller's: its sync() stands for the device's cache flush.
  void sync(Proc<P>& me, Storage& storage, uint64_t ticket = 0) {
    if (ticket == 0) ticket = this->ticket();
    const uint32_t self = static_cast<uint32_t>(me.id.value);
    Slot& mine = slots_[self];
    while (syncs_done_.load() < ticket) {
      mine.member.store(1);
      mine.ticket.set(ticket);
      mine.next.store(kPendingProcNo);
      const uint32_t head = first_.exchange(self);
      mine.next.store(head);
      if (head != kInvalidProcNo) {  // follower: D4
        me.set_wait(WaitEvent::kWalWrite);
        uint32_t extra = 0;
        for (;;) {
          me.sem.wait();
          if (mine.member.load() == 0) break;
          ++extra;
        }
        me.clear_wait();
        for (uint32_t i = 0; i < extra; ++i) me.sem.post();
        continue;  // D3: covered now
      }
      lead(me, storage);
    }
  }

  // After the run.
  uint64_t syncs() const { return syncs_; }

 private:
  struct alignas(64) Slot {
    typename P::template Atomic<uint32_t> member{0};
    typename P::template Atomic<uint32_t> next{kInvalidProcNo};
    typename P::template Shared<uint64_t> ticket{0};
  };

  static constexpr uint32_t kPendingProcNo = kInvalidProcNo - 1;

  // A member's next, once its owner stored it (a moment after its push).
  uint32_t next_of(uint32_t procno) {
    uint32_t next = slots_[procno].next.load();
    while (next == kPendingProcNo) next = slots_[procno].next.wait_while_eq(kPendingProcNo);
    return next;
  }

  void lead(Proc<P>& me, Storage& storage) {
    lock_.acquire(me, kLwExclusive);
    const uint32_t list = first_.exchange(kInvalidProcNo);
    uint64_t highest = 0;
    for (uint32_t cur = list; cur != kInvalidProcNo; cur = next_of(cur))
      highest = std::max(highest, slots_[cur].ticket.get());
    if (syncs_done_.load() < highest) {  // else an fsync that began after them all is done
      const uint64_t number = syncs_started_.fetch_add(1) + 1;  // D3: >= highest
      me.set_wait(WaitEvent::kWalIoSync);
      storage.sync();
      charge_storage_sync<P>();
      me.clear_wait();
      ++syncs_;  // under lock_
      syncs_done_.store(number);
    }
    lock_.release(me);
    for (uint32_t cur = list; cur != kInvalidProcNo;) {
      Slot& m = slots_[cur];
      const uint32_t next = next_of(cur);
      m.next.store(kInvalidProcNo);
      m.member.store(0);  // D4
      if (cur != static_cast<uint32_t>(me.id.value)) procs_[static_cast<int32_t>(cur)].sem.post();
      cur = next;
    }
  }

  ProcTable<P>& procs_;
  alignas(128) LWLock<P> lock_;
  alignas(128) typename P::template Atomic<uint32_t> first_{kInvalidProcNo};
  alignas(128) typename P::template Atomic<uint64_t> syncs_started_{0};
  alignas(128) typename P::template Atomic<uint64_t> syncs_done_{0};
  std::unique_ptr<Slot[]> slots_;
  Counter syncs_;  // instrumentation, under lock_ (core/counter.h: read while clients run)
};

template <class P, class S>
class Wal {
 public:
  // Without a BufferInit the WAL uses WALBufMappingLock.
  template <class... StrategyArgs>
  Wal(const WalGeometry& geom, uint32_t num_buffers, Storage& storage, ProcTable<P>& procs,
      StrategyArgs&&... strategy_args)
      : Wal(geom, num_buffers, storage, procs, BufferInit::kMappingLock,
            std::forward<StrategyArgs>(strategy_args)...) {}

  // NB: make_wal_cell (strategies/make_cell.h) passes the cell's BufferInit as the first of the
  // arguments WalCell forwards here; the remaining ones go to the strategy's constructor.
  template <class... StrategyArgs>
  Wal(const WalGeometry& geom, uint32_t num_buffers, Storage& storage, ProcTable<P>& procs,
      BufferInit buffer_init, StrategyArgs&&... strategy_args)
      : strategy(procs, std::forward<StrategyArgs>(strategy_args)...),
        geom_(geom),
        num_buffers_(num_buffers),
        pages_(new (std::align_val_t{kPagesAlign}) uint8_t[size_t{num_buffers} * geom.page_size]()),
        cached_page_(new CachedPage[procs.size()]),
        zero_page_(new uint8_t[geom.page_size]()),
        xlblocks_(new XlBlocksLine[(num_buffers + kXlBlocksPerLine - 1) / kXlBlocksPerLine]),
        storage_(storage),
        buffer_init_(buffer_init),
        buf_mapping_lock_(&procs, WaitEvent::kWalBufMapping),
        init_cv_(procs, WaitEvent::kWalBufferInit),
        num_procs_(procs.size()),
        lf_pages_by_proc_(new PageCount[procs.size()]),
        wal_write_lock_(&procs, WaitEvent::kWalWrite),
        info_lck_(WaitEvent::kInfoSpin),
        logwrt_before_pg17_(logwrt_before_pg17_of(strategy)) {}

  S strategy;

  const WalGeometry& geom() const { return geom_; }
  uint32_t num_buffers() const { return num_buffers_; }
  Storage& storage() { return storage_; }
  BufferInit buffer_init() const { return buffer_init_; }
  // PostgreSQL's fsync GUC: off, a flush makes the WAL "flushed" without issue_xlog_fsync (no
  // storage sync, no simulated device latency). Set before the clients start.
  void set_fsync(bool on) { fsync_ = on; }
  // wal_writer_flush_after in pages (0: every async commit wakes the writer). Set before the
  // clients start.
  void set_writer_flush_after(uint32_t pages) { writer_flush_after_ = pages; }
  // Route this WAL's fsyncs through a device shared with other WALs (private streams). Set
  // before the clients start; the device outlives the WAL.
  void set_device(DeviceSync<P>* device) { device_ = device; }
  // A snapshot; may be taken while clients run (core/counter.h).
  WalCounters counters() const {
    WalCounters c = counters_;
    if (buffer_init_ == BufferInit::kLockFree) {
      c.pages_initialised = 0;
      for (uint32_t i = 0; i < num_procs_; ++i) c.pages_initialised += lf_pages_by_proc_[i].n;
    }
    return c;
  }
  // Inspection for tests and instrumentation (racy while clients run, but each value is read
  // atomically where the design makes it atomic).
  Lsn initialized_upto() const {  // InitializedUpTo (kMappingLock: read with nobody running)
    return Lsn{buffer_init_ == BufferInit::kLockFree ? initialized_upto_lf_.load()
                                                     : initialized_upto_.get()};
  }
  Lsn initialize_reserved() const {  // InitializeReserved (kLockFree; kMappingLock: = upto)
    return buffer_init_ == BufferInit::kLockFree ? Lsn{initialize_reserved_.load()}
                                                 : initialized_upto();
  }
  uint64_t xlblocks(uint64_t slot) const { return xlblock(slot).load(); }
  Lsn log_write_result() const { return Lsn{log_write_result_.load()}; }
  Lsn log_flush_result() const { return Lsn{log_flush_result_.load()}; }
  Lsn logwrt_rqst_write() const { return Lsn{logwrt_rqst_write_.get()}; }  // without info_lck
  // Whether XLogFlush / XLogWrite run in their PG <= 16 form ("FLUSH AND WRITE REQUESTS").
  bool logwrt_before_pg17() const { return logwrt_before_pg17_; }

  // Insert one record (header + payload built by build_record, CRC of the payload in
  // payload_crc). Returns where it went.
  struct Inserted {
    Lsn start;
    Lsn end;
  };
  Inserted insert(Proc<P>& me, uint8_t* record, uint32_t len, uint32_t payload_crc) {
    const Inserted r = strategy.insert(*this, me, record, len, payload_crc);
    // XLogInsertRecord, after the insertion lock is released: a record that crossed a page
    // boundary completed a page; say so in LogwrtRqst.Write (the WAL writer writes up to it).
    if (r.start.value / geom_.page_size != r.end.value / geom_.page_size)
      raise_write_request(me, r.end);
    return r;
  }

  // CopyXLogRecordToWAL: copy a finished record (prev and CRC set) into the reserved range
  // [start, end) of usable byte positions. Called by strategies with their insertion lock held.
  void copy_record(Proc<P>& me, BytePos start, BytePos end, const uint8_t* record, uint32_t len) {
    Lsn ptr = geom_.bytepos_to_lsn(start);
    uint8_t* dst = get_buffer(me, ptr);
    uint32_t freespace = geom_.page_size - static_cast<uint32_t>(ptr.value % geom_.page_size);
    uint32_t written = 0;
    while (len - written > freespace) {
      copy_in(dst, record + written, freespace);
      written += freespace;
      ptr += freespace;  // now at a page boundary
      dst = get_buffer(me, ptr);
      // The record continues on this page: say so in its header (xlp_rem_len, CONTRECORD).
      const uint32_t rem_len = len - written;
      uint16_t info;
      std::memcpy(&info, dst + offsetof(PageHeader, info), sizeof info);
      info |= kPageFirstIsContRecord;
      copy_in(dst + offsetof(PageHeader, info), &info, sizeof info);
      copy_in(dst + offsetof(PageHeader, rem_len), &rem_len, sizeof rem_len);
      const uint32_t hdr = geom_.header_size(ptr);
      ptr += hdr;
      dst += hdr;
      freespace = geom_.page_size - hdr;
    }
    copy_in(dst, record + written, len - written);
    ptr += len - written;
    // I4: the copy ends where the reservation says (before MAXALIGN padding).
    WALBENCH_CHECK(geom_.lsn_to_bytepos(ptr).value + (max_align(len) - len) == end.value, "I4");
  }

  // GetXLogBuffer: pointer to the byte at ptr in the ring, initialising (and first evicting)
  // the page if the slot does not hold it yet.
  //   Fast path (as PostgreSQL's): the page this backend used last (cachedPage) is still in
  //   its slot, with no shared access at all: a page cannot be evicted while an insertion that
  //   reserved bytes on it is unfinished (I1 + the writer waits for insertions, I2), and this
  //   backend's reservation on it is. Otherwise read xlblocks; if it holds the page, a read
  //   barrier (pg_read_barrier: a compiler barrier on x86, so no P operation) orders the
  //   xlblocks read before the page bytes (BI4).
  uint8_t* get_buffer(Proc<P>& me, Lsn ptr) {
    const uint64_t page_no = ptr.value / geom_.page_size;
    const uint64_t slot = page_no % num_buffers_;
    CachedPage& cached = cached_page_[static_cast<uint32_t>(me.id.value)];
    if (page_no == cached.page)
      return pages_.get() + slot * geom_.page_size + ptr.value % geom_.page_size;
    const uint64_t expected_end = (page_no + 1) * geom_.page_size;
    if (xlblock(slot).load() != expected_end) {
      // Advertise how far we got before possibly blocking (358cde320b: the page start when
      // ptr is just past the header, so a flusher waiting for the previous page proceeds).
      Lsn upto = ptr;
      const uint64_t off = ptr.value % geom_.page_size;
      const uint64_t page_start = ptr.value - off;
      if (off == geom_.header_size(Lsn{page_start})) upto = Lsn{page_start};
      strategy.advertise(me, upto);
      advance_buffer(me, ptr);
      WALBENCH_CHECK(xlblock(slot).load() == expected_end, "GetXLogBuffer: page not ready");
    }
    // pg_read_barrier() after the xlblocks check: the load above is an acquire (seq_cst) load,
    // which already orders the page reads after it (on x86 pg_read_barrier is a compiler barrier).
    cached.page = page_no;
    return pages_.get() + slot * geom_.page_size + ptr.value % geom_.page_size;
  }

  // AdvanceXLInsertBuffer(upto, opportunistic=false): make the page holding upto initialised.
  void advance_buffer(Proc<P>& me, Lsn upto) {
    if (buffer_init_ == BufferInit::kLockFree)
      advance_buffer_lockfree(me, upto, /*opportunistic=*/false);
    else
      advance_buffer_mapping_lock(me, upto, /*opportunistic=*/false);
  }

  // AdvanceXLInsertBuffer(InvalidXLogRecPtr, opportunistic=true), the WAL writer's call after
  // XLogBackgroundFlush: initialise as many pages ahead of the inserters as need no write.
  void preinitialise(Proc<P>& me) {
    if (buffer_init_ == BufferInit::kLockFree)
      advance_buffer_lockfree(me, kInvalidLsn, /*opportunistic=*/true);
    else
      advance_buffer_mapping_lock(me, kInvalidLsn, /*opportunistic=*/true);
  }

  // AdvanceXLInsertBuffer under WALBufMappingLock (9.4-17). opportunistic: stop at the first
  // slot whose old page is unwritten instead of writing it (and ignore upto).
  void advance_buffer_mapping_lock(Proc<P>& me, Lsn upto, bool opportunistic) {
    buf_mapping_lock_.acquire(me, kLwExclusive);
    while (opportunistic || upto.value >= initialized_upto_.get()) {
      const uint64_t new_start = initialized_upto_.get();
      const uint64_t slot = (new_start / geom_.page_size) % num_buffers_;
      const uint64_t old_end = xlblock(slot).load();
      if (log_write_result_.load() < old_end) {
        if (opportunistic) break;
        // The old page is not written yet: write it out first, without the mapping lock.
        buf_mapping_lock_.release(me);
        raise_write_request(me, Lsn{old_end});
        const Lsn finished = strategy.wait_insertions(*this, me, Lsn{old_end});
        WALBENCH_CHECK(finished.value >= old_end, "I2 (eviction)");
        wal_write_lock_.acquire(me, kLwExclusive);
        if (log_write_result_.load() < old_end) {
          ++counters_.wal_buffers_full;
          write_locked(me, Lsn{old_end}, /*flush=*/false);
        }
        wal_write_lock_.release(me);
        buf_mapping_lock_.acquire(me, kLwExclusive);
        continue;
      }
      // I1 holds: the old page is written. Re-initialise the slot (XLBLOCKS STORES below).
      xlblock(slot).store(0, std::memory_order_release);
      write_barrier();
      init_page(slot, new_start);
      write_barrier();
      xlblock(slot).store(new_start + geom_.page_size, std::memory_order_release);
      initialized_upto_.set(new_start + geom_.page_size);
      ++counters_.pages_initialised;
      if (opportunistic) ++counters_.pages_preinitialised;
    }
    buf_mapping_lock_.release(me);
  }

  // The lock-free AdvanceXLInsertBuffer (bc22dc0e0d); steps and BI<n> in the block at the top.
  // opportunistic (the WAL writer): before reserving a page whose slot's old page is unwritten,
  // stop, and wait only for the pages reserved so far (upto = that page - 1, as bc22dc0e0d).
  void advance_buffer_lockfree(Proc<P>& me, Lsn upto, bool opportunistic) {
    const uint64_t page = geom_.page_size;
    const uint64_t ring = uint64_t{num_buffers_} * page;
    uint64_t reserved = initialize_reserved_.load();  // 1
    while (opportunistic || upto.value >= reserved) {
      const uint64_t old_end = reserved + page > ring ? reserved + page - ring : 0;  // 2
      if (opportunistic && log_write_result_.load() < old_end) {
        upto = Lsn{reserved - 1};  // old_end > 0, so reserved >= one ring
        break;
      }
      if (!initialize_reserved_.compare_exchange(reserved, reserved + page)) continue;  // 3, BI1
      const uint64_t new_start = reserved;
      const uint64_t slot = (new_start / page) % num_buffers_;
      // 4: the slot's previous occupant must be initialised (and counted) first.
      init_cv_.wait_until(me, [&] { return initialized_upto_lf_.load() >= old_end; });
      WALBENCH_CHECK(xlblock(slot).load() == old_end, "BI3");
      if (log_write_result_.load() < old_end) {
        raise_write_request(me, Lsn{old_end});
        if (log_write_result_.load() < old_end) {
          const Lsn finished = strategy.wait_insertions(*this, me, Lsn{old_end});
          WALBENCH_CHECK(finished.value >= old_end, "I2 (eviction)");
          wal_write_lock_.acquire(me, kLwExclusive);
          if (log_write_result_.load() < old_end) {
            ++counters_.wal_buffers_full;  // under wal_write_lock_
            write_locked(me, Lsn{old_end}, /*flush=*/false);
          }
          wal_write_lock_.release(me);
        }
      }
      WALBENCH_CHECK(log_write_result_.load() >= old_end, "I1");
      // 5: BI4, with PostgreSQL's plain stores and write barriers (XLBLOCKS STORES below). The
      // CAS of step 6 is a full barrier (lock cmpxchg): it orders the last store before it.
      xlblock(slot).store(0, std::memory_order_release);
      write_barrier();
      init_page(slot, new_start);
      write_barrier();
      xlblock(slot).store(new_start + page, std::memory_order_release);
      ++lf_pages_by_proc_[static_cast<uint32_t>(me.id.value)].n;
      if (opportunistic) ++counters_.pages_preinitialised;  // the WAL writer only
      // 6: the CAS chain (BI5).
      uint64_t begin = new_start;
      uint64_t end = new_start + page;
      while (initialized_upto_lf_.compare_exchange(begin, end)) {
        begin = end;
        end = begin + page;
        if (xlblock((begin / page) % num_buffers_).load() != end) {
          init_cv_.broadcast(me);
          break;
        }
      }
    }
    // 7: pages below upto may be reserved by others and still being initialised (BI6).
    init_cv_.wait_until(me, [&] { return initialized_upto_lf_.load() > upto.value; });
  }

  // XLBLOCKS STORES. Both AdvanceXLInsertBuffer paths publish a slot as PostgreSQL 17/18 does
  // (xlog.c AdvanceXLInsertBuffer, REL_17_STABLE and bc22dc0e0d alike):
  //   pg_atomic_write_u64(&xlblocks[nextidx], InvalidXLogRecPtr); pg_write_barrier();
  //   MemSet + header; pg_write_barrier(); pg_atomic_write_u64(&xlblocks[nextidx], NewPageEndPtr);
  // pg_atomic_write_u64 has "no barrier semantics" (atomics.h): a plain mov on x86, a
  // store(v, release) here (platform.h STORE ORDER: the sim buffers it). pg_write_barrier is
  // P::write_barrier (a compiler barrier on x86, arch-x86.h pg_write_barrier_impl: no fence to
  // charge). PG 15's form (`xlblocks[i] = NewPageEndPtr` after pg_write_barrier, no Invalid
  // store) costs the same on x86 but for the first store.
  static void write_barrier() { P::write_barrier(); }

  // NB: both AdvanceXLInsertBuffer paths initialise a slot here, between xlblocks = Invalid and
  // xlblocks = new end. MemSet(NewPage, 0, XLOG_BLCKSZ) then the header fields: a memset of the
  // whole page into lines that the page's previous occupants (the clients that copied into it
  // a lap ago, and the writer that read it) still hold, charged as such on the sim (RANGES).
  void init_page(uint64_t slot, uint64_t new_start) {
    uint8_t* dst = pages_.get() + slot * geom_.page_size;
    copy_in(dst, zero_page_.get(), geom_.page_size);
    uint8_t header[WalGeometry::kLongHeader] = {};
    init_page_header(header, Lsn{new_start}, geom_);
    copy_in(dst, header, geom_.header_size(Lsn{new_start}));
  }

  // Bytes written into the ring: the copy, and the coherence of the lines it writes.
  static void copy_in(uint8_t* dst, const void* src, size_t n) {
    P::copy(dst, src, n);
    P::touch_range(dst, n, RangeAccess::kWrite);
  }

  // XLogFlush(rec): make everything up to rec durable, with group commit ("FLUSH AND WRITE
  // REQUESTS" at the top: F1-F5). LogwrtRqst.Write is only read here, never raised.
  void flush(Proc<P>& me, Lsn rec) {
    const uint64_t device_ticket = device_ != nullptr ? device_->ticket() : 0;  // D2
    uint64_t write_rqst = rec.value;  // WriteRqstPtr: the target, may increase below
    for (;;) {
      if (logwrt_before_pg17_) {  // F1, PG <= 16: one info_lck section reads both
        info_lck_.acquire(me);
        write_rqst = std::max(write_rqst, logwrt_rqst_write_.get());
        const uint64_t flushed = log_flush_result_.load();
        info_lck_.release();
        if (flushed >= rec.value) return;
      } else {  // F1, PG 17: RefreshXLogWriteResult, then LogwrtRqst.Write under info_lck
        if (refresh_write_result().flush >= rec.value) return;
        info_lck_.acquire(me);
        write_rqst = std::max(write_rqst, logwrt_rqst_write_.get());
        info_lck_.release();
      }
      const Lsn insertpos = strategy.wait_insertions(*this, me, Lsn{write_rqst});  // F2
      if (!wal_write_lock_.acquire_or_wait(me, kLwExclusive)) continue;  // F3: someone flushed
      if (refresh_write_result().flush >= rec.value) {  // F4
        wal_write_lock_.release(me);
        return;
      }
      ++counters_.flush_calls;
      write_locked(me, insertpos, /*flush=*/true, device_ticket);  // F5: Write = Flush = insertpos
      wal_write_lock_.release(me);
      return;
    }
  }

  // Write (and optionally fsync) everything inserted up to upto, for the WAL writer and the
  // end of a run.
  void write_upto(Proc<P>& me, Lsn upto, bool flush_too) {
    const Lsn insertpos = strategy.wait_insertions(*this, me, upto);
    wal_write_lock_.acquire(me, kLwExclusive);
    if (log_write_result_.load() < insertpos.value ||
        (flush_too && log_flush_result_.load() < insertpos.value))
      write_locked(me, insertpos, flush_too);
    wal_write_lock_.release(me);
  }

  // XLogSetAsyncXactLSN: remember what the WAL writer must flush for async commits. Returns
  // whether to wake the writer (SetLatch): the LSN moved and wal_writer_flush_after is 0 or at
  // least that many pages are unflushed below it.
  bool set_async_xact_lsn(Proc<P>& me, Lsn lsn) {
    info_lck_.acquire(me);
    const uint64_t prev = async_xact_lsn_.get();
    if (prev < lsn.value) async_xact_lsn_.set(lsn.value);
    info_lck_.release();
    if (lsn.value <= prev) return false;  // someone asked for more already
    return writer_flush_after_ == 0 || pages_between(log_flush_result_.load(), lsn.value) >=
                                           writer_flush_after_;
  }

  // ---- XLogBackgroundFlush, in pieces ("THE WAL WRITER'S SIDE" at the top). ----

  // Steps 1-3: what one writer round would write: complete pages up to LogwrtRqst.Write, else
  // asyncXactLSN; kInvalidLsn when everything asked for is flushed already.
  Lsn background_request(Proc<P>& me) {
    info_lck_.acquire(me);
    uint64_t write = logwrt_rqst_write_.get();
    info_lck_.release();
    const uint64_t flushed = log_flush_result_.load();
    write -= write % geom_.page_size;  // 1
    if (write <= flushed) {            // 2
      info_lck_.acquire(me);
      write = async_xact_lsn_.get();
      info_lck_.release();
    }
    return write <= flushed ? kInvalidLsn : Lsn{write};  // 3
  }
  // Step 4's page count: pages between the flushed position and write (flushblocks).
  uint64_t pending_flush_pages(Lsn write) const {
    return pages_between(log_flush_result_.load(), write.value);
  }
  // Step 5: write up to `write` and, if flush, make it durable (through the DeviceSync if any).
  void background_write(Proc<P>& me, Lsn write, bool flush) {
    const Lsn finished = strategy.wait_insertions(*this, me, write);
    WALBENCH_CHECK(finished >= write, "I2 (background write)");
    wal_write_lock_.acquire(me, kLwExclusive);
    if (log_write_result_.load() < write.value || (flush && log_flush_result_.load() < write.value))
      write_locked(me, write, flush);
    wal_write_lock_.release(me);
  }
  // After a DeviceSync that began once this WAL was written up to `written`: it is durable.
  void mark_flushed(Proc<P>& me, Lsn written) {
    wal_write_lock_.acquire(me, kLwExclusive);
    WALBENCH_CHECK(written.value <= log_write_result_.load(), "I3 (mark_flushed)");
    if (log_flush_result_.load() < written.value)
      log_flush_result_.store(written.value, std::memory_order_release);  // pg_atomic_write_u64
    wal_write_lock_.release(me);
  }

  // The writer's memory between rounds (XLogBackgroundFlush's static lastflush).
  struct WriterClock {
    uint64_t last_flush_ns = 0;
    bool flushed_once = false;
  };
  // Step 4's decision; updates the clock when it says flush.
  static bool background_should_flush(WriterClock& clk, uint64_t now_ns, uint64_t delay_ns,
                                      uint32_t flush_after, uint64_t flushblocks) {
    const bool flush = flush_after == 0 || !clk.flushed_once ||
                       now_ns - clk.last_flush_ns >= delay_ns || flushblocks >= flush_after;
    if (flush) {
      clk.last_flush_ns = now_ns;
      clk.flushed_once = true;
    }
    return flush;
  }
  // XLogBackgroundFlush: one writer round (steps 1-6). Returns whether there was work.
  bool background_flush(Proc<P>& me, WriterClock& clk, uint64_t delay_ns, uint32_t flush_after) {
    const Lsn write = background_request(me);
    if (write == kInvalidLsn) return false;
    const bool flush =
        background_should_flush(clk, P::now_ns(), delay_ns, flush_after, pending_flush_pages(write));
    background_write(me, write, flush);
    preinitialise(me);
    return true;
  }
  Lsn async_xact_lsn(Proc<P>& me) {
    info_lck_.acquire(me);
    const Lsn l{async_xact_lsn_.get()};
    info_lck_.release();
    return l;
  }

 private:
  // RefreshXLogWriteResult (PG 17): logFlushResult, read barrier (a compiler barrier on x86),
  // logWriteResult.
  struct WriteResult {
    uint64_t write;
    uint64_t flush;
  };
  WriteResult refresh_write_result() const {
    const uint64_t flush = log_flush_result_.load();
    return {log_write_result_.load(), flush};
  }

  // Raise LogwrtRqst.Write to at least upto under info_lck (the page crossing in
  // XLogInsertRecord, the eviction in AdvanceXLInsertBuffer); returns max(upto, LogwrtRqst.Write).
  Lsn raise_write_request(Proc<P>& me, Lsn upto) {
    info_lck_.acquire(me);
    uint64_t r = logwrt_rqst_write_.get();
    if (r < upto.value)
      logwrt_rqst_write_.set(upto.value);
    else
      upto = Lsn{r};
    info_lck_.release();
    return upto;
  }

  // XLogWrite with wal_write_lock_ held: copy [log_write_result_, upto) from the ring to storage
  // in runs that neither wrap the ring nor cross a segment, with an fsync after each run that
  // completes a segment (finishing_seg); then fsync if asked (through the DeviceSync with the
  // caller's ticket, if there is one).
  // Like XLogWrite, it works on a local LogwrtResult and publishes it only at the end (W1-W2 in
  // "FLUSH AND WRITE REQUESTS").
  void write_locked(Proc<P>& me, Lsn upto, bool flush, uint64_t device_ticket = 0) {
    uint64_t from = log_write_result_.load();
    uint64_t flushed = log_flush_result_.load();
    if (from < upto.value) {
      me.set_wait(WaitEvent::kWalIoWrite);
      while (from < upto.value) {
        const uint64_t page_no = from / geom_.page_size;
        const uint64_t slot = page_no % num_buffers_;
        const uint64_t to_ring_end = (num_buffers_ - slot) * geom_.page_size - from % geom_.page_size;
        const uint64_t to_seg_end = geom_.segment_size - from % geom_.segment_size;
        const uint64_t n = std::min({upto.value - from, to_ring_end, to_seg_end});
        // I2: the bytes are finished insertions, and the pages are still in the ring (I1).
        WALBENCH_CHECK(xlblock(slot).load() == (page_no + 1) * geom_.page_size, "I1 (write)");
        const uint8_t* src = pages_.get() + slot * geom_.page_size + from % geom_.page_size;
        P::touch_range(src, n, RangeAccess::kRead);  // pages other clients filled
        storage_.write(Lsn{from}, src, n);
        charge_storage_write<P>(n);
        ++counters_.writes;
        from += n;
        if (from % geom_.segment_size == 0) {
          // finishing_seg (XLogWrite, xlog.c REL_17_STABLE; the same since 9.x): the segment's
          // last page is written, so fsync it now ("one and only one backend will perform this
          // fsync"), flush request or not; LogwrtResult.Flush = LogwrtResult.Write.
          sync_storage(me, /*device_ticket=*/0);  // a ticket taken now: covers these pages
          flushed = from;
          me.set_wait(WaitEvent::kWalIoWrite);
        }
      }
      me.clear_wait();
    }
    const uint64_t written = from;  // >= upto
    if (flush && flushed < written) {
      sync_storage(me, device_ticket);
      flushed = written;
    }
    // W1: LogwrtRqst never falls behind LogwrtResult ("This is not absolutely essential, but
    // it saves some code in a couple of places"), under info_lck.
    info_lck_.acquire(me);
    if (logwrt_rqst_write_.get() < written) logwrt_rqst_write_.set(written);
    if (logwrt_before_pg17_) {  // W2, PG <= 16: XLogCtl->LogwrtResult, under info_lck too
      log_write_result_.store(written, std::memory_order_release);  // plain stores (release:
      log_flush_result_.store(flushed, std::memory_order_release);  // read without the lock)
    }
    info_lck_.release();
    if (!logwrt_before_pg17_) {  // W2, PG 17: pg_atomic_write_u64 x2, pg_write_barrier between
      log_write_result_.store(written, std::memory_order_release);
      log_flush_result_.store(flushed, std::memory_order_release);
    }
  }

  // issue_xlog_fsync: nothing with fsync off (enableFsync), else through the shared device
  // (group commit across the WALs, D2) or this WAL's storage.
  void sync_storage(Proc<P>& me, uint64_t device_ticket) {
    if (fsync_ && device_ != nullptr) {
      device_->sync(me, storage_, device_ticket);
    } else if (fsync_) {
      me.set_wait(WaitEvent::kWalIoSync);
      storage_.sync();
      charge_storage_sync<P>();
      ++counters_.fsyncs;
    }
    me.clear_wait();
  }

  // The strategy says whether it models PostgreSQL <= 16 (S::logwrt_before_pg17()); PG 17
  // otherwise.
  static bool logwrt_before_pg17_of(const S& s) {
    if constexpr (requires { { s.logwrt_before_pg17() } -> std::convertible_to<bool>; })
      return s.logwrt_before_pg17();
    else
      return false;
  }

  // flushblocks: whole pages between flushed and upto (upto / BLCKSZ - flushed / BLCKSZ).
  uint64_t pages_between(uint64_t flushed, uint64_t upto) const {
    return upto <= flushed ? 0 : upto / geom_.page_size - flushed / geom_.page_size;
  }

  const WalGeometry geom_;
  const uint32_t num_buffers_;
  // Page-aligned like XLogCtl->pages (TYPEALIGN(XLOG_BLCKSZ, ...) in XLOGShmemInit), so which
  // pages share a 4 KiB block of the sim's range model (sim.h "RANGES") does not depend on
  // the heap.
  static constexpr size_t kPagesAlign = 4096;
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{kPagesAlign}); }
  };
  std::unique_ptr<uint8_t[], AlignedDelete> pages_;
  // GetXLogBuffer's backend-local statics cachedPage (cachedPos is derived): one padded slot
  // per procno, written and read only by its owner, hence not a P object.
  struct alignas(64) CachedPage {
    uint64_t page = ~uint64_t{0};  // no page yet (PostgreSQL's 0 never matches: WAL starts later)
  };
  std::unique_ptr<CachedPage[]> cached_page_;
  std::unique_ptr<uint8_t[]> zero_page_;  // source for zeroing a page (read-only)
  // xlblocks is a dense array of 8-byte entries (16 under emulated atomics, as PG 17's
  // pg_atomic_uint64 with its embedded slock_t; then 4 share a line; PG <= 16's were plain
  // XLogRecPtrs: emulated.h DEVIATIONS), cache-line aligned like PostgreSQL's shared
  // memory, so which slots share a line does not depend on the heap (the simulated platform
  // charges per line).
  static constexpr uint32_t kXlBlocksPerLine = 8;
  struct alignas(64) XlBlocksLine {
    typename P::template Atomic<uint64_t> slot[kXlBlocksPerLine];
  };
  std::unique_ptr<XlBlocksLine[]> xlblocks_;
  typename P::template Atomic<uint64_t>& xlblock(uint64_t i) const {
    return xlblocks_[i / kXlBlocksPerLine].slot[i % kXlBlocksPerLine];
  }
  Storage& storage_;

  const BufferInit buffer_init_;
  bool fsync_ = true;
  uint32_t writer_flush_after_ = 128;   // wal_writer_flush_after (pages), read-only during a run
  DeviceSync<P>* device_ = nullptr;     // read-only during a run
  alignas(128) LWLock<P> buf_mapping_lock_;
  typename P::template Shared<uint64_t> initialized_upto_{0};
  // kLockFree (BI1-BI6): each hot word on its own line (our choice: no false sharing between
  // the reservation CAS and the initialised-up-to chain in the comparison).
  alignas(128) typename P::template Atomic<uint64_t> initialize_reserved_{0};
  alignas(128) typename P::template Atomic<uint64_t> initialized_upto_lf_{0};
  alignas(128) ConditionVariable<P> init_cv_;
  // Instrumentation (PostgreSQL has no such counter): pages each client initialised, one
  // padded slot per procno written only by its owner, so counting adds no shared traffic.
  struct alignas(64) PageCount {
    Counter n;
  };
  const uint32_t num_procs_;
  std::unique_ptr<PageCount[]> lf_pages_by_proc_;
  alignas(128) LWLock<P> wal_write_lock_;
  alignas(128) SpinLock<P> info_lck_;
  // LogwrtRqst and asyncXactLSN on a line of their own, not the lock's: in XLogCtlData info_lck
  // is the last field, far from them. On one line, every spinner's TAS (a line transfer) queued
  // in front of the holder's read and write of LogwrtRqst, so the hold time grew with the
  // number of spinners: on the sim, 8 KiB messages at 64 clients of a 176-core machine spent
  // 1.2 ms per transaction waiting for info_lck (46.6k tps; 107.7k with the lines apart).
  alignas(128) typename P::template Shared<uint64_t> logwrt_rqst_write_{0};
  const bool logwrt_before_pg17_;  // F1 / W2, from the strategy (read-only)
  typename P::template Shared<uint64_t> async_xact_lsn_{0};
  alignas(128) typename P::template Atomic<uint64_t> log_write_result_{0};
  typename P::template Atomic<uint64_t> log_flush_result_{0};
  WalCounters counters_;
};

}  // namespace walbench
