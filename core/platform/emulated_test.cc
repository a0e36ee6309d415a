// Tests for core/platform/emulated.h: the --disable-atomics / --disable-spinlocks emulations on
// top of the threads platform, with more threads than cores. Invariants EA1-EA4 are cited where
// a test checks them. Catch2 assertions run on the main thread only.
#include "core/platform/emulated.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/platform/threads.h"
#include "core/proc.h"

namespace walbench {
namespace {

using EmuAtomics = EmulatedPlatform<ThreadsPlatform, true, false>;
using EmuSpinlocks = EmulatedPlatform<ThreadsPlatform, false, true>;
using EmuBoth = EmulatedPlatform<ThreadsPlatform, true, true>;
static_assert(Platform<EmuAtomics> && Platform<EmuSpinlocks> && Platform<EmuBoth>);
// The slock_t of each combination: native TAS unless spinlocks are semaphores, never built on
// the emulated atomics.
static_assert(std::is_same_v<SpinLockWordT<EmuAtomics>, TasSpinLockWord<ThreadsPlatform>>);
static_assert(std::is_same_v<SpinLockWordT<EmuSpinlocks>, SemaphoreSpinLockWord<ThreadsPlatform>>);
static_assert(std::is_same_v<SpinLockWordT<EmuBoth>, SemaphoreSpinLockWord<ThreadsPlatform>>);
static_assert(std::is_same_v<SpinLockWordT<ThreadsPlatform>, TasSpinLockWord<ThreadsPlatform>>);
static_assert(std::is_same_v<EmuSpinlocks::Atomic<uint64_t>, ThreadsPlatform::Atomic<uint64_t>>);
// An emulated atomic keeps the size of a native one (the lock is in a pool, not embedded).
static_assert(sizeof(EmuBoth::Atomic<uint64_t>) == sizeof(ThreadsPlatform::Atomic<uint64_t>));

constexpr int kThreads = 6;  // more than the 2 cores CI has

template <class F>
void run_threads(int n, F f) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { f(i); });
  for (auto& t : ts) t.join();
}

// Small delays so that contended waits do not sleep 1 ms each (SpinDelayParams::ns_per_us).
SpinDelayParams fast_spin() {
  SpinDelayParams p;
  p.ns_per_us = 1;
  return p;
}

}  // namespace

TEMPLATE_TEST_CASE("emulated atomics: fetch-ops are exact under contention", "[emulation]",
                   EmuAtomics, EmuBoth) {
  using P = TestType;
  // EA1: several atomics, some of them neighbours in an array (different pool locks) and some
  // sharing a pool lock, hammered by more threads than cores.
  auto atomics = std::make_unique<typename P::template Atomic<uint64_t>[]>(8);
  typename P::template Atomic<uint32_t> bits{0};
  constexpr int kIters = 20000;
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kIters; ++i) {
      atomics[static_cast<size_t>(i % 8)].fetch_add(1);
      atomics[0].fetch_sub(0);
      if (i % 97 == 0) {
        bits.fetch_or(1u << t);
        bits.fetch_and(~(1u << t));
      }
    }
  });
  uint64_t total = 0;
  for (int i = 0; i < 8; ++i) total += atomics[static_cast<size_t>(i)].load();
  CHECK(total == uint64_t{kThreads} * kIters);
  CHECK(bits.load() == 0);
}

TEMPLATE_TEST_CASE("emulated atomics: CAS and exchange semantics", "[emulation]", EmuAtomics,
                   EmuBoth) {
  using P = TestType;
  typename P::template Atomic<uint64_t> a{5};
  uint64_t expected = 4;
  CHECK_FALSE(a.compare_exchange(expected, 9));
  CHECK(expected == 5);  // a failed CAS returns the current value
  CHECK(a.load() == 5);
  CHECK(a.compare_exchange(expected, 9));
  CHECK(expected == 5);  // a successful CAS leaves expected alone
  CHECK(a.load() == 9);
  CHECK(a.exchange(11) == 9);
  a.store(3);
  CHECK(a.fetch_add(4) == 3);
  CHECK(a.fetch_or(0x10) == 7);
  CHECK(a.fetch_and(0x13) == 0x17);
  CHECK(a.load() == 0x13);

  // A CAS loop incrementing one counter from many threads loses nothing (EA1).
  typename P::template Atomic<uint64_t> c{0};
  constexpr int kIters = 5000;
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kIters; ++i) {
      uint64_t cur = c.load();
      while (!c.compare_exchange(cur, cur + 1)) {
      }
    }
  });
  CHECK(c.load() == uint64_t{kThreads} * kIters);

  // wait_while_eq sees a store made under the pool lock.
  typename P::template Atomic<uint32_t> flag{0};
  std::thread setter([&] { flag.store(7); });
  CHECK(flag.wait_while_eq(0) == 7);
  setter.join();
}

TEMPLATE_TEST_CASE("spinlocks stay mutually exclusive on every combination", "[emulation]",
                   EmuAtomics, EmuSpinlocks, EmuBoth) {
  using P = TestType;
  ProcTable<P> procs(kThreads, 1);
  SpinLock<P> lock(WaitEvent::kTestLock, fast_spin());
  typename P::template Shared<uint64_t> counter{0};
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  constexpr int kIters = 5000;
  run_threads(kThreads, [&](int t) {
    Proc<P>& me = procs[t];
    for (int i = 0; i < kIters; ++i) {
      lock.acquire(me);
      if (inside.fetch_add(1) != 0) overlap = true;  // S1
      counter.set(counter.get() + 1);
      inside.fetch_sub(1);
      lock.release();
    }
  });
  CHECK_FALSE(overlap.load());
  CHECK(counter.get() == uint64_t{kThreads} * kIters);
  CHECK_FALSE(lock.is_locked());
}

