// EmulatedPlatform: PostgreSQL's --disable-atomics and --disable-spinlocks builds as a platform
// policy over a base platform, so that every strategy, lock and the WAL model run unchanged on it.
//
// ORIGIN
//   PostgreSQL src/backend/port/atomics.c + src/include/port/atomics/fallback.h (--disable-atomics:
//   every pg_atomic_* is emulated with a spinlock) and src/backend/storage/lmgr/spin.c +
//   s_lock.h (--disable-spinlocks: slock_t is an index into NUM_SPINLOCK_SEMAPHORES = 128
//   PGSemaphores, TAS = PGSemaphoreTryLock, S_UNLOCK = PGSemaphoreUnlock; the spinlocks that back
//   emulated atomics use a separate set of NUM_ATOMICS_SEMAPHORES = 64 so that nesting is safe).
//   Both emulations were removed in PostgreSQL 18: e25626677f (--disable-spinlocks) and
//   8138526136 (--disable-atomics). Facts: PROTOCOLS.md section 3 "Emulations". Our code.
//
// DESIGN SUMMARY
//   EmulatedPlatform<Base, kEmulateAtomics, kSemaphoreSpinlocks> forwards everything to Base
//   (Shared, Semaphore, time, copy, work, barriers: "barriers stay real") except:
//   - Atomic<T> (kEmulateAtomics): the value lives in a Base::Atomic<T>. Reads are plain loads
//     (pg_atomic_read_* takes no lock). Every write, exchange, CAS (strong) and fetch-op takes the
//     atomic's spinlock, does the read-modify-write with a plain store of the value, and releases
//     it (pg_atomic_write_* takes the lock too, so that a concurrent CAS cannot miss the write).
//     wait_while_eq spins on plain loads. The spinlock is what PostgreSQL's pg_atomic_init_*
//     makes of the atomic's `sema` field: with native spinlocks a TAS word embedded before the
//     value, in the same cache line (SpinLockInit; Base atomics, lock xchg + PAUSE:
//     EmbeddedAtomicLock), so an uncontended emulated atomic costs one line transfer like a native
//     one; with kSemaphoreSpinlocks one of the 64 "atomics semaphores" (s_init_lock_sema(lock,
//     nested = true), a trylock: AtomicsSemaphoreLock). Either is taken with the s_lock backoff.
//   - SpinLockWord (the slock_t hook of core/locks/spinlock.h): with kSemaphoreSpinlocks a
//     SemaphoreSpinLockWord: the word is an index into 128 pooled PgSemaphores assigned
//     round-robin at construction, so unrelated spinlocks may share one; TAS = try_wait, S_UNLOCK =
//     post, TAS_SPIN = TAS and SPIN_DELAY() does nothing (no PAUSE); the s_lock backoff loop
//     (spins_per_delay tries, then 1 ms.. sleeps) stays. Without kSemaphoreSpinlocks the slock_t
//     stays TasSpinLockWord<Base>: the *native* TAS, even when atomics are emulated
//     (PostgreSQL's slock_t never goes through pg_atomic_*).
//   The four combinations are what make_cell.h dispatches to, on both platforms; native/native
//   is Base itself (ThreadsPlatform, SimPlatform), not EmulatedPlatform<Base, false, false>, so
//   it costs nothing. Sim-only extras of Base (crc_work, storage_write, storage_sync) are
//   forwarded, and EmulatedPlatform<SimPlatform, ...> runs in virtual time like its Base.
//
//   ON THE SIM (Base runs in virtual time): the pools are per simulation, not per process
//   (SimPools below, kept in Simulation::layer_state), so simulations on different OS threads
//   (`walbench run -j N`) share nothing and every simulation starts from fresh pools. Pool
//   entries are assigned round-robin in first-use order within the simulation, for spinlocks
//   (PostgreSQL: round-robin at SpinLockInit) and for the atomics semaphores alike (not by
//   address: addresses differ between runs, first-use order does not), so a run is a pure
//   function of its seed. The atomic locks' s_lock state (spins_per_delay, the backoff's random draws) is per fiber,
//   i.e. per simulated backend. Spin loops on semaphores execute no PAUSE: each failed trylock
//   charges SimConfig::semaphore_trylock_ns (SimPlatform::spin_no_pause) and parks like any
//   spinner. Semaphore costs are those of the line the sem_t lives on: trylock = load + CAS
//   (lock cmpxchg), post = lock xadd, no system call (no waiter ever sleeps on them).
//   Outside a simulation (model construction, the end-of-run flush, Simulation::Uncharged) the
//   model is single-threaded: emulated atomics skip their lock, and a semaphore spinlock
//   keeps a plain held flag.
//
//   PgSemaphore: PostgreSQL's PGSemaphore on Linux is an unnamed POSIX sem_t (since PG 10), and
//   what PGSemaphoreTryLock / PGSemaphoreUnlock cost is glibc's: sem_trywait loads the value and
//   CASes it down only if it is non-zero; sem_post CASes it up and calls futex_wake only if a
//   waiter is registered. Spinlock and atomics semaphores are only ever trylocked, never waited
//   on, so no post makes a system call. PgSemaphore models exactly that on a Base::Atomic (so a
//   simulated platform sees every access). Base::Semaphore would be wrong here: on threads it is
//   libstdc++'s counting_semaphore, whose release from zero always makes a futex system call
//   (measured here: one uncontended insert_locks client ran 6x slower with it, a cost that
//   PostgreSQL's --disable-spinlocks build does not have).
//
// DEVIATIONS FROM POSTGRESQL (deliberate, and why)
//   - With semaphore spinlocks PostgreSQL assigns the 64 atomics semaphores round-robin at
//     pg_atomic_init_*; on threads we pick them by address (same pool size, same sharing rate:
//     two unrelated atomics may share one, false contention but never deadlock, EA2), so that an
//     emulated atomic keeps the size of a native one. (Until 2026-12-05 the native-spinlock form
//     used a pool of 64 TAS words too, one line apart from every value: an extra line transfer
//     per atomic operation and false contention that PostgreSQL's embedded slock_t does not have.)
//   - Two kinds of word escape the embedded lock (platform.h): CompactAtomic (an atomic whose
//     layout fixes its size: lockfree_reserve's xl_prev slots overlaid on WAL page bytes and its
//     16-byte hash-table entries, a proposal with no --disable-atomics form) takes a lock from
//     a pool of 64 TAS words instead (an extra line per operation, false sharing between
//     atomics 64 first uses apart); PlainWord (variables PostgreSQL declares plain, kept atomic
//     here only for race-free threads: the bullet after next) is never emulated.
//   - An emulated atomic with native spinlocks is 16 bytes, aligned to 16, whatever T
//     (PostgreSQL's pg_atomic_uint64 is 16 bytes aligned to 8, its pg_atomic_uint32 8 bytes
//     aligned to 4, so lock and value may, rarely, straddle two lines; ours never do, which keeps
//     line sharing independent of where objects land).
//   - On real threads the value's store inside an emulated atomic's lock is seq_cst when the
//     unlock is a plain store (native spinlocks): PostgreSQL's plain value store and S_UNLOCK let
//     a later load pass the write, so its emulated pg_atomic_* RMWs lack the trailing half of
//     their documented full barrier, and protocols that rely on it (an LWLock variable's update
//     followed by a read of the lock's state, core/locks/lwlock.h I12) could miss a wake-up
//     there. The model keeps the barrier so that its own runs cannot hang on it; the sim, whose
//     memory stays sequentially consistent, charges the plain store (kValueStore).
//   - Model words that stand for variables PostgreSQL declares plain are PlainWord (ProcArray's
//     xids and subxid states; Proc's xid, lw_waiting, clog_group_member, clog_group_page,
//     pa_group_member; the SLRU's LRU counters), never emulated. Every other P::Atomic is,
//     including some PostgreSQL keeps plain in some versions: xlblocks and LogwrtResult
//     (core/wal/wal.h) became pg_atomic_uint64 only in PG 17, so the PG 15 / PG 16 forms
//     emulate words that those releases read and write plainly (under info_lck or a mapping
//     lock); a latch's is_set (sig_atomic_t in PostgreSQL) is emulated too.
//   - The atomic lock's s_lock backoff keeps its spins_per_delay per OS thread (one thread per
//     client on threads) instead of in the client's LockLocal (an atomic operation has no Proc),
//     and does not publish a wait event or count statistics while it sleeps.
//   - On threads, pools are process-wide (PostgreSQL's live in one cluster's shared memory),
//     and the round-robin counter is never reset. A cell creates far fewer than 128 spinlocks,
//     so its spinlocks get distinct semaphores whatever ran before. On the sim they are per
//     simulation (see ON THE SIM) and assigned in first-use order, not at construction.
//
// SHARED STATE (threads: process-wide, per Base; sim: the same sets in each simulation's SimPools)
//   spinlock_semaphores()   128 PgSemaphores, count 1 = free / 0 = taken; moved only by the
//                           TAS (try_wait) of a SemaphoreSpinLockWord and the holder's post.
//   atomics_semaphores()    64 PgSemaphores, the same, for AtomicsSemaphoreLock.
//   EmulatedAtomic::sema_   native spinlocks: the TAS word embedded in the atomic (its line).
//   EmulatedAtomic::v_      Base::Atomic<T>: written only with its lock held; read by anyone.
//   Round-robin counter     std::atomic (construction-time bookkeeping, not modelled memory);
//                           on the sim SimPools' first-use maps (plain: one OS thread).
//
// INVARIANTS (tests cite them)
//   EA1 Every write, exchange, CAS and fetch-op of an EmulatedAtomic happens with the atomic's
//       lock (embedded TAS word or atomics semaphore) held, so they are totally ordered and none is lost (fetch_add totals are exact;
//       CAS succeeds iff the value equals `expected` under the lock).
//   EA2 An atomic's lock is a leaf: nothing is taken, waited on or posted while it is held,
//       except the value's own Base operations. Hence an atomic operation done while holding any
//       spinlock or LWLock wait-list lock cannot self-deadlock, and atomic locks never nest.
//   EA3 Semaphore spinlocks and the atomics pool use disjoint semaphore sets (128 + 64), so a
//       client holding a semaphore spinlock never waits for its own semaphore inside an atomic
//       operation (PostgreSQL's reason for NUM_ATOMICS_SEMAPHORES).
//   EA4 Each pool semaphore's count is 1 when free and 0 when held: a successful try_wait is the
//       only way to take it and the holder's single post the only way to free it.
//
// HAZARDS
//   - Nothing may block while holding a (semaphore) spinlock, as ever: a client that slept in
//     the kernel while holding one would make every other TAS on it fail until it wakes.
//   - Sharing: two spinlocks 128 constructions apart share a semaphore; holding both at once
//     would self-deadlock (PostgreSQL forbids nesting spinlocks for this reason; walbench never
//     nests them).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include <unordered_map>
#include <vector>

