// LWLock: PostgreSQL's lightweight lock (state word, wait queue, per-client semaphores) and the
// LWLock "variable" protocol that WAL insertion locks use to publish insertingAt.
//
// ORIGIN
//   PostgreSQL src/backend/storage/lmgr/lwlock.c, 9.6 to 17 bit layout:
//   - ab5194e6f6 (9.5): the state is one 32-bit atomic; 008608b9d5 (9.6): the separate slock_t
//     mutex is gone, the wait list is protected by the LW_FLAG_LOCKED state bit;
//   - b25b6c9701 (10): the wait queue is a proclist of pgprocnos (links in PGPROC);
//   - 7039760114 (9.5): the variable API LWLockUpdateVar / LWLockWaitForVar /
//     LWLockConflictsWithVar / LWLockReleaseClearVar (9.4's 68a2e52bba had AcquireWithVar);
//   - 71e4cc6b8ec6 (PG 17, Bharath Rupireddy / Michael Paquier, thread "WAL Insertion Lock
//     Improvements", 2023-07-25): the variable becomes a 64-bit atomic, read without the
//     wait-list lock; UpdateVar = exchange and *still* the wait-list lock to wake waiters;
//     ReleaseClearVar = exchange + release;
//   - the v6 patch benchmarked in that thread (never committed): UpdateVar also skips the
//     wait-list lock when LW_FLAG_HAS_WAITERS is clear.
//   9b38d46d9f (9.2) introduced LWLockAcquireOrWait for group commit on WALWriteLock.
//   Facts: PROTOCOLS.md sections 2 and 3. Our code, not theirs.
//   Store order (core/platform/platform.h STORE ORDER): the state word, the atomic variable
//   and the wait-list lock move only by RMWs (full barriers, as pg_atomic_fetch_* and
//   pg_atomic_exchange_u64 are); lwWaiting is a plain field in PGPROC, so its stores are plain:
//   relaxed under the wait-list lock or by its owner, release in the wake path (where
//   PostgreSQL has pg_write_barrier() before it); the queue links (P::Shared) are plain stores.
//
// DESIGN SUMMARY
//   One P::Atomic<uint32_t> state word holds the holders (shared count in bits 0-23, EXCLUSIVE
//   1<<24) and three flags: LOCKED 1<<28 (the wait-list lock, a spinlock taken with fetch_or and
//   the s_lock backoff), RELEASE_OK 1<<29 and HAS_WAITERS 1<<30. Taking the lock is a CAS loop
//   on that word ("attempt"); a client that fails queues itself on the wait list, attempts once
//   more (so a release between the two cannot be missed), and only then sleeps on its own
//   semaphore. Release subtracts its share and, if the lock became free while HAS_WAITERS and
//   RELEASE_OK are set, wakes waiters; there is no hand-off: a woken waiter competes again.
//   The variable protocol lets the exclusive holder publish a 64-bit progress value (insertingAt)
//   and lets others wait until the lock is free or the value moves on from what they last saw.
//
// SHARED STATE AND WHAT PROTECTS IT
//   state_                  P::Atomic<uint32_t>; holder bits move only by CAS (attempt) and by
//                           the holder's fetch_sub (release); flags by fetch_or/fetch_and/CAS as
//                           described per flag below.
//   head_, tail_            P::Shared<int32_t> procnos of the wait queue: only with LOCKED held.
//   Proc::lw_next, lw_prev  P::Shared<int32_t> links of a queued client: with LOCKED held of the
//                           lock it is queued on; after removal for wake-up, by the waker only
//                           (its private wake list) until it stores NOT_WAITING (I3).
//   Proc::lw_wait_mode      P::Shared<uint32_t>: written by the client when queueing, read by
//                           wakers, both with LOCKED held.
//   Proc::lw_waiting        PlainWord<P, uint32_t> (lwWaiting, plain in PostgreSQL): lifecycle in I4.
//   Proc::sem               P::Semaphore: posted once per wake-up; extra posts absorbed (I9).
//   LockVar::plain_value    P::Shared<uint64_t> (kWaitList): read and written only with LOCKED
//                           held (also what makes a 64-bit read untearable on 32-bit machines).
//   LockVar::atomic_value   P::Atomic<uint64_t> (kAtomic, kAtomicFastPath): written by the
//                           exclusive holder with exchange (a full barrier), read by anyone.
//   Client-local (not shared, not through P): the held list LockLocal::held[] (PostgreSQL's
//   held_lwlocks[]) and spins_per_delay (spinlock.h), statistics me.stats.of(tranche).
//
// INVARIANTS (asserts and checks cite them as // I<n>)
//   I1  Holders: EXCLUSIVE set => shared count 0, and at most one exclusive holder. An exclusive
//       release must see EXCLUSIVE set, a shared release a count > 0 and no EXCLUSIVE (checked
//       on the value fetch_sub returns).
//   I2  The shared count never carries into EXCLUSIVE: checked before each shared increment.
//   I3  The queue (head_, tail_, lw_next, lw_prev, lw_wait_mode of queued clients) is touched
//       only by the client that holds LOCKED, except the links of clients a waker has removed
//       into its private wake list, which only that waker touches until it stores NOT_WAITING.
//   I4  lw_waiting: NOT_WAITING -> WAITING (self, under LOCKED, when queueing) -> PENDING_WAKEUP
//       (waker, under LOCKED, when removing it) -> NOT_WAITING (waker, after unlocking, by a
//       seq_cst store that orders its link writes before it, immediately before exactly one
//       semaphore post; the client reads its links only after seeing NOT_WAITING); or
//       WAITING -> NOT_WAITING by the client itself after dequeue_self removed it under LOCKED.
//       A client queues only when NOT_WAITING, hence sits on at most one queue (checked).
//   I5  HAS_WAITERS is set whenever the queue is non-empty: set under LOCKED before the push;
//       cleared only under LOCKED and only when the queue is empty (wakeup, dequeue_self).
//       update_var may leave it set on an emptied queue (harmless: the next release or
//       fast-path update just takes the slow path).
//   I6  No lost wake-up on release: queueing (fetch_or HAS_WAITERS) and release (fetch_sub) are
//       RMWs of the same word, so they are totally ordered. If the release is first, the
//       waiter's second attempt (after its queueing) sees the lock free; otherwise the
//       releaser's fetch_sub returns HAS_WAITERS and it runs wakeup (subject to I7).
//   I7  RELEASE_OK: a wakeup that woke a lock-taking (shared/exclusive) waiter clears it; that
//       waiter sets it again after waking and before retrying (dequeue_self does too if it finds
//       itself already woken). While it is clear, releases skip wakeup: the woken waiter has yet
//       to retry and will either take the lock (and release it later) or re-queue and be
//       covered by I6. WAIT_UNTIL_FREE wakeups never clear it; wait_for_var sets it after
//       queueing so that its waiter is woken by the next release even if an earlier wakeup left
//       it clear (any wakeup that clears it also takes every WAIT_UNTIL_FREE waiter, I8).
//   I8  Wakeup takes every WAIT_UNTIL_FREE and every shared waiter, and the first exclusive
//       waiter only if no shared or exclusive waiter was taken before it, then stops; exclusive
//       waiters after a taken shared/exclusive one stay queued.
//   I9  Semaphore posts are never lost or misattributed: a sleeper waits until lw_waiting is
//       NOT_WAITING, counts posts that arrive while it is still WAITING (left over from an
//       earlier wait whose waker raced with dequeue_self) and re-posts them when done.
//   I10 Held list: a client releases, updates or clears only a lock in its own held list, in the
//       mode recorded there; update_var and release_clear_var need EXCLUSIVE (checked).
//   I11 Variable, kWaitList and kAtomic - no lost update: the waiter queues itself (under
//       LOCKED) before it re-reads the variable; the updater stores the variable (kWaitList:
//       under LOCKED; kAtomic: exchange, before taking LOCKED) and then scans the queue under
//       LOCKED. The two LOCKED sections are ordered: if the updater's is later it finds the
//       waiter and wakes it; if earlier, the store precedes the waiter's queueing, hence its
//       re-read, which returns the new value.
//   I12 Variable, kAtomicFastPath - skipping LOCKED when HAS_WAITERS is clear is race-free.
//       All accesses below are sequentially consistent, so there is one total order S of them
//       consistent with program order and with each location's modification order.
//         waiter W:  (w1) fetch_or(HAS_WAITERS) inside queue_self  (w2) fetch_or(RELEASE_OK)
//                    (w3) load state (EXCLUSIVE?)  (w4) load var
//         updater U: (u1) exchange(var, new)  (u2) load state; if no HAS_WAITERS: return
//       Suppose u2 returns a state without HAS_WAITERS and W is going to sleep on old == var.
//       (a) u2 precedes w1 in S. Then u1 < u2 < w1 < w4 in S, so w4 reads `new` or a later
//           value, which differs from old (the holder publishes changing values): W does not
//           sleep. Contradiction.
//       (b) w1 precedes u2 in S. u2 reads the state at or after w1 in the word's modification
//           order, yet HAS_WAITERS is clear, so someone cleared it after w1. By I5 that happens
//           only under LOCKED with the queue empty, i.e. after W was removed from the queue:
//           either by a waker (which will post W, I4) or by W itself (W is not sleeping). Either
//           way W cannot sleep forever.
//       The argument needs u1 to be a store that is ordered before the later load u2 (an x86
//       plain store may pass a later load: the Dekker hazard). The exchange is a full barrier;
//       a plain atomic store would break I12. Likewise W must publish HAS_WAITERS (w1) before
//       reading the variable (w4), which queue-then-recheck guarantees.
//   I13 wait_for_var returns false only with *newval != oldval, read while EXCLUSIVE was set,
//       and returns true only after it saw EXCLUSIVE clear.
//
// STEPS
//   acquire(mode) (LWLockAcquire): loop { attempt -> done; queue_self at tail; attempt ->
//     dequeue_self, done; sleep until NOT_WAITING (I9), wait event = tranche; fetch_or
//     RELEASE_OK (I7); result = false }. Remember in the held list; re-post extra wake-ups.
//   conditional_acquire(mode): one attempt.
//   acquire_or_wait(mode) (LWLockAcquireOrWait): attempt; else queue_self as WAIT_UNTIL_FREE
//     (at the head); attempt -> dequeue_self, true; else sleep, return false (lock not taken).
//   release (LWLockRelease): mode from the held list (I10); fetch_sub (I1); if the result has
//     HAS_WAITERS and RELEASE_OK and no holders: wakeup.
//   wakeup (LWLockWakeup): under LOCKED move waiters to a private list by I8, marking them
//     PENDING_WAKEUP; one CAS sets/clears RELEASE_OK (I7), clears HAS_WAITERS if the queue is
//     empty (I5) and clears LOCKED; then for each: unlink, NOT_WAITING (a seq_cst store: the
//     write barrier is part of it), post.
//   wait_for_var(old) (LWLockWaitForVar): loop { conflicts? no -> return; queue_self as
//     WAIT_UNTIL_FREE at the head; fetch_or RELEASE_OK; conflicts? no -> dequeue_self, return;
//     sleep until NOT_WAITING }. conflicts = EXCLUSIVE set and var == old (var read under LOCKED
//     for kWaitList, atomically otherwise).
//   update_var(val): kWaitList: under LOCKED store and collect the leading WAIT_UNTIL_FREE
//     waiters. kAtomic: exchange, then the same collection under LOCKED. kAtomicFastPath:
//     exchange; if HAS_WAITERS is clear, return (I12); else as kAtomic. Then wake the collected.
//   release_clear_var(val): kWaitList: store under LOCKED, then release. Atomic forms: exchange,
//     then release.
//
// WAIT AND WAKE PATHS
//   Sleep: only on the client's own semaphore, with lw_waiting as the condition (I4, I9), and
//   with the lock's tranche published as the wait event. Wake: wakeup() (from release) and
//   update_var() (WAIT_UNTIL_FREE waiters only) post after dropping LOCKED.
//   Spinning on LOCKED uses the spinlock backoff (SpinDelay): spins and sleeps are counted in
//   the tranche's statistics, sleeps publish the tranche as the wait event.
//
// STATISTICS (me.stats.of(tranche), owner-only)
//   acquisitions  every successful acquire / conditional_acquire / acquire_or_wait that got it.
//   contended     acquisitions whose first attempt failed.
//   spins, sleeps wait-list-lock spin iterations and backoff sleeps; semaphore sleeps (each
//                 semaphore wait, absorbed extra ones included). Counted on every path,
//                 including acquire_or_wait returning false and wait_for_var.
//   wait_ns       from the first failed attempt (or first conflict, for wait_for_var) to the
//                 return; P::now_ns is called only on that contended path.
//
// LOCK ORDER
//   LOCKED is a leaf: nothing else is taken while holding it, and no semaphore is posted or
//   waited on under it. Semaphores are posted only after LOCKED is dropped.
//
// HAZARDS
//   - The order "queue, then re-check" in acquire, acquire_or_wait and wait_for_var is what
//     makes I6/I11/I12 hold; reordering it loses wake-ups.
//   - update_var also wakes acquire_or_wait waiters (they are WAIT_UNTIL_FREE too), which then
//     return false with the lock still held: do not mix acquire_or_wait and the variable
//     protocol on one lock (PostgreSQL never does: WALWriteLock vs WALInsertLocks).
//   - A waiter on the variable must not hold the lock itself; a holder that never updates nor
//     releases blocks wait_for_var forever (as in PostgreSQL).
//   - The held list is per client and must be empty when the client's Proc is destroyed.
//   - NB: acquire, acquire_or_wait and wait_for_var call P::now_ns() exactly once between the
//     first failed attempt (first conflicting check) and queue_self; locks_test.cc uses that
//     call as a sync point to force "release/update inside the queueing window". Keep it there.
#pragma once

