// ConditionVariable: PostgreSQL's condition variable (storage/lmgr/condition_variable.c, since
// PostgreSQL 10), as the lock-free WAL buffer initialisation uses it (InitializedUpToCondVar,
// wait event WAL_BUFFER_INIT; "Get rid of WALBufMappingLock", bc22dc0e0d; PROTOCOLS.md section 5).
//
// DESIGN SUMMARY
//   A spinlock `mutex_` protects a FIFO wait list of procnos. wait_until(pred) is PostgreSQL's
//   caller loop `while (!pred) ConditionVariableSleep(cv); ConditionVariableCancelSleep();`:
//   check pred; if false, PrepareToSleep (queue self under the mutex), re-check pred (no lost
//   wake-up: CV1), sleep on the client's latch, reset it, and if a waker took us off the list,
//   queue again (a signalled client stays eligible for the next broadcast while it re-checks);
//   finally CancelSleep (leave the list). broadcast() is ConditionVariableBroadcast with its
//   sentinel: pop the first waiter, push our own entry at the tail as a sentinel if more
//   remain, set the popped waiter's latch; then pop one waiter per mutex acquisition until the
//   sentinel is gone, so that waiters who re-queue themselves are not woken forever and every
//   waiter present at entry is woken (one mutex round trip per waiter, as in PostgreSQL).
//
//   The latch (PostgreSQL's per-process Latch, set with SetLatch, slept on with WaitLatch) is
//   modelled per client with a P::Atomic<uint32_t> `latch` (is_set) and a P::Semaphore of its
//   own, separate from Proc::sem so that LWLock wake-ups and latch sets never steal each other's
//   posts (PostgreSQL's latch is a different primitive from the PGPROC semaphore too).
//   SetLatch = exchange(1), and a post only on the 0 -> 1 transition (SetLatch on a set latch
//   does nothing, like PostgreSQL's is_set check that skips the signal). WaitLatch = one
//   semaphore wait; ResetLatch = store 0. Why not spinning with P::spin_delay: sleepers must
//   give the CPU back (PostgreSQL sleeps in epoll on the latch), otherwise with more clients
//   than cores the waiters starve the very initialisers they wait for.
//
// SHARED STATE AND WHAT PROTECTS IT
//   mutex_                   SpinLock (cv->mutex), tranche = the wait event given.
//   head_, tail_             P::Shared<int32_t> the wait list (cv->wakeup): under mutex_.
//   Waiter::prev, next,
//   Waiter::queued           P::Shared: the client's list links and membership (cvWaitLink,
//                            proclist_contains): under mutex_.
//   Waiter::latch            P::Atomic<uint32_t>: set (1) by any waker, reset (0) by its owner.
//   Waiter::sem              P::Semaphore: posted once per 0 -> 1 transition of latch.
//
// INVARIANTS
//   CV1 No lost wake-up: a waiter queues itself (under mutex_) before re-checking pred; a waker
//       makes pred true before it takes mutex_ to pop. If the pop is later, it finds (or passes
//       the sentinel after) the waiter and sets its latch; if earlier, the waiter's queueing
//       comes after the waker's store, so its re-check sees it.
//   CV2 Latch accounting: posts on a waiter's semaphore = 0 -> 1 transitions of its latch; the
//       owner consumes one post per WaitLatch and then resets the latch. So a semaphore holds
//       at most one surplus post, a set latch always has a post pending or in flight, and
//       WaitLatch never blocks while the latch is set. A stale post (a latch set after the
//       owner had stopped waiting) costs one spurious wake-up, which the loop tolerates.
//   CV3 A client is on the list at most once (queued flag, under mutex_); it is off the list
//       when wait_until returns.
//   CV4 The broadcaster is not on the list when it starts (it never broadcasts from inside
//       wait_until), so its own entry is free to serve as the sentinel.
//
// HAZARDS
//   - Wait only outside spinlocks (the usual rule); an LWLock may be held (PostgreSQL's
//     AdvanceXLInsertBuffer sleeps on the CV inside a critical section, holding a WAL insertion
//     lock, which is what c13070a27b's revert was about).
//   - pred must read state whose writers broadcast after making it true.
#pragma once

#include <cstdint>
#include <memory>

#include "core/locks/spinlock.h"
#include "core/proc.h"