#include "core/locks/spinlock.h"
#include "core/platform/platform.h"
#include "core/platform/sim.h"
#include "core/proc.h"

namespace walbench {

constexpr uint32_t kNumSpinlockSemaphores = 128;  // NUM_SPINLOCK_SEMAPHORES
constexpr uint32_t kNumAtomicsSemaphores = 64;    // NUM_ATOMICS_SEMAPHORES

// An unnamed POSIX semaphore as glibc implements it, for trylock/post use only (see DESIGN
// SUMMARY): the count in a Base::Atomic. try_wait = sem_trywait (read; CAS down if non-zero);
// post = sem_post (one atomic increment; a futex wake would follow only for registered waiters,
// of which trylock-only semaphores have none).
template <class Base>
class PgSemaphore {
 public:
  bool try_wait() {
    uint32_t v = count_.load();
    while (v != 0)
      if (count_.compare_exchange(v, v - 1)) return true;
    return false;
  }
  void post() { count_.fetch_add(1); }

 private:
  typename Base::template Atomic<uint32_t> count_{0};
};

namespace emulation_detail {

// One pool entry per 128-byte line (PostgreSQL pads its POSIX semaphores to PG_CACHE_LINE_SIZE).
template <class T>
struct alignas(128) Padded {
  T value;
};

// N semaphores that start free (count 1), one per 128-byte line.
template <class Base, uint32_t N>
class SemaphoreSet {
 public:
  SemaphoreSet() {
    for (auto& s : sems_) s.value.post();
  }
  PgSemaphore<Base>& operator[](uint32_t i) { return sems_[i].value; }

