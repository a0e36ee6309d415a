// SpinLock: PostgreSQL's spinlock (slock_t, S_LOCK / s_lock / S_UNLOCK) with its backoff.
//
// ORIGIN
//   PostgreSQL src/include/storage/s_lock.h (x86-64: TAS = lock xchgb, TAS_SPIN reads plainly
//   first, SPIN_DELAY = PAUSE) and src/backend/storage/lmgr/s_lock.c (s_lock,
//   perform_spin_delay, finish_spin_delay, s_lock_stuck), as they stand from 9.5 to 17; the
//   SpinDelay wait event is PostgreSQL 16's (WAIT_EVENT_SPIN_DELAY). Facts: PROTOCOLS.md section 3
//   "s_lock". Our code, not theirs.
//
// DESIGN SUMMARY
//   acquire = S_LOCK: one TAS (exchange 1); if it returned 1, s_lock(): loop TAS_SPIN (read, and
//   only if the read says free, exchange) calling perform_spin_delay after each failure. Every
//   failed try costs one SPIN_DELAY() (P::spin_delay(); see PLATFORM HOOK); after
//   spins_per_delay failed tries the client sleeps cur_delay microseconds (first 1 ms, then
//   cur_delay += cur_delay * U[0,1) + 0.5, i.e. x1..x2 at random, wrapping back to 1 ms once
//   above 1 s) and publishes the lock's tranche as its wait
//   event only while asleep. After more than NUM_DELAYS sleeps the spinlock is declared stuck and
//   the process aborts ("stuck spinlock detected at FILE:LINE", PostgreSQL's PANIC). On success
//   finish_spin_delay adapts the client's spins_per_delay: +100 (cap 1000) if it never slept,
//   -1 (floor 10) if it did. release = S_UNLOCK, a plain (release) store of 0.
//   The same SpinDelay machinery backs LWLock's wait-list lock (lwlock.h), as in PostgreSQL.
//
// SHARED STATE (everything else here is owner-only)
//   SpinLock::word_   the slock_t, SpinLockWordT<P> (below). By default TasSpinLockWord<P>: a
//                     P::Atomic<uint32_t>, 0 free / 1 taken, written by TAS (exchange) and by
//                     the holder's release (store 0). It is the only shared field.
//
// PLATFORM HOOK (slock_t; PROTOCOLS.md section 3 "Emulations")
//   A platform may define P::SpinLockWord to replace the TAS word; core/platform/emulated.h does,
//   for --disable-spinlocks (TAS = a trylock on one of 128 pooled semaphores) and to keep slock_t
//   native while atomics are emulated. The word provides tas() (0 = taken by this call),
//   tas_spin() (TAS_SPIN), unlock() (S_UNLOCK), is_locked() (asserts only) and a static delay()
//   (SPIN_DELAY(): PAUSE natively, nothing on semaphores), which perform_spin_delay uses for
//   spinlocks and LWLock wait-list locks alike. Platforms without one (threads, sim) get
//   TasSpinLockWord<P>: exactly the P operations this file did before the hook existed.
//
// CLIENT-LOCAL STATE (not modelled shared memory; plain; only the owning client touches it)
//   LockLocal::spins_per_delay   PostgreSQL's process-local static `spins_per_delay` in s_lock.c:
//                     one per client, shared by all spinlocks and LWLock wait-list locks the
//                     client takes. PostgreSQL also folds it into a shared estimate at backend
//                     exit ((15 x shared + local) / 16); walbench clients start at the default
//                     instead (a fresh Proc per cell), so that estimate is not modelled.
//   LockLocal::held[]            lwlock.c's held_lwlocks[] (used by lwlock.h).
//   Where LockLocal lives: Proc::lock_local (core/proc.h), so a fresh Proc per cell starts
//   with a fresh backend's state on any platform.
//   SpinDelay                    PostgreSQL's SpinDelayStatus: a stack object per slow path.
//   Statistics                   me.stats.of(tranche): owner-only plain counters.
//
// INVARIANTS
//   S1  Mutual exclusion: the client whose TAS returned 0 (TasSpinLockWord: whose exchange turned
//       the word from 0 to 1) is the only holder until it unlocks. Every acquisition path ends
//       in a successful TAS returning 0.
//   S2  Only the holder releases: lock_ == 1 at release (debug builds check it).
//   S3  spins_per_delay stays in [kMinSpinsPerDelay, kMaxSpinsPerDelay].
//   S4  cur_delay stays in [kMinDelayUsec, kMaxDelayUsec] once the first sleep happened.
//   S5  At most kNumDelays sleeps per acquisition; the next one aborts (stuck spinlock).
//
// STEPS (acquire)
//   1. exchange(1) == 0: done (acquisitions++).
//   2. contended++; t0 = P::now_ns(); SpinDelay d.
//   3. while TAS_SPIN fails: d.perform()  (spin_delay; every spins_per_delay tries: sleep).
//   4. d.finish() adapts spins_per_delay; wait_ns += now - t0; acquisitions++.
//
// WAIT AND WAKE
//   No queue and no wake-up: waiters poll. A sleeping waiter notices the release only when its
//   sleep ends, which is why a preempted holder makes everybody sleep 1 ms or more.
//
// HAZARDS
//   - Nothing may block while holding a spinlock (no LWLock, no semaphore, no sleep): PostgreSQL's
//     rule, not checked here.
//   - The stuck-spinlock abort is real: a holder that never releases kills the process after
//     about 1000 sleeps (minutes with PostgreSQL's delays). Tests scale delays down with
//     SpinDelayParams::ns_per_us.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <source_location>

