// Per-client state shared with other clients: the model of PostgreSQL's PGPROC.
//
// A Proc is created per client for each cell. Its semaphore is what the client sleeps on in an
// LWLock wait queue (and later in CLOG group updates); its lw_* fields are the wait-queue links,
// protected by the wait-list lock of the LWLock the client is queued on. wait_event is published
// by the client (the owner) and read by the runner's sampler, like pg_stat_activity.
//
// Statistics (ProcStats) are instrumentation, not modelled shared state: written only by the
// owning client with plain stores, read only after the client has stopped.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/platform/platform.h"
#include "core/trace.h"
#include "core/wal/types.h"

namespace walbench {

// What a client is waiting on. LWLock tranches double as lock-statistics keys. The names are
// pg_stat_activity's "wait_event_type:wait_event" as PostgreSQL 10-12 reports them (the version
// of the CLOG experiment, ../shared/reference/clog-group-update-wait-events-128core.csv) for the
// locks in that table: CLogControlLock, XidGenLock, ProcArrayLock, the wal_insert tranche,
// ClogGroupUpdate, ProcArrayGroupUpdate, ClientRead. WALWrite and WALBufMapping keep PG 13's
// names (PG 11: WALWriteLock, WALBufMappingLock).
enum class WaitEvent : uint32_t {
  kNone = 0,          // running (CPU), not waiting
  kWalInsert,         // LWLock:wal_insert (the insertion locks, incl. waiting for insertingAt)
  kWalWrite,          // LWLock:WALWrite
  kWalBufMapping,     // LWLock:WALBufMapping
  kInsertPosSpin,     // Spinlock insertpos_lck (SpinDelay when sleeping in backoff)
  kInfoSpin,          // Spinlock info_lck
  kXactSlru,          // LWLock:CLogControlLock (XactSLRU since 13)
  kXidGen,            // LWLock:XidGenLock
  kClogGroupUpdate,   // IPC:ClogGroupUpdate (XactGroupUpdate since 13)
  kWalBufferInit,     // IPC:WALBufferInit (lock-free buffer init waiting)
  kPrevLinkWait,      // lock-free reservation: waiting for the predecessor's prev link
  kWalIoWrite,        // IO:WALWrite
  kWalIoSync,         // IO:WALSync
  kTestLock,          // locks created by unit tests
  kProcArrayLock,     // LWLock:ProcArrayLock (core/clog/proc_array.h)
  kProcArrayGroupUpdate,  // IPC:ProcArrayGroupUpdate (a ProcArray group clear member)
  kClientRead,        // Client:ClientRead (the workload's per-statement client overhead)
  kClogBuffer,        // LWLock:clog (a CLOG buffer's I/O lock; XactBuffer since 13)
  kSlruRead,          // IO:SLRURead (an SLRU page read from its segment file)
  kSlruWrite,         // IO:SLRUWrite (an SLRU page written to its segment file)
  kLockTransactionId,  // Lock:transactionid (waiting for a row's updater to end, core/cell/row_locks.h)
  kBufferContent,     // LWLock:BufferContent (a pgbench_tellers/branches page's content lock)
  kLockTuple,         // Lock:tuple (queued behind a row's first waiter, core/cell/row_locks.h)
  kLockManager,       // LWLock:LockManager (a lock table partition, core/clog/xid_lock_table.h)
  kCount
};

inline const char* wait_event_name(WaitEvent e) {
  switch (e) {
    case WaitEvent::kNone: return "CPU";
    case WaitEvent::kWalInsert: return "LWLock:wal_insert";
    case WaitEvent::kWalWrite: return "LWLock:WALWrite";
    case WaitEvent::kWalBufMapping: return "LWLock:WALBufMapping";
    case WaitEvent::kInsertPosSpin: return "Spinlock:insertpos_lck";
    case WaitEvent::kInfoSpin: return "Spinlock:info_lck";
    case WaitEvent::kXactSlru: return "LWLock:CLogControlLock";
    case WaitEvent::kXidGen: return "LWLock:XidGenLock";
    case WaitEvent::kClogGroupUpdate: return "IPC:ClogGroupUpdate";
    case WaitEvent::kWalBufferInit: return "IPC:WALBufferInit";
    case WaitEvent::kPrevLinkWait: return "LWLock:PrevLink";
    case WaitEvent::kWalIoWrite: return "IO:WALWrite";
    case WaitEvent::kWalIoSync: return "IO:WALSync";
    case WaitEvent::kTestLock: return "LWLock:Test";
    case WaitEvent::kProcArrayLock: return "LWLock:ProcArrayLock";
    case WaitEvent::kProcArrayGroupUpdate: return "IPC:ProcArrayGroupUpdate";
    case WaitEvent::kClientRead: return "Client:ClientRead";
    case WaitEvent::kClogBuffer: return "LWLock:clog";
    case WaitEvent::kSlruRead: return "IO:SLRURead";
    case WaitEvent::kSlruWrite: return "IO:SLRUWrite";
    case WaitEvent::kLockTransactionId: return "Lock:transactionid";
    case WaitEvent::kBufferContent: return "LWLock:BufferContent";
    case WaitEvent::kLockTuple: return "Lock:tuple";
    case WaitEvent::kLockManager: return "LWLock:LockManager";
    case WaitEvent::kCount: break;
  }
  return "?";
}
constexpr size_t kNumWaitEvents = static_cast<size_t>(WaitEvent::kCount);

// Lock statistics of one client for one lock tranche.
struct LockStats {
  uint64_t acquisitions = 0;   // successful acquisitions (shared, exclusive, or spinlock)
  uint64_t contended = 0;      // acquisitions that did not succeed on the first attempt
  uint64_t spins = 0;          // spin iterations (spinlock TAS retries, wait-list lock spins)
  uint64_t sleeps = 0;         // semaphore sleeps or backoff sleeps
  uint64_t wait_ns = 0;        // time between the first failed attempt and success
  void add(const LockStats& o) {
    acquisitions += o.acquisitions;
    contended += o.contended;
    spins += o.spins;
    sleeps += o.sleeps;
    wait_ns += o.wait_ns;
  }
  // this += (end - start): what happened between two snapshots of the same counters.
  void add_delta(const LockStats& end, const LockStats& start) {
    acquisitions += end.acquisitions - start.acquisitions;
    contended += end.contended - start.contended;
    spins += end.spins - start.spins;
    sleeps += end.sleeps - start.sleeps;
    wait_ns += end.wait_ns - start.wait_ns;
  }
};

struct ProcStats {
  std::array<LockStats, kNumWaitEvents> locks{};
  LockStats& of(WaitEvent e) { return locks[static_cast<size_t>(e)]; }
  void add(const ProcStats& o) {
    for (size_t e = 0; e < kNumWaitEvents; ++e) locks[e].add(o.locks[e]);
  }
  void add_delta(const ProcStats& end, const ProcStats& start) {
    for (size_t e = 0; e < kNumWaitEvents; ++e) locks[e].add_delta(end.locks[e], start.locks[e]);
  }
};

// LWLock wait-queue states (PGPROC.lwWaiting).
enum LwWaiting : uint32_t { kNotWaiting = 0, kWaiting = 1, kPendingWakeup = 2 };
// Modes a client can wait in (PGPROC.lwWaitMode).
enum LwMode : uint32_t { kLwExclusive = 0, kLwShared = 1, kLwWaitUntilFree = 2 };

constexpr int32_t kNoProc = -1;
// INVALID_PGPROCNO for the unsigned atomic links of the CLOG group list.
constexpr uint32_t kInvalidProcNo = 0xFFFFFFFFu;
// PGPROC_MAX_CACHED_SUBXIDS: subtransaction xids a PGPROC caches before it "overflows".
constexpr uint32_t kMaxCachedSubxids = 64;

// s_lock.c constants (PostgreSQL's values).
constexpr int32_t kDefaultSpinsPerDelay = 100;   // DEFAULT_SPINS_PER_DELAY
constexpr int32_t kMinSpinsPerDelay = 10;        // MIN_SPINS_PER_DELAY
constexpr int32_t kMaxSpinsPerDelay = 1000;      // MAX_SPINS_PER_DELAY
constexpr int32_t kSpinsPerDelayNoSleepStep = 100;  // finish_spin_delay: +100 if it never slept
constexpr uint32_t kNumDelays = 1000;            // NUM_DELAYS: sleeps before "stuck spinlock"
constexpr uint64_t kMinDelayUsec = 1000;         // MIN_DELAY_USEC: first sleep, 1 ms
constexpr uint64_t kMaxDelayUsec = 1000000;      // MAX_DELAY_USEC: wrap back to 1 ms above 1 s
// lwlock.c: MAX_SIMUL_LWLOCKS, how many LWLocks one backend may hold at once.
constexpr uint32_t kMaxSimulLwLocks = 200;

// Backend-local lock state of one client: what PostgreSQL keeps in process-local statics
// (s_lock.c's spins_per_delay, lwlock.c's held_lwlocks[] / num_held_lwlocks). Owner-only and
// plain: it is not shared memory, so it deliberately does not go through P.
struct LockLocal {
  struct Held {
    const void* lock = nullptr;
    LwMode mode = kLwExclusive;
  };
  int32_t spins_per_delay = kDefaultSpinsPerDelay;  // S3 (core/locks/spinlock.h)
  uint32_t num_held = 0;
  std::array<Held, kMaxSimulLwLocks> held{};
};

template <class P>
struct alignas(64) Proc {
  ClientId id{};
  typename P::Semaphore sem;