#include <cstdint>
#include <source_location>

#include "core/locks/spinlock.h"
#include "core/platform/line_names.h"
#include "core/proc.h"

namespace walbench {

// Which form of the LWLock variable protocol (PROTOCOLS.md section 2).
enum class VarProtocol {
  kWaitList,        // <= PG 16: plain variable, read and written under the wait-list lock
  kAtomic,          // PG 17 (71e4cc6b8ec6): atomic variable; update still takes the wait-list lock
  kAtomicFastPath,  // 2023 v6 patch: update skips the wait-list lock when nobody waits (I12)
};

inline const char* var_protocol_name(VarProtocol v) {
  switch (v) {
    case VarProtocol::kWaitList: return "waitlist";
    case VarProtocol::kAtomic: return "atomic";
    case VarProtocol::kAtomicFastPath: return "atomic_fastpath";
  }
  return "?";
}

// A variable attached to an LWLock (insertingAt). Only the field of the protocol in use is
// touched: plain_value under the wait-list lock (kWaitList), atomic_value otherwise.
template <class P>
struct LockVar {
  typename P::template Atomic<uint64_t> atomic_value{0};
  typename P::template Shared<uint64_t> plain_value{0};

  // The current value for a reader that needs no protocol (the holder itself, or anyone after
  // all clients stopped).
  uint64_t owner_read(VarProtocol v) const {
    return v == VarProtocol::kWaitList ? plain_value.get() : atomic_value.load();
  }
};

struct LWLockTestAccess;  // defined by tests: sync points and state inspection

template <class P>
class LWLock {
 public:
  // State word, PostgreSQL 9.6-17 layout.
  static constexpr uint32_t kValShared = 1;
  static constexpr uint32_t kValExclusive = 1u << 24;
  static constexpr uint32_t kSharedMask = kValExclusive - 1;  // bits 0-23
  static constexpr uint32_t kLockMask = kSharedMask | kValExclusive;
  static constexpr uint32_t kFlagLocked = 1u << 28;
  static constexpr uint32_t kFlagReleaseOk = 1u << 29;
  static constexpr uint32_t kFlagHasWaiters = 1u << 30;