#include "core/platform/line_names.h"
#include "core/proc.h"

namespace walbench {

// ---------------------------------------------------------------------------------------------
// Always-on protocol check shared by the lock headers: aborts with file:line and the invariant
// id (CONVENTIONS.md "Errors"). Cheap: callers only test values they already have in registers.
[[noreturn]] inline void lock_check_failed(const char* file, int line, const char* invariant,
                                           const char* what) {
  std::fprintf(stderr, "%s:%d: lock protocol violation [%s]: %s\n", file, line, invariant, what);
  std::fflush(stderr);
  std::abort();
}

#define WALBENCH_LOCK_CHECK(cond, invariant, what)                                       \
  do {                                                                                   \
    if (__builtin_expect(!(cond), 0))                                                    \
      ::walbench::lock_check_failed(__FILE__, __LINE__, (invariant), (what));            \
  } while (0)

#ifdef NDEBUG
#define WALBENCH_LOCK_DCHECK(cond, invariant, what) \
  do {                                              \
  } while (0)
#else
#define WALBENCH_LOCK_DCHECK(cond, invariant, what) WALBENCH_LOCK_CHECK(cond, invariant, what)
#endif

// ---------------------------------------------------------------------------------------------
// s_lock.c constants (PostgreSQL's values).
// s_lock.c / lwlock.c constants live in core/proc.h (LockLocal needs them).

// How long a PostgreSQL "microsecond" of backoff really sleeps. The delay arithmetic always runs
// in PostgreSQL's microsecond units (so the x1..x2 growth and the 1 s wrap are exact); the sleep
// is cur_delay_us * ns_per_us nanoseconds. Default 1000 = PostgreSQL; tests use 0..10.
struct SpinDelayParams {
  uint64_t ns_per_us = 1000;
  uint32_t num_delays = kNumDelays;  // sleeps allowed before the stuck-spinlock abort (S5)
};

// num_delays for tests with more threads than cores: a holder preempted on a loaded machine must
// not trip the stuck-spinlock abort (hangs are left to the tests' watchdogs).
constexpr uint32_t kPatientNumDelays = 1000000;

// The client's LockLocal (core/proc.h): owner-only backend-local lock state.
template <class P>
LockLocal& lock_local(Proc<P>& me) {
  return me.lock_local;
}

// Reset a client's LockLocal to a fresh backend's (default spins_per_delay, nothing held). Call
// when a Proc is (re)created for a cell: with the per-thread fallback, a new Proc at a recycled
// address would otherwise inherit the adaptive state of an earlier one (bad for determinism).
template <class P>
void reset_lock_local(Proc<P>& me) {
  lock_local(me) = LockLocal{};
}

// ---------------------------------------------------------------------------------------------
// slock_t on the platform (the hook described at the top).

// x86-64's slock_t: TAS = lock xchg (exchange 1), TAS_SPIN reads first, S_UNLOCK stores 0,
// SPIN_DELAY = PAUSE (P::spin_delay()). S_UNLOCK is s_lock.h's default for gcc on x86-64:
// `__asm__ __volatile__("" : : : "memory"); *(lock) = 0;`, a compiler barrier and a plain
// store (no fence, no locked instruction): a release store here (platform.h STORE ORDER; on the
// sim the releaser does not wait for the line, sim.h "Store buffer").
template <class P>
class TasSpinLockWord {
 public:
  uint32_t tas() { return lock_.exchange(1); }
  uint32_t tas_spin() { return lock_.load() != 0 ? 1 : tas(); }
  void unlock() { lock_.store(0, std::memory_order_release); }
  bool is_locked() const { return lock_.load() != 0; }
  static void delay() { P::spin_delay(); }

 private:
  typename P::template Atomic<uint32_t> lock_{0};  // S1
};

namespace spinlock_detail {
template <class P>
struct WordOf {
  using type = TasSpinLockWord<P>;
};
template <class P>
  requires requires { typename P::SpinLockWord; }
struct WordOf<P> {
  using type = typename P::SpinLockWord;
};
}  // namespace spinlock_detail

// The slock_t of platform P: P::SpinLockWord if it has one, else TasSpinLockWord<P>.
template <class P>
using SpinLockWordT = typename spinlock_detail::WordOf<P>::type;

// ---------------------------------------------------------------------------------------------
// SpinDelay: PostgreSQL's SpinDelayStatus + perform_spin_delay / finish_spin_delay. One object
// per slow path (stack), owned by the spinning client. Statistics go into `stats`.
template <class P>
class SpinDelay {
 public:
  SpinDelay(Proc<P>& me, WaitEvent event, const SpinDelayParams& params, LockStats& stats,
            std::source_location where)
      : me_(me), local_(lock_local(me)), event_(event), params_(params), stats_(stats),
        where_(where) {}