  // LWLock wait queue (protected by the wait-list lock of the lock this client is queued on;
  // lw_waiting is atomic because the waker clears it after releasing that lock).
  // The PlainWords below are plain variables in PostgreSQL (atomic here only so that real threads
  // are race-free): --disable-atomics leaves them alone (core/platform/platform.h); clog_group_next
  // and pa_group_next are pg_atomic_uint32 there and stay P::Atomic.
  PlainWord<P, uint32_t> lw_waiting{kNotWaiting};  // lwWaiting: plain in PostgreSQL
  typename P::template Shared<uint32_t> lw_wait_mode{kLwExclusive};
  typename P::template Shared<int32_t> lw_next{kNoProc};
  typename P::template Shared<int32_t> lw_prev{kNoProc};

  // The transaction's xids (PGXACT xid, subxidStatus, subxids.xids; PROTOCOLS.md section 6).
  // Written by the owner when XidGen assigns them (under XidGenLock, as GetNewTransactionId)
  // and cleared at transaction end: by the owner when no ProcArray is modelled, else under
  // ProcArrayLock exclusive by the owner or by its ProcArray group leader
  // (core/clog/proc_array.h). Read by a CLOG group leader for its members
  // (strategies/clog_group_update), which is ordered after the owner's writes by the CAS that
  // publishes the member and before its next writes by clog_group_member. xid is an atomic
  // because GetSnapshotData reads every client's under ProcArrayLock shared while its owner
  // sets it under XidGenLock only (PostgreSQL relies on 4-byte stores being atomic there).
  PlainWord<P, uint32_t> xid{0};                   // MyPgXact->xid; 0 = none
  typename P::template Shared<uint32_t> nsubxids{0};      // cached subxids (<= kMaxCachedSubxids)
  typename P::template Shared<uint32_t> subxids_overflowed{0};  // more than the cache holds
  std::array<typename P::template Shared<uint32_t>, kMaxCachedSubxids> subxids{};