  LWLock(ProcTable<P>* procs, WaitEvent tranche, SpinDelayParams spin = {})
      : procs_(procs), tranche_(tranche), spin_(spin) {
    WALBENCH_LOCK_CHECK(procs != nullptr, "I3", "an LWLock needs the ProcTable of its clients");
    if constexpr (runs_in_virtual_time<P>())  // the shared words: state_, head_, tail_
      line_names::add(&state_, reinterpret_cast<const char*>(&tail_ + 1) - reinterpret_cast<const char*>(&state_),
                      wait_event_name(tranche));
  }
  ~LWLock() {
    if constexpr (runs_in_virtual_time<P>()) line_names::remove(&state_);
  }
  LWLock(const LWLock&) = delete;
  LWLock& operator=(const LWLock&) = delete;

  // LWLockAcquire. mode is kLwExclusive or kLwShared. Returns true if the lock was obtained
  // without sleeping on the semaphore.
  bool acquire(Proc<P>& me, LwMode mode) {
    check_lock_mode(mode);
    LockStats& st = me.stats.of(tranche_);
    bool result = true;
    bool contended = false;
    uint64_t t0 = 0;
    uint32_t extra_waits = 0;
    for (;;) {
      if (attempt_lock(mode)) break;
      if (!contended) {
        contended = true;
        t0 = P::now_ns();
        if (me.tracer) me.tracer->lock_wait(this, trace_tranche(), trace_mode(mode));
      }
      queue_self(me, mode, st);
      // I6: re-attempt after queueing; a release in between either is seen here or sees us.
      if (attempt_lock(mode)) {
        dequeue_self(me, st);
        break;
      }
      me.set_wait(tranche_);
      extra_waits += sleep_until_woken(me, st);
      state_.fetch_or(kFlagReleaseOk);  // I7: retrying; let releases wake waiters again
      me.clear_wait();
      result = false;
    }
    remember_held(me, mode);
    repost(me, extra_waits);  // I9
    ++st.acquisitions;
    if (contended) {
      ++st.contended;
      st.wait_ns += P::now_ns() - t0;
    }
    if (me.tracer) trace_acquired(me, contended, mode);
    return result;
  }