 private:
  Padded<PgSemaphore<Base>> sems_[N];
};

// Fibonacci hashing of an address onto 0..63: neighbours in an array and 128-byte aligned
// objects alike spread over the whole pool.
inline uint32_t pool_index(const void* p) {
  const uint64_t a = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) >> 3;
  return static_cast<uint32_t>((a * 0x9E3779B97F4A7C15ULL) >> 58);  // top 6 bits: 0..63
}
static_assert(kNumAtomicsSemaphores == 64, "pool_index() yields 6 bits");

// s_lock()'s per-backend state for the locks of emulated atomics, kept per OS thread (see DEVIATIONS).
struct PoolSpinLocal {
  int32_t spins_per_delay = kDefaultSpinsPerDelay;
  uint64_t rng = 0x2545F4914F6CDD1DULL;
  double next_unit() {  // splitmix64 -> [0, 1)
    uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }
};
inline thread_local PoolSpinLocal tl_pool_spin;

// S_LOCK on an emulated atomic's lock word without a Proc: TAS, else s_lock(): TAS_SPIN + perform_spin_delay with
// PostgreSQL's constants, then finish_spin_delay. Aborts after NUM_DELAYS sleeps (stuck).
template <class Base, class Word>
void atomic_lock_acquire(Word& w, PoolSpinLocal& local) {
  if (w.tas() == 0) return;  // EA1
  int32_t spins = 0;
  uint32_t delays = 0;
  uint64_t cur_delay_us = 0;
  while (w.tas_spin() != 0) {
    Word::delay();
    if (++spins >= local.spins_per_delay) {
      if (++delays > kNumDelays) {
        std::fprintf(stderr, "stuck spinlock detected (emulated atomic's lock)\n");
        std::fflush(stderr);
        std::abort();
      }
      if (cur_delay_us == 0) cur_delay_us = kMinDelayUsec;
      Base::sleep_ns(cur_delay_us * 1000);
      cur_delay_us +=
          static_cast<uint64_t>(static_cast<double>(cur_delay_us) * local.next_unit() + 0.5);
      if (cur_delay_us > kMaxDelayUsec) cur_delay_us = kMinDelayUsec;
      spins = 0;
    }
  }
  int32_t& spd = local.spins_per_delay;
  if (cur_delay_us == 0) {
    if (spd < kMaxSpinsPerDelay) spd = std::min(spd + kSpinsPerDelayNoSleepStep, kMaxSpinsPerDelay);
  } else if (spd > kMinSpinsPerDelay) {
    spd = std::max(spd - 1, kMinSpinsPerDelay);
  }
}

}  // namespace emulation_detail

