// The platform concept (DESIGN.md section 3).
//
// Strategies, locks and the WAL model are templates over a platform P and touch shared memory
// only through it. Anything shared that bypasses P is invisible to a simulated platform: that is
// a bug. Instrumentation that is not part of the modelled machine (per-client statistics written
// only by their owner, the runner's progress counters) is deliberately outside P.
//
// | member                         | meaning                                                      |
// |--------------------------------|--------------------------------------------------------------|
// | P::Atomic<T>                   | load, store, fetch_add, fetch_sub, fetch_or, fetch_and,       |
// |                                | exchange, compare_exchange (strong), wait_while_eq            |
// |                                | (spin with P::spin_delay until the value differs). RMWs and   |
// |                                | loads are sequentially consistent: PostgreSQL's pg_atomic_*   |
// |                                | RMW ops are full barriers, and its plain reads are only used  |
// |                                | where a barrier follows.                                      |
// |                                | store(v) is seq_cst (x86: xchg, a full barrier: what          |
// |                                | pg_atomic_write_membarrier_u64 and pg_atomic_exchange are);   |
// |                                | store(v, std::memory_order_release) / _relaxed is a plain     |
// |                                | store (x86: mov): what S_UNLOCK, pg_atomic_write_u32/u64 and  |
// |                                | a plain `x = v` after pg_write_barrier() compile to. Callers  |
// |                                | say which one PostgreSQL has (STORE ORDER below).             |
// | P::Shared<T>                   | plain shared data (wait-queue links, counters protected by a  |
// |                                | lock): get(), set(v). Callers hold whatever protects it.      |
// |                                | set(v) is a plain store (like store(v, release) above).       |
// | P::Semaphore                   | wait(), post(): one per client, like PGPROC's semaphore.      |
// | P::work(ns)                    | burn CPU for ns nanoseconds (work outside or inside locks).   |
// | P::copy(dst, src, n)           | memcpy of n bytes into shared buffers.                        |
// | P::touch_range(p, n, kind)     | the cache lines of [p, p+n) in shared memory that is not a    |
// |                                | P object (WAL page bytes) are read / written (kind            |
// |                                | RangeAccess): no-op on real threads, charged coherence on the |
// |                                | sim (sim.h "RANGES"). Callers pair it with the P::copy or     |
// |                                | storage write that moves the bytes.                           |
// | P::read_run(first, stride, n,  | a loop that reads n consecutive shared objects, the i-th at   |
// |             read)              | first + i * stride, by calling read(i) (which loads them with |
// |                                | the usual P calls): threads: just the loop; sim: priced as a  |
// |                                | streamed scan, each cache line once, its misses overlapping   |
// |                                | (sim.h "RUNS"). For scans                                     |
// |                                | of dense arrays (GetSnapshotData's ProcGlobal->xids). read(i) |
// |                                | only loads object i: on the sim it runs uncharged, so another |
// |                                | access in it would be free and a store would wake no spinner. |
// | P::sleep_ns(ns)                | give up the CPU for ns (pg_usleep).                           |
// | P::now_ns()                    | monotonic clock in nanoseconds.                               |
// | P::spin_delay()                | one spin iteration's delay (x86 PAUSE, SPIN_DELAY()).         |
// | P::memory_barrier()            | full fence (pg_memory_barrier).                               |
// | P::write_barrier()             | store-store barrier (pg_write_barrier; free on the sim: x86). |
// | P::name                        | "threads", "sim", ...                                         |
//
// STORE ORDER (issue 10 item 1c). PostgreSQL on x86-64 has three kinds of store: the plain store
// (S_UNLOCK = compiler barrier + `*lock = 0`, s_lock.h; pg_atomic_write_u32/u64 = "No barrier
// semantics", atomics.h; a field written after pg_write_barrier(), a compiler barrier on x86),
// the full-barrier store (pg_atomic_write_membarrier_u64, PG 17, = pg_atomic_exchange_u64), and
// the RMWs (lock-prefixed, full barriers). A P::Atomic store with std::memory_order_release or
// _relaxed stands for the first (threads: a release/relaxed std::atomic store, a mov on x86; sim:
// a buffered store, sim.h COST MODEL), the default seq_cst store for the second (threads: xchg;
// sim: pays the line transfer on the spot). EmulatedPlatform forwards the order to its base.
// TSO makes every x86 plain store a release store, so release is the order to use where a
// later reader relies on what was written before; relaxed where a lock orders everything.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace walbench {

// What P::touch_range does to a byte range of shared memory.
enum class RangeAccess : uint8_t {
  kRead,   // the bytes are read (XLogWrite reading a page out of the ring)
  kWrite,  // the bytes are written (a record copied in, a page zeroed, a header filled)
};

