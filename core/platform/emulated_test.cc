// Tests for core/platform/emulated.h: the --disable-atomics / --disable-spinlocks emulations on
// top of the threads platform, with more threads than cores, and on the simulated platform
// (exact, deterministic, per-simulation pools). Invariants EA1-EA4 are cited where a test checks
// them. Catch2 assertions run on the main thread only.
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
#include "core/platform/sim.h"
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
// With semaphore spinlocks an emulated atomic keeps the size of a native one (its semaphore is
// one of a pool); with native spinlocks it embeds its TAS word, lock and value in one 16-byte
// aligned block, so they always share a cache line.
static_assert(sizeof(EmuBoth::Atomic<uint64_t>) == sizeof(ThreadsPlatform::Atomic<uint64_t>));
static_assert(sizeof(EmuAtomics::Atomic<uint64_t>) == 16 && alignof(EmuAtomics::Atomic<uint64_t>) == 16);
static_assert(sizeof(EmuAtomics::Atomic<uint32_t>) == 16 && alignof(EmuAtomics::Atomic<uint32_t>) == 16);
// platform.h: a CompactAtomic keeps the native size under emulation (its lock is pooled); a
// PlainWord (what PostgreSQL declares plain) is never emulated; both are P::Atomic elsewhere.
static_assert(sizeof(CompactAtomic<EmuAtomics, uint64_t>) == sizeof(uint64_t));
static_assert(!std::is_same_v<CompactAtomic<EmuAtomics, uint64_t>, ThreadsPlatform::Atomic<uint64_t>>);
static_assert(std::is_same_v<PlainWord<EmuAtomics, uint32_t>, ThreadsPlatform::Atomic<uint32_t>>);
static_assert(std::is_same_v<PlainWord<EmuBoth, uint32_t>, ThreadsPlatform::Atomic<uint32_t>>);
static_assert(std::is_same_v<PlainWord<ThreadsPlatform, uint32_t>, ThreadsPlatform::Atomic<uint32_t>>);
static_assert(std::is_same_v<CompactAtomic<ThreadsPlatform, uint64_t>, ThreadsPlatform::Atomic<uint64_t>>);
static_assert(std::is_same_v<CompactAtomic<EmuSpinlocks, uint64_t>, ThreadsPlatform::Atomic<uint64_t>>);
static_assert(std::is_same_v<PlainWord<SimPlatform, uint32_t>, SimPlatform::Atomic<uint32_t>>);
static_assert(std::is_same_v<CompactAtomic<SimPlatform, uint64_t>, SimPlatform::Atomic<uint64_t>>);
static_assert(std::is_same_v<PlainWord<EmulatedPlatform<SimPlatform, true, false>, uint32_t>,
                             SimPlatform::Atomic<uint32_t>>);
static_assert(sizeof(EmulatedPlatform<SimPlatform, true, false>::Atomic<uint64_t>) == 16);

// EmuAtomics with every atomic in its CompactAtomic form (a pooled TAS lock, native size), so
// the EA1 tests below cover that form too.
struct EmuAtomicsCompact : EmuAtomics {
  template <class T>
  using Atomic = walbench::CompactAtomic<EmuAtomics, T>;
};

static_assert(Platform<EmuAtomicsCompact>);

constexpr int kThreads = 6;  // more than the 2 cores CI has

template <class F>
void run_threads(int n, F f) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { f(i); });
  for (auto& t : ts) t.join();
}

// Small delays so that contended waits do not sleep 1 ms each (SpinDelayParams::ns_per_us).
// With PostgreSQL's 1000 delays a lock held past ~0.1-1 s aborts as stuck.
SpinDelayParams fast_spin() {
  SpinDelayParams p;
  p.ns_per_us = 1;
  return p;
}

// For the contention tests (more threads than cores): a holder preempted on a loaded machine
// must not trip the stuck-spinlock abort; a lost wake-up would still hang (ctest's timeout).
SpinDelayParams patient_spin() {
  SpinDelayParams p = fast_spin();
  p.num_delays = kPatientNumDelays;
  return p;
}

}  // namespace