// The process-wide pools (see SHARED STATE).
template <class Base>
emulation_detail::SemaphoreSet<Base, kNumSpinlockSemaphores>& spinlock_semaphores() {
  static emulation_detail::SemaphoreSet<Base, kNumSpinlockSemaphores> set;
  return set;
}
template <class Base>
emulation_detail::SemaphoreSet<Base, kNumAtomicsSemaphores>& atomics_semaphores() {
  static emulation_detail::SemaphoreSet<Base, kNumAtomicsSemaphores> set;
  return set;
}
template <class Base>
emulation_detail::Padded<TasSpinLockWord<Base>>* atomics_tas_locks() {
  static emulation_detail::Padded<TasSpinLockWord<Base>> locks[kNumAtomicsSemaphores];
  return locks;
}

namespace emulation_detail {

template <class Base>
inline constexpr bool kSimBase = runs_in_virtual_time<Base>();

// A spin step on a semaphore: SPIN_DELAY() is a no-op without HAVE_SPINLOCKS; on the sim the
// loop's own instructions are charged instead (SimPlatform::spin_no_pause).
template <class Base>
void no_pause_delay() {
  if constexpr (requires { Base::spin_no_pause(); }) Base::spin_no_pause();
}

// One simulation's pools (see ON THE SIM in the header comment). Made on first use by
// sim_pools(), under Simulation::Uncharged (the free counts are set up, not modelled).
template <class Base>
struct SimPools {
  SemaphoreSet<Base, kNumSpinlockSemaphores> spinlock_sems;
  SemaphoreSet<Base, kNumAtomicsSemaphores> atomics_sems;
  Padded<TasSpinLockWord<Base>> atomics_tas[kNumAtomicsSemaphores];  // CompactAtomic's pool
  // First-use round-robin assignment (lookups only: no result depends on the map's order).
  std::unordered_map<const void*, uint32_t> spinlock_slot, atomic_slot;
  uint32_t next_spinlock = 0, next_atomic = 0;
  std::vector<PoolSpinLocal> spin_local;  // per fiber; the last entry outside fibers