  // LWLockConditionalAcquire: one attempt, never waits.
  bool conditional_acquire(Proc<P>& me, LwMode mode) {
    check_lock_mode(mode);
    if (!attempt_lock(mode)) return false;
    remember_held(me, mode);
    ++me.stats.of(tranche_).acquisitions;
    if (me.tracer) trace_acquired(me, false, mode);
    return true;
  }

  // LWLockAcquireOrWait: true if the lock was taken (now held in `mode`); false after sleeping
  // until it was released by its holder(s) (not held). See HAZARDS about update_var.
  bool acquire_or_wait(Proc<P>& me, LwMode mode) {
    check_lock_mode(mode);
    LockStats& st = me.stats.of(tranche_);
    uint32_t extra_waits = 0;
    uint64_t t0 = 0;
    bool must_wait = !attempt_lock(mode);
    const bool contended = must_wait;
    if (must_wait) {
      t0 = P::now_ns();
      if (me.tracer) me.tracer->lock_wait(this, trace_tranche(), TraceMode::kWaitUntilFree);
      queue_self(me, kLwWaitUntilFree, st);
      must_wait = !attempt_lock(mode);  // I6
      if (must_wait) {
        me.set_wait(tranche_);
        extra_waits += sleep_until_woken(me, st);
        me.clear_wait();
      } else {
        dequeue_self(me, st);
      }
    }
    repost(me, extra_waits);  // I9
    if (contended) st.wait_ns += P::now_ns() - t0;
    if (must_wait) {
      if (me.tracer) me.tracer->lock_wait_end(this, trace_tranche(), false);
      return false;
    }
    remember_held(me, mode);
    ++st.acquisitions;
    if (contended) ++st.contended;
    if (me.tracer) trace_acquired(me, contended, mode);
    return true;
  }