  // One failed try (perform_spin_delay).
  void perform() {
    SpinLockWordT<P>::delay();  // SPIN_DELAY()
    ++stats_.spins;
    if (++spins_ >= local_.spins_per_delay) {
      if (++delays_ > params_.num_delays) stuck();  // S5
      if (cur_delay_us_ == 0) cur_delay_us_ = kMinDelayUsec;
      me_.set_wait(event_);
      P::sleep_ns(cur_delay_us_ * params_.ns_per_us);
      me_.clear_wait();
      ++stats_.sleeps;
      // Grow by a random fraction between 1x and 2x; wrap to the minimum above the maximum (S4).
      cur_delay_us_ += static_cast<uint64_t>(static_cast<double>(cur_delay_us_) * me_.next_unit() + 0.5);
      if (cur_delay_us_ > kMaxDelayUsec) cur_delay_us_ = kMinDelayUsec;
      spins_ = 0;
    }
  }

  // Adapt the client's spins_per_delay after the lock was obtained (finish_spin_delay).
  void finish() {
    int32_t& spd = local_.spins_per_delay;
    if (cur_delay_us_ == 0) {
      if (spd < kMaxSpinsPerDelay) spd = std::min(spd + kSpinsPerDelayNoSleepStep, kMaxSpinsPerDelay);
    } else {
      if (spd > kMinSpinsPerDelay) spd = std::max(spd - 1, kMinSpinsPerDelay);
    }
  }

  uint32_t delays() const { return delays_; }
  uint64_t cur_delay_us() const { return cur_delay_us_; }

 private:
  [[noreturn]] void stuck() const {
    std::fprintf(stderr, "stuck spinlock detected at %s, %s:%u (client %u, %u delays)\n",
                 where_.function_name(), where_.file_name(), where_.line(), me_.id.value,
                 delays_ - 1);
    std::fflush(stderr);
    std::abort();
  }

  Proc<P>& me_;
  LockLocal& local_;
  WaitEvent event_;
  const SpinDelayParams& params_;
  LockStats& stats_;
  std::source_location where_;
  int32_t spins_ = 0;
  uint32_t delays_ = 0;
  uint64_t cur_delay_us_ = 0;
};

// ---------------------------------------------------------------------------------------------
template <class P>
class SpinLock {
 public:
  explicit SpinLock(WaitEvent tranche, SpinDelayParams params = {})
      : tranche_(tranche), params_(params) {
    if constexpr (runs_in_virtual_time<P>())  // the shared word
      line_names::add(&word_, sizeof(word_), wait_event_name(tranche));
  }
  ~SpinLock() {
    if constexpr (runs_in_virtual_time<P>()) line_names::remove(&word_);
  }
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  // S_LOCK: TAS, and on failure the s_lock() backoff loop. `where` names the call site in the
  // stuck-spinlock message, like PostgreSQL's __FILE__/__LINE__/__func__.
  void acquire(Proc<P>& me, std::source_location where = std::source_location::current()) {
    LockStats& st = me.stats.of(tranche_);
    if (tas() == 0) {  // S1
      ++st.acquisitions;
      if (me.tracer) me.tracer->acquired(this, trace_tranche());
      return;
    }
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    if (me.tracer) me.tracer->lock_wait(this, trace_tranche(), TraceMode::kSpin);
    SpinDelay<P> delay(me, tranche_, params_, st, where);
    while (tas_spin() != 0) delay.perform();
    delay.finish();  // S3
    st.wait_ns += P::now_ns() - t0;
    ++st.acquisitions;
    if (me.tracer) {
      me.tracer->lock_wait_end(this, trace_tranche(), true);
      me.tracer->acquired(this, trace_tranche());
    }
  }

  // One TAS, no backoff. True if the lock was taken.
  bool try_acquire(Proc<P>& me) {
    if (tas() != 0) return false;
    ++me.stats.of(tranche_).acquisitions;
    if (me.tracer) me.tracer->acquired(this, trace_tranche());
    return true;
  }

  // S_UNLOCK.
  void release() {
    WALBENCH_LOCK_DCHECK(word_.is_locked(), "S2", "releasing a spinlock that is not held");
    word_.unlock();
  }

  // For asserts only (racy by nature unless the caller holds it).
  bool is_locked() const { return word_.is_locked(); }
  WaitEvent tranche() const { return tranche_; }
  const SpinDelayParams& params() const { return params_; }

 private:
  uint32_t tas() { return word_.tas(); }
  uint16_t trace_tranche() const { return static_cast<uint16_t>(tranche_); }
  // TAS_SPIN (x86: read first, exchange only if it looks free).
  uint32_t tas_spin() { return word_.tas_spin(); }

  SpinLockWordT<P> word_;  // S1: the only shared field
  const WaitEvent tranche_;
  const SpinDelayParams params_;
};

}  // namespace walbench