  uint32_t spinlock_index(const void* word) {
    auto [it, fresh] = spinlock_slot.try_emplace(word, next_spinlock);
    if (fresh) next_spinlock = (next_spinlock + 1) % kNumSpinlockSemaphores;
    return it->second;
  }
  uint32_t atomic_index(const void* atomic) {
    auto [it, fresh] = atomic_slot.try_emplace(atomic, next_atomic);
    if (fresh) next_atomic = (next_atomic + 1) % kNumAtomicsSemaphores;
    return it->second;
  }
  PoolSpinLocal& local(const Simulation& sim) {
    const size_t f = sim.current_fiber();
    const size_t i = f == Simulation::kNoFiber ? sim.num_fibers() : f;
    if (spin_local.size() <= i) {
      const size_t old = spin_local.size();
      spin_local.resize(std::max(i + 1, sim.num_fibers() + 1));
      for (size_t k = old; k < spin_local.size(); ++k)  // distinct, seed-derived draws per fiber
        spin_local[k].rng ^= (sim.seed() + 1) * 0xD1B54A32D192ED03ULL + k * 0x9E3779B97F4A7C15ULL;
    }
    return spin_local[i];
  }
};

template <class Base>
SimPools<Base>& sim_pools(Simulation& sim) {
  Simulation::Uncharged plain;
  return sim.layer_state<SimPools<Base>>();
}

}  // namespace emulation_detail

// slock_t with --disable-spinlocks: an index into the 128 spinlock semaphores (s_init_lock_sema
// assigns them round-robin, so unrelated spinlocks share one).
// On the sim the semaphore is the simulation's (first-use round-robin), and outside a
// simulation a plain flag stands in for it (see ON THE SIM).
template <class Base>
class SemaphoreSpinLockWord {
  static constexpr bool kSim = emulation_detail::kSimBase<Base>;

 public:
  SemaphoreSpinLockWord() : index_(kSim ? 0 : next_index()) {}
  SemaphoreSpinLockWord(const SemaphoreSpinLockWord&) = delete;
  SemaphoreSpinLockWord& operator=(const SemaphoreSpinLockWord&) = delete;

  uint32_t tas() {  // tas_sema: PGSemaphoreTryLock; EA4
    PgSemaphore<Base>* s = sem();
    if (s != nullptr) return s->try_wait() ? 0 : 1;
    if (held_outside_) return 1;
    held_outside_ = true;
    return 0;
  }
  uint32_t tas_spin() { return tas(); }  // TAS_SPIN defaults to TAS
  void unlock() {                        // s_unlock_sema: PGSemaphoreUnlock
    if (PgSemaphore<Base>* s = sem()) s->post();
    else held_outside_ = false;
  }
  // For asserts only: true if the semaphore is taken (by this lock or one sharing it). A free
  // semaphore is taken and given back at once.
  bool is_locked() const {
    PgSemaphore<Base>* s = sem();
    if (s == nullptr) return held_outside_;
    if (!s->try_wait()) return true;
    s->post();
    return false;
  }
  // SPIN_DELAY() is a no-op without HAVE_SPINLOCKS (the sim charges the loop: no_pause_delay).
  static void delay() { emulation_detail::no_pause_delay<Base>(); }
  // The semaphore's index (threads: assigned at construction; sim: in the running simulation).
  uint32_t index() const {
    if constexpr (kSim) {
      if (Simulation* sim = Simulation::current())
        return emulation_detail::sim_pools<Base>(*sim).spinlock_index(this);
    }
    return index_;
  }