  // CLOG group update (PG 11 baaf272ac9, PGPROC clogGroup*; protocol block in
  // strategies/clog_group_update/clog_group_update.h). The member fields are written by the
  // owner before it pushes itself on the group list and read by the leader; clog_group_page is
  // also read by a client that checks the list head's page (an atomic: that read races with the
  // head's owner starting its next transaction, as the plain read does in PostgreSQL).
  PlainWord<P, uint32_t> clog_group_member{0};                          // clogGroupMember
  typename P::template Atomic<uint32_t> clog_group_next{kInvalidProcNo};  // clogGroupNext
  typename P::template Shared<uint32_t> clog_group_xid{0};              // clogGroupMemberXid
  typename P::template Shared<uint32_t> clog_group_status{0};           // clogGroupMemberXidStatus
  PlainWord<P, uint32_t> clog_group_page{0};                            // clogGroupMemberPage
  typename P::template Shared<uint64_t> clog_group_lsn{0};              // clogGroupMemberLsn

  // ProcArray group clear (9.6, 0e141c0fbb, PGPROC procArrayGroup*; protocol block in
  // core/clog/proc_array.h). latest_xid is written by the owner before it pushes itself on the
  // group list and read by the leader after it detached the list.
  PlainWord<P, uint32_t> pa_group_member{0};                              // procArrayGroupMember
  typename P::template Atomic<uint32_t> pa_group_next{kInvalidProcNo};    // procArrayGroupNext
  typename P::template Shared<uint32_t> pa_group_latest_xid{0};           // procArrayGroupMemberXid