TEMPLATE_TEST_CASE("emulated atomics: fetch-ops are exact under contention", "[emulation]",
                   EmuAtomics, EmuAtomicsCompact, EmuBoth) {
  using P = TestType;
  // EA1: several atomics, neighbours in an array (each with its own lock, or with pool locks:
  // some different, some shared), hammered by more threads than cores.
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
                   EmuAtomicsCompact, EmuBoth) {
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

  // wait_while_eq sees a store made under the atomic's lock.
  typename P::template Atomic<uint32_t> flag{0};
  std::thread setter([&] { flag.store(7); });
  CHECK(flag.wait_while_eq(0) == 7);
  setter.join();
}

TEMPLATE_TEST_CASE("spinlocks stay mutually exclusive on every combination", "[emulation]",
                   EmuAtomics, EmuSpinlocks, EmuBoth) {
  using P = TestType;
  ProcTable<P> procs(kThreads, 1);
  SpinLock<P> lock(WaitEvent::kTestLock, patient_spin());
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
  LWLock<P> lock(&procs, WaitEvent::kTestLock, patient_spin());
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
                   EmuAtomics, EmuAtomicsCompact, EmuBoth) {
  using P = TestType;
  // EA2/EA3: take, one after the other, spinlocks covering all 128 spinlock semaphores, and
  // while holding each operate on enough atomics to touch every lock of the atomics pools (for
  // EmuBoth the 64 semaphores; EmuAtomics' atomics embed theirs, its CompactAtomic form pools).
  // With one shared set this would trylock on a semaphore the client itself holds, forever.
  ProcTable<P> procs(1, 1);
  std::vector<std::unique_ptr<SpinLock<P>>> locks;
  for (uint32_t i = 0; i < kNumSpinlockSemaphores; ++i)
    locks.push_back(std::make_unique<SpinLock<P>>(WaitEvent::kTestLock, fast_spin()));
  constexpr size_t kAtomics = 1024;
  auto atomics = std::make_unique<typename P::template Atomic<uint64_t>[]>(kAtomics);
  std::vector<bool> pool_hit(kNumAtomicsSemaphores, false);
  for (size_t i = 0; i < kAtomics; ++i) pool_hit[emulation_detail::pool_index(&atomics[i])] = true;
  CHECK(std::count(pool_hit.begin(), pool_hit.end(), true) == kNumAtomicsSemaphores);

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
  SpinLock<P> lock(WaitEvent::kTestLock, patient_spin());
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

// ---- On the simulated platform ------------------------------------------------------------------

namespace {

using SimEmuAtomics = EmulatedPlatform<SimPlatform, true, false>;
using SimEmuSpinlocks = EmulatedPlatform<SimPlatform, false, true>;
using SimEmuBoth = EmulatedPlatform<SimPlatform, true, true>;
static_assert(Platform<SimEmuAtomics> && Platform<SimEmuSpinlocks> && Platform<SimEmuBoth>);
static_assert(runs_in_virtual_time<SimEmuBoth>() && !runs_in_virtual_time<EmuBoth>());
static_assert(std::is_same_v<SpinLockWordT<SimEmuSpinlocks>, SemaphoreSpinLockWord<SimPlatform>>);

// What a contended simulation did: exact totals and where virtual time ended.
struct SimResult {
  uint64_t counter = 0, atomic_total = 0, cas_total = 0, end_ns = 0, shared_ops = 0;
  bool finished = false;
  bool operator==(const SimResult&) const = default;
};

// The shared objects of contended_sim, each on its own line: which objects share a line must
// not depend on where the heap or the stack put them (sim.h, DETERMINISM RULES).
template <class P>
struct ContendedState {
  explicit ContendedState(SpinDelayParams sp) : lock(WaitEvent::kTestLock, sp) {}
  alignas(64) SpinLock<P> lock;
  alignas(64) typename P::template Shared<uint64_t> counter{0};
  alignas(64) typename P::template Atomic<uint64_t> atomics[4];
  alignas(64) typename P::template Atomic<uint64_t> cas{0};
};

// 16 fibers on 4 simulated cores, each 200 times: a spinlock-protected counter (s_lock with
// PostgreSQL's backoff and sleeps), a fetch_add, a CAS loop, a little work between.
template <class P>
SimResult contended_sim(uint64_t seed) {
  constexpr uint32_t kFibers = 16;
  constexpr int kIters = 200;
  ProcTable<P> procs(kFibers, seed);
  auto st = std::make_unique<ContendedState<P>>(SpinDelayParams{});
  SimConfig cfg;
  cfg.cores = 4;
  cfg.sockets = 2;
  Simulation sim(cfg, seed);
  for (uint32_t i = 0; i < kFibers; ++i)
    sim.spawn([&, i] {
      for (int k = 0; k < kIters; ++k) {
        st->lock.acquire(procs[static_cast<int32_t>(i)]);
        st->counter.set(st->counter.get() + 1);
        P::work(50);
        st->lock.release();
        st->atomics[k % 4].fetch_add(1);
        uint64_t cur = st->cas.load();
        while (!st->cas.compare_exchange(cur, cur + 1)) {
        }
        P::work(100);
      }
    }, "f" + std::to_string(i));
  const SimOutcome o = sim.run();
  SimResult r;
  r.finished = o.finished();
  r.counter = st->counter.get();
  for (int k = 0; k < 4; ++k) r.atomic_total += st->atomics[k].load();
  r.cas_total = st->cas.load();
  r.end_ns = o.now_ns;
  r.shared_ops = o.counters.shared_ops;
  return r;
}

}  // namespace

TEST_CASE("emulated primitives on the sim: exact, deterministic, dearer than native",
          "[emulation][sim]") {
  constexpr uint64_t kTotal = 16 * 200;
  const SimResult native = contended_sim<SimPlatform>(3);
  REQUIRE(native.finished);
  CHECK(native.counter == kTotal);
  // more_ops: every atomic operation becomes lock, operation, unlock, so the emulation executes
  // more shared accesses than native whatever the interleaving. (Semaphore spinlocks alone need
  // not: a native spinner's loads can outnumber them; their cost is checked below.)
  auto check = [&](const SimResult& r, const SimResult& again, const char* what, bool more_ops) {
    INFO(what << ": end " << r.end_ns << " ns, native " << native.end_ns << " ns");
    REQUIRE(r.finished);
    CHECK(r.counter == kTotal);  // S1 on semaphores
    CHECK(r.atomic_total == kTotal);  // EA1
    CHECK(r.cas_total == kTotal);
    CHECK(r == again);  // same seed, same numbers
    if (more_ops) CHECK(r.shared_ops > native.shared_ops);
  };
  // (Which one ends first under this much contention is chaotic; the cost of each emulation is
  // checked without contention below.)
  check(contended_sim<SimEmuAtomics>(3), contended_sim<SimEmuAtomics>(3), "emulated atomics", true);
  check(contended_sim<SimEmuSpinlocks>(3), contended_sim<SimEmuSpinlocks>(3), "semaphore spinlocks", false);
  check(contended_sim<SimEmuBoth>(3), contended_sim<SimEmuBoth>(3), "both", true);
}

// A spinlock handed from core to core without contention: 8 fibers on 8 cores (2 sockets),
// each taking it every 2 us. Returns the virtual time all of them needed.
template <class P>
uint64_t handoff_sim() {
  ProcTable<P> procs(8, 1);
  auto st = std::make_unique<ContendedState<P>>(SpinDelayParams{});
  SimConfig cfg;
  cfg.cores = 8;
  cfg.sockets = 2;
  Simulation sim(cfg, 1);
  for (uint32_t i = 0; i < 8; ++i)
    sim.spawn([&, i] {
      P::work(250 * i);  // staggered: one at a time
      for (int k = 0; k < 100; ++k) {
        st->lock.acquire(procs[static_cast<int32_t>(i)]);
        st->counter.set(st->counter.get() + 1);
        st->lock.release();
        st->atomics[0].fetch_add(1);  // emulated: under the atomic's lock
        P::work(2000);
      }
    }, "f" + std::to_string(i));
  const SimOutcome o = sim.run();
  REQUIRE(o.finished());
  REQUIRE(st->counter.get() == 800);
  return o.now_ns;
}

TEST_CASE("emulations on the sim cost more than native: a trylock is a load and a CAS",
          "[emulation][sim]") {
  // Natively a handoff is one lock xchg that pulls the line over; sem_trywait first loads the
  // count (pulling a shared copy) and then CASes it (invalidating the releaser's copy): two
  // transfers. Under heavy contention the semaphore version may be the faster one in the model
  // (its spinners execute no PAUSE, so they notice a release sooner) until its short spin
  // budget runs out and s_lock sleeps 1 ms.
  // Emulated atomics: each fetch_add also takes and frees the atomic's lock (two more accesses,
  // to the atomic's own line with native spinlocks, to an atomics semaphore's with both).
  const uint64_t native = handoff_sim<SimPlatform>();
  const uint64_t sema = handoff_sim<SimEmuSpinlocks>();
  const uint64_t atomics = handoff_sim<SimEmuAtomics>();
  const uint64_t both = handoff_sim<SimEmuBoth>();
  INFO("native " << native << " ns, semaphores " << sema << " ns, emulated atomics " << atomics
                 << " ns, both " << both << " ns");
  CHECK(sema > native);
  CHECK(atomics > native);
  CHECK(both > native);
  CHECK(handoff_sim<SimEmuSpinlocks>() == sema);
}

TEST_CASE("emulated primitives on the sim: pools are per simulation", "[emulation][sim]") {
  // `walbench run -j N` runs simulations on N OS threads at once: each must see pools of its
  // own (a shared pool would let one simulation's holder block the other's trylock, and the
  // round-robin assignment would depend on the other's history). Two at once on two threads,
  // several times, give exactly what one alone gives.
  const SimResult alone = contended_sim<SimEmuBoth>(5);
  for (int round = 0; round < 3; ++round) {
    SimResult a, b;
    std::thread ta([&] { a = contended_sim<SimEmuBoth>(5); });
    std::thread tb([&] { b = contended_sim<SimEmuBoth>(5); });
    ta.join();
    tb.join();
    CHECK(a == alone);
    CHECK(b == alone);
  }
  // History on one OS thread does not leak either: a different run in between changes nothing.
  (void)contended_sim<SimEmuSpinlocks>(9);
  CHECK(contended_sim<SimEmuBoth>(5) == alone);
}

TEST_CASE("semaphore spinlocks on the sim: first-use round-robin, plain outside a simulation",
          "[emulation][sim]") {
  using P = SimEmuSpinlocks;
  ProcTable<P> procs(2, 1);
  std::vector<std::unique_ptr<SpinLock<P>>> locks;
  for (uint32_t i = 0; i <= kNumSpinlockSemaphores; ++i)
    locks.push_back(std::make_unique<SpinLock<P>>(WaitEvent::kTestLock, fast_spin()));
  // Outside a simulation: a plain flag, no pool.
  REQUIRE(locks[0]->try_acquire(procs[0]));
  CHECK(locks[0]->is_locked());
  CHECK_FALSE(locks[0]->try_acquire(procs[1]));
  locks[0]->release();
  CHECK_FALSE(locks[0]->is_locked());
  // Inside: semaphores in first-use order; the 129th lock used shares the first one's.
  Simulation sim(SimConfig{}, 1);
  bool shared = false, distinct = false;
  sim.spawn([&] {
    for (auto& l : locks) {
      REQUIRE(l->try_acquire(procs[0]));
      l->release();
    }
    REQUIRE(locks[5]->try_acquire(procs[0]));  // first used 6th: semaphore 5
    shared = true;
    for (uint32_t i = 0; i <= kNumSpinlockSemaphores; ++i)
      if (i != 5 && locks[i]->is_locked()) shared = false;  // nobody else on semaphore 5
    locks[5]->release();
    REQUIRE(locks[0]->try_acquire(procs[0]));
    distinct = locks[kNumSpinlockSemaphores]->is_locked() && !locks[1]->is_locked();
    locks[0]->release();
  }, "f");
  REQUIRE(sim.run().finished());
  CHECK(shared);
  CHECK(distinct);  // lock 128 shares semaphore 0 with lock 0 (EA4), lock 1 does not
}

namespace {

// Two fibers on two cores of one socket, each doing 500 fetch_adds on an atomic of its own,
// after 64 other atomics were used (so that a first-use round-robin pool of 64 would give the
// two the same lock). Returns the line transfers between cores, and the lines fetched from
// memory by one fetch_add on a fresh atomic.
struct OwnAtomicsRun {
  uint64_t core_transfers = 0;
  uint64_t fresh_fetches = 0;
  uint64_t total = 0;
};
template <class P>
OwnAtomicsRun own_atomics_sim() {
  struct alignas(64) Slot {
    typename P::template Atomic<uint64_t> a{0};
  };
  auto slots = std::make_unique<Slot[]>(66);
  SimConfig cfg;
  cfg.cores = 2;
  cfg.sockets = 1;
  OwnAtomicsRun r;
  {
    Simulation sim(cfg, 1);
    sim.spawn([&] { slots[65].a.fetch_add(1); }, "fresh");
    const SimOutcome o = sim.run();
    REQUIRE(o.finished());
    r.fresh_fetches = o.counters.memory_fetches;
  }
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    for (int i = 0; i < 64; ++i) slots[i].a.fetch_add(1);  // round-robin slots 0..63
    P::work(1000);
    for (int k = 0; k < 500; ++k) {
      slots[0].a.fetch_add(1);
      P::work(100);
    }
  }, "a");
  sim.spawn([&] {
    P::work(20000);  // after the first fiber used the 64 (memory fetches: ~7 us)
    for (int k = 0; k < 500; ++k) {
      slots[64].a.fetch_add(1);
      P::work(100);
    }
  }, "b");
  const SimOutcome o = sim.run();
  REQUIRE(o.finished());
  r.core_transfers = o.counters.cluster_transfers + o.counters.socket_transfers +
                     o.counters.cross_socket_transfers;
  for (int i = 0; i < 65; ++i) r.total += slots[i].a.load();
  return r;
}

}  // namespace