 private:
  static uint32_t next_index() {
    static std::atomic<uint32_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) % kNumSpinlockSemaphores;
  }
  // nullptr: outside a simulation on the sim.
  PgSemaphore<Base>* sem() const {
    if constexpr (kSim) {
      Simulation* sim = Simulation::current();
      if (sim == nullptr) return nullptr;
      auto& pools = emulation_detail::sim_pools<Base>(*sim);
      return &pools.spinlock_sems[pools.spinlock_index(this)];
    } else {
      return &spinlock_semaphores<Base>()[index_];
    }
  }
  const uint32_t index_;
  bool held_outside_ = false;  // sim, outside a simulation only (single-threaded there)
};

// The lock of a pooled emulated atomic: one of 64, chosen by the atomic's address on threads and
// in first-use round-robin on the sim (no lock outside a simulation). With semaphore spinlocks
// the 64 atomics semaphores (s_init_lock_sema(lock, nested = true)), as for every emulated
// atomic; with native spinlocks 64 TAS words, for the CompactAtomic form only (see DEVIATIONS).
template <class Base, bool kSemaphores>
struct AtomicsPoolLock {
  static constexpr bool kSim = emulation_detail::kSimBase<Base>;
  // A semaphore of the atomics set (disjoint from the spinlock set: EA3), used as a slock_t.
  struct SemWord {
    PgSemaphore<Base>* s;
    uint32_t tas() { return s->try_wait() ? 0 : 1; }
    uint32_t tas_spin() { return tas(); }
    static void delay() { emulation_detail::no_pause_delay<Base>(); }
  };
  static void lock(const void* atomic) {
    if constexpr (kSim) {
      Simulation* sim = Simulation::current();
      if (sim == nullptr) return;  // single-threaded outside a simulation
      auto& pools = emulation_detail::sim_pools<Base>(*sim);
      const uint32_t i = pools.atomic_index(atomic);
      emulation_detail::PoolSpinLocal& local = pools.local(*sim);
      if constexpr (kSemaphores) {
        SemWord w{&pools.atomics_sems[i]};
        emulation_detail::atomic_lock_acquire<Base>(w, local);
      } else {
        emulation_detail::atomic_lock_acquire<Base>(pools.atomics_tas[i].value, local);
      }
    } else {
      const uint32_t i = emulation_detail::pool_index(atomic);
      if constexpr (kSemaphores) {
        SemWord w{&atomics_semaphores<Base>()[i]};
        emulation_detail::atomic_lock_acquire<Base>(w, emulation_detail::tl_pool_spin);
      } else {
        emulation_detail::atomic_lock_acquire<Base>(atomics_tas_locks<Base>()[i].value,
                                          emulation_detail::tl_pool_spin);
      }
    }
  }
  static void unlock(const void* atomic) {
    if constexpr (kSim) {
      Simulation* sim = Simulation::current();
      if (sim == nullptr) return;
      auto& pools = emulation_detail::sim_pools<Base>(*sim);
      const uint32_t i = pools.atomic_index(atomic);
      if constexpr (kSemaphores)
        pools.atomics_sems[i].post();
      else
        pools.atomics_tas[i].value.unlock();
    } else {
      const uint32_t i = emulation_detail::pool_index(atomic);
      if constexpr (kSemaphores)
        atomics_semaphores<Base>()[i].post();
      else
        atomics_tas_locks<Base>()[i].value.unlock();
    }
  }
};