  // LWLockRelease.
  void release(Proc<P>& me) {
    const LwMode mode = forget_held(me);  // I10
    if (me.tracer) me.tracer->hold_end(this, trace_tranche());  // before others can take it
    const uint32_t sub = mode == kLwExclusive ? kValExclusive : kValShared;
    const uint32_t old = state_.fetch_sub(sub);
    if (mode == kLwExclusive) {
      WALBENCH_LOCK_CHECK((old & kValExclusive) != 0 && (old & kSharedMask) == 0, "I1",
                          "exclusive release of an LWLock whose state has no exclusive holder");
    } else {
      WALBENCH_LOCK_CHECK((old & kValExclusive) == 0 && (old & kSharedMask) != 0, "I1",
                          "shared release of an LWLock whose state has no shared holder");
    }
    const uint32_t now = old - sub;
    constexpr uint32_t kWake = kFlagHasWaiters | kFlagReleaseOk;
    if ((now & kWake) == kWake && (now & kLockMask) == 0) wakeup(me);  // I6, I7
  }

  // LWLockWaitForVar: wait until the lock is free (returns true) or `var` differs from oldval
  // (returns false, *newval = the value seen, != oldval; I13). Only an exclusive holder counts.
  bool wait_for_var(Proc<P>& me, VarProtocol proto, LockVar<P>& var, uint64_t oldval,
                    uint64_t* newval) {
    LockStats& st = me.stats.of(tranche_);
    bool result = false;
    bool waited = false;
    uint64_t t0 = 0;
    uint32_t extra_waits = 0;
    for (;;) {
      if (!conflicts_with_var(me, proto, var, oldval, newval, &result, st)) break;
      if (!waited) {
        waited = true;
        t0 = P::now_ns();
        if (me.tracer) me.tracer->lock_wait(this, trace_tranche(), TraceMode::kWaitForVar);
      }
      queue_self(me, kLwWaitUntilFree, st);  // at the head
      state_.fetch_or(kFlagReleaseOk);       // I7: the next release must wake us
      // I11 / I12: re-check only after being visible on the queue.
      if (!conflicts_with_var(me, proto, var, oldval, newval, &result, st)) {
        dequeue_self(me, st);
        break;
      }
      me.set_wait(tranche_);
      extra_waits += sleep_until_woken(me, st);
      me.clear_wait();
    }
    repost(me, extra_waits);  // I9
    if (waited) st.wait_ns += P::now_ns() - t0;
    if (waited && me.tracer) me.tracer->lock_wait_end(this, trace_tranche(), false);
    return result;
  }