TEMPLATE_TEST_CASE("LWLocks work on every combination", "[emulation]", EmuAtomics, EmuSpinlocks,
                   EmuBoth) {
  using P = TestType;
  ProcTable<P> procs(kThreads, 1);
  LWLock<P> lock(&procs, WaitEvent::kTestLock, fast_spin());
  typename P::template Shared<uint64_t> counter{0};
  constexpr int kIters = 3000;
  run_threads(kThreads, [&](int t) {
    Proc<P>& me = procs[t];
    for (int i = 0; i < kIters; ++i) {
      lock.acquire(me, kLwExclusive);
      counter.set(counter.get() + 1);
      lock.release(me);
      if (i % 8 == 0) {  // shared holders between exclusive ones
        lock.acquire(me, kLwShared);
        lock.release(me);
      }
    }
  });
  CHECK(counter.get() == uint64_t{kThreads} * kIters);
}

TEST_CASE("semaphore spinlocks: try_acquire is a trylock, unrelated spinlocks share one",
          "[emulation]") {
  using P = EmuSpinlocks;
  ProcTable<P> procs(2, 1);
  // 129 consecutive spinlocks: the first and the last are assigned the same semaphore.
  std::vector<std::unique_ptr<SpinLock<P>>> locks;
  for (uint32_t i = 0; i <= kNumSpinlockSemaphores; ++i)
    locks.push_back(std::make_unique<SpinLock<P>>(WaitEvent::kTestLock, fast_spin()));
  SpinLock<P>& a = *locks.front();
  SpinLock<P>& b = *locks.back();
  SpinLock<P>& c = *locks[1];
  REQUIRE(a.try_acquire(procs[0]));
  CHECK_FALSE(a.try_acquire(procs[1]));  // EA4: count 0 while held
  CHECK(a.is_locked());
  CHECK(b.is_locked());                  // b shares a's semaphore
  CHECK_FALSE(b.try_acquire(procs[1]));
  CHECK_FALSE(c.is_locked());            // c has a semaphore of its own
  REQUIRE(c.try_acquire(procs[1]));
  c.release();
  a.release();
  CHECK_FALSE(a.is_locked());
  REQUIRE(b.try_acquire(procs[1]));
  b.release();
}

TEMPLATE_TEST_CASE("atomics nested inside spinlocks never self-deadlock", "[emulation]",
                   EmuAtomics, EmuBoth) {
  using P = TestType;
  // EA2/EA3: take, one after the other, spinlocks covering all 128 spinlock semaphores, and
  // while holding each operate on enough atomics to touch every pool lock of the atomics set.
  // With one shared set this would trylock on a semaphore the client itself holds, forever.
  ProcTable<P> procs(1, 1);
  std::vector<std::unique_ptr<SpinLock<P>>> locks;
  for (uint32_t i = 0; i < kNumSpinlockSemaphores; ++i)
    locks.push_back(std::make_unique<SpinLock<P>>(WaitEvent::kTestLock, fast_spin()));
  constexpr size_t kAtomics = 1024;
  auto atomics = std::make_unique<typename P::template Atomic<uint64_t>[]>(kAtomics);
  std::vector<bool> pool_hit(kNumAtomicsLocks, false);
  for (size_t i = 0; i < kAtomics; ++i) pool_hit[emulation_detail::pool_index(&atomics[i])] = true;
  CHECK(std::count(pool_hit.begin(), pool_hit.end(), true) == kNumAtomicsLocks);

  std::atomic<bool> done{false};
  std::thread worker([&] {
    for (auto& l : locks) {
      l->acquire(procs[0]);
      for (size_t i = 0; i < kAtomics; ++i) {
        atomics[i].fetch_add(1);
        uint64_t e = atomics[i].load();
        atomics[i].compare_exchange(e, e + 1);
        atomics[i].store(atomics[i].load());
      }
      l->release();
    }
    done = true;
  });
  // A deadlock would hang here; the worker needs well under a second.
  for (int i = 0; i < 3000 && !done.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(done.load());
  worker.join();
  uint64_t total = 0;
  for (size_t i = 0; i < kAtomics; ++i) total += atomics[i].load();
  CHECK(total == 2 * kAtomics * kNumSpinlockSemaphores);
}

TEST_CASE("semaphore pools are balanced after contended use", "[emulation]") {
  // EA4: after many contended lock/unlock pairs every pool semaphore is free again (count 1):
  // exactly one try_wait succeeds, a second fails.
  using P = EmuBoth;
  ProcTable<P> procs(kThreads, 1);
  SpinLock<P> lock(WaitEvent::kTestLock, fast_spin());
  typename P::template Atomic<uint64_t> a{0};
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < 3000; ++i) {
      lock.acquire(procs[t]);
      lock.release();
      a.fetch_add(1);
    }
  });
  CHECK(a.load() == uint64_t{kThreads} * 3000);
  for (uint32_t i = 0; i < kNumAtomicsSemaphores; ++i) {
    auto& s = atomics_semaphores<ThreadsPlatform>()[i];
    REQUIRE(s.try_wait());
    CHECK_FALSE(s.try_wait());
    s.post();
  }
  for (uint32_t i = 0; i < kNumSpinlockSemaphores; ++i) {
    auto& s = spinlock_semaphores<ThreadsPlatform>()[i];
    REQUIRE(s.try_wait());
    CHECK_FALSE(s.try_wait());
    s.post();
  }
}

}  // namespace walbench