// The slock_t an emulated atomic embeds when spinlocks are native (SpinLockInit(&ptr->sema)):
// a TAS word in the atomic's own cache line, taken with the s_lock backoff. On the sim it is
// skipped outside a simulation (single-threaded there), like the semaphore form.
template <class Base>
class EmbeddedAtomicLock {
  static constexpr bool kSim = emulation_detail::kSimBase<Base>;

 public:
  void lock() {
    if constexpr (kSim) {
      Simulation* sim = Simulation::current();
      if (sim == nullptr) return;
      emulation_detail::atomic_lock_acquire<Base>(word_, emulation_detail::sim_pools<Base>(*sim).local(*sim));
    } else {
      emulation_detail::atomic_lock_acquire<Base>(word_, emulation_detail::tl_pool_spin);
    }
  }
  void unlock() {
    if constexpr (kSim) {
      if (Simulation::current() == nullptr) return;
    }
    word_.unlock();
  }

 private:
  TasSpinLockWord<Base> word_;
};

// pg_atomic_* under --disable-atomics (atomics.c): a plain read, or the operation under the
// atomic's spinlock: embedded before the value, as PostgreSQL's `sema` field is, when spinlocks
// are native; one of the 64 atomics semaphores when they are not; one of 64 pooled TAS words for
// the CompactAtomic form (kPooled: native size, see DEVIATIONS). The value is written inside the
// lock (kValueStore: plain on the sim, as atomics.c's `ptr->value = ...`). EA1, EA2.
// The embedded form is aligned to its size so that lock and value always share a line.
template <class Base, class T, bool kSemaphores, bool kPooled = false>
class alignas(kSemaphores || kPooled ? alignof(typename Base::template Atomic<T>) : 16)
    EmulatedAtomic {
  static constexpr bool kEmbedded = !kSemaphores && !kPooled;
  static_assert(!kEmbedded || sizeof(T) <= 8, "lock and value must fit one 16-byte block");
  using Pool = AtomicsPoolLock<Base, kSemaphores>;
  // The value's store inside the lock. PostgreSQL's is plain (`ptr->value = ...`) and so is
  // S_UNLOCK on x86, so its emulated RMW is no full barrier after the write: a later load may
  // pass both stores (see DEVIATIONS). The protocols here rely on pg_atomic_*'s documented
  // full-barrier semantics (core/locks/lwlock.h I12, consolidation_array.h W1), so on real
  // threads the store is seq_cst (xchg) unless the unlock is a locked RMW anyway (a semaphore's
  // post); on the sim, whose memory stays sequentially consistent (sim.h "Store buffer"), it is
  // the plain store PostgreSQL pays for.
  static constexpr std::memory_order kValueStore =
      emulation_detail::kSimBase<Base> || kSemaphores ? std::memory_order_release
                                                      : std::memory_order_seq_cst;
  struct Guard {
    EmulatedAtomic* a;
    explicit Guard(EmulatedAtomic* p) : a(p) {
      if constexpr (kEmbedded) a->sema_.lock();
      else Pool::lock(a);
    }
    ~Guard() {
      if constexpr (kEmbedded) a->sema_.unlock();
      else Pool::unlock(a);
    }
  };
  struct NoEmbeddedLock {};

 public:
  EmulatedAtomic() = default;
  explicit EmulatedAtomic(T v) : v_(v) {}
  EmulatedAtomic(const EmulatedAtomic&) = delete;
  EmulatedAtomic& operator=(const EmulatedAtomic&) = delete;

  T load() const { return v_.load(); }  // pg_atomic_read_*: no lock
  // pg_atomic_write_* takes the lock too; the order is forwarded to the base store.
  void store(T v, std::memory_order order = std::memory_order_seq_cst) {
    Guard g(this);
    v_.store(v, order);
  }
  T exchange(T v) { return rmw([v](T) { return v; }); }
  T fetch_add(T d) { return rmw([d](T o) { return static_cast<T>(o + d); }); }
  T fetch_sub(T d) { return rmw([d](T o) { return static_cast<T>(o - d); }); }
  T fetch_or(T d) { return rmw([d](T o) { return static_cast<T>(o | d); }); }
  T fetch_and(T d) { return rmw([d](T o) { return static_cast<T>(o & d); }); }
  bool compare_exchange(T& expected, T desired) {
    Guard g(this);
    const T cur = v_.load();
    if (cur != expected) {
      expected = cur;
      return false;
    }
    v_.store(desired, kValueStore);
    return true;
  }
  T wait_while_eq(T v) const { return v_.wait_while_eq(v); }  // plain reads

 private:
  template <class F>
  T rmw(F f) {
    Guard g(this);
    const T old = v_.load();
    v_.store(f(old), kValueStore);
    return old;
  }
  [[no_unique_address]] std::conditional_t<kEmbedded, EmbeddedAtomicLock<Base>, NoEmbeddedLock>
      sema_;
  typename Base::template Atomic<T> v_{};
};