  // LWLockUpdateVar: the exclusive holder publishes val and wakes WAIT_UNTIL_FREE waiters.
  void update_var(Proc<P>& me, VarProtocol proto, LockVar<P>& var, uint64_t val) {
    WALBENCH_LOCK_CHECK(held_by_me_in_mode(me, kLwExclusive), "I10",
                        "update_var by a client that does not hold the LWLock exclusively");
    if (proto != VarProtocol::kWaitList) {
      var.atomic_value.exchange(val);  // I11, I12: a full barrier before looking at waiters
      if (proto == VarProtocol::kAtomicFastPath && (state_.load() & kFlagHasWaiters) == 0)
        return;  // I12
    }
    LockStats& st = me.stats.of(tranche_);
    const uint32_t s = wait_list_lock(me, st);
    WALBENCH_LOCK_CHECK((s & kValExclusive) != 0, "I1", "update_var while the LWLock is not held");
    if (proto == VarProtocol::kWaitList) var.plain_value.set(val);  // I11: under LOCKED
    // Collect the leading WAIT_UNTIL_FREE waiters (they are queued at the head).
    int32_t wake_head = kNoProc;
    int32_t wake_tail = kNoProc;
    for (int32_t cur = head_.get(); cur != kNoProc;) {
      Proc<P>& w = proc(cur);
      if (w.lw_wait_mode.get() != kLwWaitUntilFree) break;
      const int32_t next = w.lw_next.get();
      queue_remove(cur);
      private_push_tail(wake_head, wake_tail, cur);
      WALBENCH_LOCK_DCHECK(w.lw_waiting.load() == kWaiting, "I4", "queued client not WAITING");
      w.lw_waiting.store(kPendingWakeup, std::memory_order_relaxed);  // plain, under LOCKED
      cur = next;
    }
    wait_list_unlock();  // I5: HAS_WAITERS deliberately left as is
    wake_list(wake_head);
  }

  // LWLockReleaseClearVar: store val (the "not inserting" value), then release.
  void release_clear_var(Proc<P>& me, VarProtocol proto, LockVar<P>& var, uint64_t val) {
    WALBENCH_LOCK_CHECK(held_by_me_in_mode(me, kLwExclusive), "I10",
                        "release_clear_var by a client that does not hold the LWLock exclusively");
    if (proto == VarProtocol::kWaitList) {
      wait_list_lock(me, me.stats.of(tranche_));
      var.plain_value.set(val);
      wait_list_unlock();
    } else {
      var.atomic_value.exchange(val);
    }
    release(me);
  }

  // --- Inspection, for asserts. State-based ones are racy unless the caller holds the lock.
  bool held_exclusive() const { return (state_.load() & kValExclusive) != 0; }
  uint32_t shared_holders() const { return state_.load() & kSharedMask; }
  bool is_free() const { return (state_.load() & kLockMask) == 0; }
  uint32_t debug_state() const { return state_.load(); }
  // LWLockHeldByMe / LWLockHeldByMeInMode: client-local, no shared access.
  bool held_by_me(Proc<P>& me) const {
    const LockLocal& l = lock_local(me);
    for (uint32_t i = 0; i < l.num_held; ++i)
      if (l.held[i].lock == this) return true;
    return false;
  }
  bool held_by_me_in_mode(Proc<P>& me, LwMode mode) const {
    const LockLocal& l = lock_local(me);
    for (uint32_t i = 0; i < l.num_held; ++i)
      if (l.held[i].lock == this && l.held[i].mode == mode) return true;
    return false;
  }
  WaitEvent tranche() const { return tranche_; }

 private:
  friend struct LWLockTestAccess;

  Proc<P>& proc(int32_t procno) { return (*procs_)[procno]; }
  static int32_t procno_of(const Proc<P>& me) { return static_cast<int32_t>(me.id.value); }

  // Lock-wait tracing (core/trace.h); called only when me.tracer is set.
  uint16_t trace_tranche() const { return static_cast<uint16_t>(tranche_); }
  static TraceMode trace_mode(LwMode mode) {
    return mode == kLwShared ? TraceMode::kShared : TraceMode::kExclusive;
  }
  void trace_acquired(Proc<P>& me, bool waited, LwMode mode) {
    if (waited) me.tracer->lock_wait_end(this, trace_tranche(), true);
    me.tracer->hold(this, trace_tranche(), mode == kLwShared);
  }

  static void check_lock_mode(LwMode mode) {
    WALBENCH_LOCK_CHECK(mode == kLwExclusive || mode == kLwShared, "I1",
                        "LWLock mode must be exclusive or shared");
  }

  // LWLockAttemptLock: CAS loop; the CAS is done even if the lock is busy (as PostgreSQL does).
  // Returns true if the lock was taken.
  bool attempt_lock(LwMode mode) {
    uint32_t old = state_.load();
    for (;;) {
      uint32_t desired = old;
      bool free;
      if (mode == kLwExclusive) {
        free = (old & kLockMask) == 0;
        if (free) desired += kValExclusive;
      } else {
        free = (old & kValExclusive) == 0;
        if (free) {
          WALBENCH_LOCK_CHECK((old & kSharedMask) != kSharedMask, "I2",
                              "LWLock shared count would overflow into the exclusive bit");
          desired += kValShared;
        }
      }
      if (state_.compare_exchange(old, desired)) return free;
    }
  }