TEST_CASE("emulated atomics with native spinlocks: the lock lives in the atomic's own line",
          "[emulation][sim]") {
  // PostgreSQL's pg_atomic_init_* does SpinLockInit(&ptr->sema) on the atomic's own field: an
  // emulated atomic costs no extra line and unrelated atomics never contend. With semaphore
  // spinlocks too, the 64 atomics semaphores are shared round-robin: atomics 0 and 64 share one.
  const OwnAtomicsRun native = own_atomics_sim<SimPlatform>();
  const OwnAtomicsRun embedded = own_atomics_sim<SimEmuAtomics>();
  const OwnAtomicsRun both = own_atomics_sim<SimEmuBoth>();
  INFO("core-to-core transfers: native " << native.core_transfers << ", embedded "
       << embedded.core_transfers << ", both " << both.core_transfers);
  CHECK(native.total == 64 + 1000);
  CHECK(embedded.total == native.total);  // EA1
  CHECK(both.total == native.total);
  CHECK(embedded.fresh_fetches == native.fresh_fetches);  // one line: lock and value together
  CHECK(both.fresh_fetches > native.fresh_fetches);       // the semaphore's line as well
  CHECK(native.core_transfers == 0);
  CHECK(embedded.core_transfers == 0);  // no false sharing through a pool
  CHECK(both.core_transfers > 0);       // the shared semaphore moves between the cores
}

}  // namespace walbench