template <class Base, bool kEmulateAtomics, bool kSemaphoreSpinlocks>
struct EmulatedPlatform {
  static_assert(Platform<Base>);
  static constexpr const char* name =
      kEmulateAtomics ? (kSemaphoreSpinlocks ? "emulated(atomics+spinlocks)" : "emulated(atomics)")
                      : (kSemaphoreSpinlocks ? "emulated(spinlocks)" : "emulated(none)");
  static constexpr bool kAtomicsEmulated = kEmulateAtomics;
  static constexpr bool kSpinlocksOnSemaphores = kSemaphoreSpinlocks;

  template <class T>
  using Atomic = std::conditional_t<kEmulateAtomics, EmulatedAtomic<Base, T, kSemaphoreSpinlocks>,
                                    typename Base::template Atomic<T>>;
  // platform.h CompactAtomic: an emulated atomic of native size (a pooled lock).
  template <class T>
  using CompactAtomic =
      std::conditional_t<kEmulateAtomics, EmulatedAtomic<Base, T, kSemaphoreSpinlocks, true>,
                         typename Base::template Atomic<T>>;
  // platform.h PlainWord: what PostgreSQL declares plain is never emulated.
  template <class T>
  using PlainWord = typename Base::template Atomic<T>;
  template <class T>
  using Shared = typename Base::template Shared<T>;
  using Semaphore = typename Base::Semaphore;
  // The slock_t hook of core/locks/spinlock.h. NB: built on Base, never on Atomic above.
  using SpinLockWord = std::conditional_t<kSemaphoreSpinlocks, SemaphoreSpinLockWord<Base>,
                                          TasSpinLockWord<Base>>;

  static constexpr bool kVirtualTime = runs_in_virtual_time<Base>();  // platform.h

  static uint64_t now_ns() { return Base::now_ns(); }
  static void work(uint64_t ns) { Base::work(ns); }
  static void copy(void* dst, const void* src, size_t n) { Base::copy(dst, src, n); }
  static void touch_range(const void* p, size_t n, RangeAccess k) { Base::touch_range(p, n, k); }
  // read(i) loads through EmulatedAtomic::load, a plain Base load (pg_atomic_read_*: no lock).
  template <class F>
  static void read_run(const void* first, size_t stride, size_t n, F&& read) {
    Base::read_run(first, stride, n, read);
  }
  static void sleep_ns(uint64_t ns) { Base::sleep_ns(ns); }
  static void spin_delay() { Base::spin_delay(); }  // pg_spin_delay(): still PAUSE
  static void memory_barrier() { Base::memory_barrier(); }
  static void write_barrier() { Base::write_barrier(); }

  // Sim-only extras of Base (core/platform/platform.h charge_*), forwarded when Base has them.
  static void crc_work(size_t n)
    requires requires(size_t k) { Base::crc_work(k); }
  {
    Base::crc_work(n);
  }
  static void touch_working_set()
    requires requires { Base::touch_working_set(); }
  {
    Base::touch_working_set();
  }
  static void storage_write(size_t n)
    requires requires(size_t k) { Base::storage_write(k); }
  {
    Base::storage_write(n);
  }
  static void storage_sync()
    requires requires { Base::storage_sync(); }
  {
    Base::storage_sync();
  }
};

}  // namespace walbench