  // LWLockWaitListLock: fetch_or(LOCKED); if it was set, spin reading with the s_lock backoff.
  // Returns the state as of taking it (LOCKED set).
  uint32_t wait_list_lock(Proc<P>& me, LockStats& st) {
    uint32_t old;
    for (;;) {
      old = state_.fetch_or(kFlagLocked);
      if ((old & kFlagLocked) == 0) break;
      SpinDelay<P> delay(me, tranche_, spin_, st, std::source_location::current());
      while (old & kFlagLocked) {
        delay.perform();
        old = state_.load();
      }
      delay.finish();
    }
    return old | kFlagLocked;
  }

  void wait_list_unlock() {
    const uint32_t old = state_.fetch_and(~kFlagLocked);
    WALBENCH_LOCK_CHECK((old & kFlagLocked) != 0, "I3", "wait-list lock released while not held");
  }

  // --- Queue primitives: caller holds LOCKED (I3).
  void queue_push_tail(int32_t n) {
    Proc<P>& p = proc(n);
    const int32_t t = tail_.get();
    p.lw_prev.set(t);
    p.lw_next.set(kNoProc);
    if (t != kNoProc) proc(t).lw_next.set(n);
    else head_.set(n);
    tail_.set(n);
  }
  void queue_push_head(int32_t n) {
    Proc<P>& p = proc(n);
    const int32_t h = head_.get();
    p.lw_next.set(h);
    p.lw_prev.set(kNoProc);
    if (h != kNoProc) proc(h).lw_prev.set(n);
    else tail_.set(n);
    head_.set(n);
  }
  void queue_remove(int32_t n) {
    Proc<P>& p = proc(n);
    const int32_t prev = p.lw_prev.get();
    const int32_t next = p.lw_next.get();
    if (prev != kNoProc) proc(prev).lw_next.set(next);
    else head_.set(next);
    if (next != kNoProc) proc(next).lw_prev.set(prev);
    else tail_.set(prev);
    p.lw_next.set(kNoProc);
    p.lw_prev.set(kNoProc);
  }
  // The waker's private wake list, singly linked through lw_next (I3).
  void private_push_tail(int32_t& head, int32_t& tail, int32_t n) {
    proc(n).lw_next.set(kNoProc);
    if (tail != kNoProc) proc(tail).lw_next.set(n);
    else head = n;
    tail = n;
  }

  // LWLockQueueSelf. WAIT_UNTIL_FREE waiters go to the head, others to the tail.
  void queue_self(Proc<P>& me, LwMode mode, LockStats& st) {
    WALBENCH_LOCK_CHECK(me.lw_waiting.load() == kNotWaiting, "I4",
                        "queueing for an LWLock while waiting on another one");
    WALBENCH_LOCK_CHECK(static_cast<uint32_t>(procno_of(me)) < procs_->size() &&
                            &proc(procno_of(me)) == &me,
                        "I3", "queueing a client that is not in this lock's ProcTable");
    wait_list_lock(me, st);
    state_.fetch_or(kFlagHasWaiters);  // I5, I6
    me.lw_waiting.store(kWaiting, std::memory_order_relaxed);  // I4 (plain, under LOCKED)
    me.lw_wait_mode.set(mode);
    if (mode == kLwWaitUntilFree) queue_push_head(procno_of(me));
    else queue_push_tail(procno_of(me));
    wait_list_unlock();
  }

  // LWLockDequeueSelf: after a successful re-attempt (or a variable that moved on).
  void dequeue_self(Proc<P>& me, LockStats& st) {
    wait_list_lock(me, st);
    const bool on_list = me.lw_waiting.load() == kWaiting;
    if (on_list) queue_remove(procno_of(me));
    if (head_.get() == kNoProc && (state_.load() & kFlagHasWaiters) != 0)
      state_.fetch_and(~kFlagHasWaiters);  // I5
    wait_list_unlock();
    if (on_list) {
      me.lw_waiting.store(kNotWaiting, std::memory_order_relaxed);  // I4 (plain, own field)
    } else {
      // Somebody removed us and has posted or will post our semaphore. It also cleared
      // RELEASE_OK if it woke us as a lock taker: set it again (I7), then absorb that post (I9).
      state_.fetch_or(kFlagReleaseOk);
      repost(me, sleep_until_woken(me, st));
    }
  }

  // Sleep on the own semaphore until lw_waiting == NOT_WAITING. Returns the number of posts
  // absorbed that were not ours (I9).
  uint32_t sleep_until_woken(Proc<P>& me, LockStats& st) {
    uint32_t extra = 0;
    for (;;) {
      me.sem.wait();
      ++st.sleeps;
      if (me.lw_waiting.load() == kNotWaiting) break;
      ++extra;
    }
    return extra;
  }

  static void repost(Proc<P>& me, uint32_t n) {
    while (n-- > 0) me.sem.post();
  }