template <class P>
concept Platform = requires(typename P::template Atomic<uint64_t>& a,
                            typename P::template Atomic<uint32_t>& a32,
                            typename P::template Shared<uint64_t>& s,
                            typename P::Semaphore& sem, uint64_t v, uint64_t& expected,
                            void* dst, const void* src, size_t n, RangeAccess ra) {
  { a.load() } -> std::same_as<uint64_t>;
  a.store(v);
  a.store(v, std::memory_order_release);
  a.store(v, std::memory_order_relaxed);
  { a.fetch_add(v) } -> std::same_as<uint64_t>;
  { a.fetch_sub(v) } -> std::same_as<uint64_t>;
  { a.fetch_or(v) } -> std::same_as<uint64_t>;
  { a.fetch_and(v) } -> std::same_as<uint64_t>;
  { a.exchange(v) } -> std::same_as<uint64_t>;
  { a.compare_exchange(expected, v) } -> std::same_as<bool>;
  { a.wait_while_eq(v) } -> std::same_as<uint64_t>;
  { a32.load() } -> std::same_as<uint32_t>;
  { s.get() } -> std::same_as<uint64_t>;
  s.set(v);
  sem.wait();
  sem.post();
  P::work(v);
  P::copy(dst, src, n);
  P::touch_range(src, n, ra);
  P::read_run(src, n, n, [](size_t) {});
  P::sleep_ns(v);
  { P::now_ns() } -> std::same_as<uint64_t>;
  P::spin_delay();
  P::memory_barrier();
  P::write_barrier();
  { P::name } -> std::convertible_to<const char*>;
};

// A platform whose clients run as fibers in virtual time (P::name == "sim", or a layer over it
// that says so with P::kVirtualTime, e.g. EmulatedPlatform<SimPlatform, ...>): the model must not
// start OS threads of its own, and the harness drives its repetitions (CellRun::drive).
template <class P>
constexpr bool runs_in_virtual_time() {
  if constexpr (requires { P::kVirtualTime; }) return P::kVirtualTime;
  else return std::string_view(P::name) == "sim";
}

// Two kinds of shared word that a primitive emulation (core/platform/emulated.h) treats apart
// from P::Atomic; on every other platform both are P::Atomic<T> itself.
// - PlainWord<P, T>: a variable PostgreSQL declares plain (ProcGlobal->xids, PGXACT.xid,
//   subxidStates, MyProc->xid, lwWaiting, clogGroupMember, procArrayGroupMember) that the model keeps
//   in an atomic only so that real threads are race-free: --disable-atomics never touches it.
// - CompactAtomic<P, T>: an atomic whose size a layout fixes (a word overlaid on WAL page bytes,
//   16-byte hash-table entries): emulated with a lock from a pool of 64 (chosen by address on
//   threads, in first-use order on the sim), where P::Atomic embeds its lock (and grows to 16
//   bytes).
namespace platform_detail {
template <class P, class T>
struct PlainWordOf {
  using type = typename P::template Atomic<T>;
};
template <class P, class T>
  requires requires { typename P::template PlainWord<T>; }
struct PlainWordOf<P, T> {
  using type = typename P::template PlainWord<T>;
};
template <class P, class T>
struct CompactAtomicOf {
  using type = typename P::template Atomic<T>;
};
template <class P, class T>
  requires requires { typename P::template CompactAtomic<T>; }
struct CompactAtomicOf<P, T> {
  using type = typename P::template CompactAtomic<T>;
};
}  // namespace platform_detail
template <class P, class T>
using PlainWord = typename platform_detail::PlainWordOf<P, T>::type;
template <class P, class T>
using CompactAtomic = typename platform_detail::CompactAtomicOf<P, T>::type;

// Work the real code does without a P operation (the CRC of a record's payload) is charged to
// virtual time on platforms that model it.
template <class P>
inline void charge_crc(size_t n) {
  if constexpr (requires { P::crc_work(n); }) P::crc_work(n);
}
// System calls the real code makes on a file the model keeps in memory (an SLRU segment's
// open, lseek, read or write, close: slru.c SlruPhysicalReadPage / SlruPhysicalWritePage, the
// page in the OS page cache) are charged on platforms that model them (sim: syscall_ns each).
template <class P>
inline void charge_syscalls(uint32_t n) {
  if constexpr (requires { P::syscalls(n); }) P::syscalls(n);
}
// Where the client's own code starts (a statement): a working-set refill the platform left due
// is charged (sim.h "Working set"); nothing elsewhere.
template <class P>
inline void charge_working_set() {
  if constexpr (requires { P::touch_working_set(); }) P::touch_working_set();
}
template <class P>
inline void charge_storage_write(size_t n) {
  if constexpr (requires { P::storage_write(n); }) P::storage_write(n);
}
template <class P>
inline void charge_storage_sync() {
  if constexpr (requires { P::storage_sync(); }) P::storage_sync();
}

}  // namespace walbench