namespace walbench {

template <class P>
class ConditionVariable {
 public:
  ConditionVariable(ProcTable<P>& procs, WaitEvent event)
      : event_(event), mutex_(event), waiters_(new Waiter[procs.size()]), n_(procs.size()) {}
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  // Returns once pred() is true. Statistics go to the wait event's tranche, shared with the
  // mutex (a SpinLock of that tranche: acquisitions, spins, backoff sleeps): here contended += 1
  // per call that had to queue, sleeps += 1 per latch wait, wait_ns += queueing to return.
  template <class Pred>
  void wait_until(Proc<P>& me, Pred pred) {
    if (pred()) return;
    LockStats& st = me.stats.of(event_);
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    Waiter& w = waiter(me.id.value);
    // ConditionVariablePrepareToSleep.
    mutex_.acquire(me);
    push_tail(static_cast<int32_t>(me.id.value));
    mutex_.release();
    for (;;) {
      if (pred()) break;  // CV1
      me.set_wait(event_);
      w.sem.wait();  // WaitLatch (CV2)
      me.clear_wait();
      ++st.sleeps;
      w.latch.store(0);  // ResetLatch
      mutex_.acquire(me);
      if (w.queued.get() == 0) push_tail(static_cast<int32_t>(me.id.value));  // signalled
      mutex_.release();
    }
    // ConditionVariableCancelSleep (CV3).
    mutex_.acquire(me);
    if (w.queued.get() != 0) remove(static_cast<int32_t>(me.id.value));
    mutex_.release();
    st.wait_ns += P::now_ns() - t0;
  }

  // ConditionVariableBroadcast: wake every client on the list at entry.
  void broadcast(Proc<P>& me) {
    const int32_t self = static_cast<int32_t>(me.id.value);
    int32_t proc = kNoProc;
    bool have_sentinel = false;
    mutex_.acquire(me);
    WALBENCH_LOCK_DCHECK(waiter(self).queued.get() == 0, "CV4", "broadcaster is on the list");
    if (head_.get() != kNoProc) {
      proc = pop_head();
      if (head_.get() != kNoProc) {
        push_tail(self);
        have_sentinel = true;
      }
    }
    mutex_.release();
    if (proc != kNoProc) set_latch(proc);
    while (have_sentinel) {
      proc = kNoProc;
      mutex_.acquire(me);
      if (head_.get() != kNoProc) proc = pop_head();
      have_sentinel = waiter(self).queued.get() != 0;
      mutex_.release();
      if (proc != kNoProc && proc != self) set_latch(proc);
    }
  }

  // For tests: is anyone queued (racy unless everyone stopped).
  bool has_waiters() const { return head_.get() != kNoProc; }

 private:
  struct alignas(64) Waiter {
    typename P::template Shared<int32_t> prev{kNoProc};
    typename P::template Shared<int32_t> next{kNoProc};
    typename P::template Shared<uint32_t> queued{0};
    typename P::template Atomic<uint32_t> latch{0};
    typename P::Semaphore sem;
  };

  Waiter& waiter(uint32_t procno) {
    WALBENCH_LOCK_DCHECK(procno < n_, "CV3", "procno outside the ProcTable");
    return waiters_[procno];
  }
  Waiter& waiter(int32_t procno) { return waiter(static_cast<uint32_t>(procno)); }

  // SetLatch (CV2).
  void set_latch(int32_t procno) {
    Waiter& w = waiter(procno);
    if (w.latch.exchange(1) == 0) w.sem.post();
  }

  // --- List primitives: mutex_ held.
  void push_tail(int32_t n) {
    Waiter& w = waiter(n);
    WALBENCH_LOCK_DCHECK(w.queued.get() == 0, "CV3", "queued twice");
    const int32_t t = tail_.get();
    w.prev.set(t);
    w.next.set(kNoProc);
    w.queued.set(1);
    if (t != kNoProc)
      waiter(t).next.set(n);
    else
      head_.set(n);
    tail_.set(n);
  }
  void remove(int32_t n) {
    Waiter& w = waiter(n);
    const int32_t p = w.prev.get(), nx = w.next.get();
    if (p != kNoProc)
      waiter(p).next.set(nx);
    else
      head_.set(nx);
    if (nx != kNoProc)
      waiter(nx).prev.set(p);
    else
      tail_.set(p);
    w.prev.set(kNoProc);
    w.next.set(kNoProc);
    w.queued.set(0);
  }
  int32_t pop_head() {
    const int32_t h = head_.get();
    remove(h);
    return h;
  }

  const WaitEvent event_;
  alignas(128) SpinLock<P> mutex_;
  typename P::template Shared<int32_t> head_{kNoProc};
  typename P::template Shared<int32_t> tail_{kNoProc};
  std::unique_ptr<Waiter[]> waiters_;
  const uint32_t n_;
};

}  // namespace walbench