  // LWLockWakeup (I8), then unlock with the flag updates in one CAS (I5, I7).
  void wakeup(Proc<P>& me) {
    LockStats& st = me.stats.of(tranche_);
    bool new_release_ok = true;
    bool woke_lock_taker = false;
    int32_t wake_head = kNoProc;
    int32_t wake_tail = kNoProc;
    wait_list_lock(me, st);
    for (int32_t cur = head_.get(); cur != kNoProc;) {
      Proc<P>& w = proc(cur);
      const int32_t next = w.lw_next.get();
      const uint32_t mode = w.lw_wait_mode.get();
      if (woke_lock_taker && mode == kLwExclusive) {  // I8: later exclusive waiters stay
        cur = next;
        continue;
      }
      queue_remove(cur);
      private_push_tail(wake_head, wake_tail, cur);
      if (mode != kLwWaitUntilFree) {
        new_release_ok = false;  // I7
        woke_lock_taker = true;
      }
      WALBENCH_LOCK_DCHECK(w.lw_waiting.load() == kWaiting, "I4", "queued client not WAITING");
      w.lw_waiting.store(kPendingWakeup, std::memory_order_relaxed);  // plain, under LOCKED
      if (mode == kLwExclusive) break;  // I8
      cur = next;
    }
    const bool queue_empty = head_.get() == kNoProc;
    uint32_t old = state_.load();
    for (;;) {
      uint32_t desired = old;
      if (new_release_ok) desired |= kFlagReleaseOk;
      else desired &= ~kFlagReleaseOk;
      if (queue_empty) desired &= ~kFlagHasWaiters;
      desired &= ~kFlagLocked;
      if (state_.compare_exchange(old, desired)) break;
    }
    wake_list(wake_head);
  }

  // Wake a private list (LOCKED already dropped): unlink, barrier, NOT_WAITING, post (I4).
  // PostgreSQL puts pg_write_barrier() between the unlink and the plain lwWaiting store. Here
  // the store is a release store (platform.h STORE ORDER), which is that barrier plus the plain
  // store: on x86 pg_write_barrier is a compiler barrier and the store a mov; no full fence,
  // which PostgreSQL does not pay and which TSan could not model.
  void wake_list(int32_t head) {
    while (head != kNoProc) {
      Proc<P>& w = proc(head);
      head = w.lw_next.get();  // read before NOT_WAITING: the client may re-queue right after
      w.lw_next.set(kNoProc);
      w.lw_waiting.store(kNotWaiting, std::memory_order_release);  // I4: write barrier + flag
      w.sem.post();
    }
  }

  // LWLockConflictsWithVar. Returns true if the caller must wait; otherwise *result says
  // whether the lock was free and, if not, *newval holds the changed value (I13).
  bool conflicts_with_var(Proc<P>& me, VarProtocol proto, LockVar<P>& var, uint64_t oldval,
                          uint64_t* newval, bool* result, LockStats& st) {
    if ((state_.load() & kValExclusive) == 0) {
      *result = true;
      return false;
    }
    *result = false;
    uint64_t value;
    if (proto == VarProtocol::kWaitList) {
      wait_list_lock(me, st);  // I11: plain value only under LOCKED (no torn reads)
      value = var.plain_value.get();
      wait_list_unlock();
    } else {
      value = var.atomic_value.load();
    }
    if (value != oldval) {
      *newval = value;
      return false;
    }
    return true;
  }

  void remember_held(Proc<P>& me, LwMode mode) {
    LockLocal& l = lock_local(me);
    WALBENCH_LOCK_CHECK(l.num_held < kMaxSimulLwLocks, "I10", "too many LWLocks taken");
    l.held[l.num_held++] = LockLocal::Held{this, mode};
  }

  // Remove this lock from the held list (the most recent entry first) and return its mode.
  LwMode forget_held(Proc<P>& me) {
    LockLocal& l = lock_local(me);
    for (uint32_t i = l.num_held; i-- > 0;) {
      if (l.held[i].lock != this) continue;
      const LwMode mode = l.held[i].mode;
      for (uint32_t j = i + 1; j < l.num_held; ++j) l.held[j - 1] = l.held[j];
      --l.num_held;
      return mode;
    }
    lock_check_failed(__FILE__, __LINE__, "I10", "releasing an LWLock this client does not hold");
  }

  typename P::template Atomic<uint32_t> state_{kFlagReleaseOk};  // LWLockInitialize
  typename P::template Shared<int32_t> head_{kNoProc};           // I3
  typename P::template Shared<int32_t> tail_{kNoProc};           // I3
  ProcTable<P>* const procs_;
  const WaitEvent tranche_;
  const SpinDelayParams spin_;
};

}  // namespace walbench