  // Published for the sampler (the runner reads it from another thread).
  std::atomic<uint32_t> wait_event{0};

  // Owner-only state.
  uint64_t rng_state = 0;  // per-client PRNG (splitmix64), seeded by the cell seed and id
  ProcStats stats;
  LockLocal lock_local;

  // Lock-wait tracing (core/trace.h): nullptr unless this repetition is traced; the hooks in
  // set_wait/clear_wait and the locks test it and do nothing else when it is null.
  ClientTrace* tracer = nullptr;

  void set_wait(WaitEvent e) {
    wait_event.store(static_cast<uint32_t>(e), std::memory_order_relaxed);
    if (tracer) tracer->wait(static_cast<uint16_t>(e));
  }
  void clear_wait() {
    wait_event.store(0, std::memory_order_relaxed);
    if (tracer) tracer->wait_end();
  }

  // splitmix64: cheap, deterministic, good enough for backoff jitter and lock choice.
  uint64_t next_random() {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double next_unit() { return static_cast<double>(next_random() >> 11) * 0x1.0p-53; }
};

// All clients of a cell, indexed by procno (= ClientId). Wait queues store procnos.
template <class P>
class ProcTable {
 public:
  ProcTable(uint32_t n, uint64_t seed) : procs_(std::make_unique<Proc<P>[]>(n)), n_(n) {
    for (uint32_t i = 0; i < n; ++i) {
      procs_[i].id = ClientId{i};
      procs_[i].rng_state = proc_rng_seed(seed, i);
    }
  }
  // Where client `procno`'s splitmix64 stream starts: a hashed point of the sequence, so that
  // no two clients' streams overlap in practice. (Until 2026-12-05 it was seed * K + procno x
  // the splitmix increment + 1: client i + 1's k-th draw was client i's (k+1)-th, so clients
  // drew each other's values a few draws apart.)
  static uint64_t proc_rng_seed(uint64_t seed, uint32_t procno) {
    uint64_t z = seed * 0x100000001B3ULL + procno + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  Proc<P>& operator[](int32_t procno) { return procs_[static_cast<uint32_t>(procno)]; }
  const Proc<P>& operator[](int32_t procno) const { return procs_[static_cast<uint32_t>(procno)]; }
  uint32_t size() const { return n_; }

  ProcStats total_stats() const {
    ProcStats t;
    for (uint32_t i = 0; i < n_; ++i)
      for (size_t e = 0; e < kNumWaitEvents; ++e) t.locks[e].add(procs_[i].stats.locks[e]);
    return t;
  }

 private:
  std::unique_ptr<Proc<P>[]> procs_;
  uint32_t n_;
};

}  // namespace walbench
