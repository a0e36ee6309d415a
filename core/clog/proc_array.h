// The ProcArray: which transactions are running, as snapshots see it. Committers clear their xid
// under ProcArrayLock exclusive (ProcArrayEndTransaction), or, when that lock is busy, join a
// group whose leader takes the lock once and clears every member (ProcArrayGroupClearXid);
// statements take snapshots under ProcArrayLock shared (GetSnapshotData).
//
// ORIGIN
//   PostgreSQL storage/ipc/procarray.c, 9.6-13: ProcArrayEndTransaction,
//   ProcArrayEndTransactionInternal, ProcArrayGroupClearXid (0e141c0fbb "Reduce ProcArrayLock
//   contention by removing backends in batches.", Amit Kapila, heavily revised and committed by
//   Robert Haas 2015-08-06, PG 9.6; the list is detached
//   with an exchange since 2f39106a20, 2018; wait event ProcArrayGroupUpdate since PG 10) and
//   GetSnapshotData (the pre-14 version that scans every PGXACT under ProcArrayLock shared).
//   PROTOCOLS.md section 6. The CLOG group update of PG 11 (strategies/clog_group_update) copied
//   this pattern. Our code, not theirs.
//
// DESIGN SUMMARY
//   One LWLock (ProcArrayLock) protects the set of running xids and latestCompletedXid.
//   end_transaction(me, latest_xid): with `group_clear`, one LWLockConditionalAcquire
//   (exclusive); if it fails, push self on the lock-free list group_first_ (CAS). The client
//   that found the list empty is the leader: it takes the lock blocking, detaches the list
//   (exchange), clears every member's xid and subxid cache and advances latestCompletedXid, drops
//   the lock and wakes the members (member = false, then a semaphore post). Members sleep on
//   their semaphore (wait event IPC:ProcArrayGroupUpdate) until they see member == false. With
//   `exclusive` (PG <= 9.5) every committer takes the lock blocking.
//   get_snapshot(me): lock shared; xmax = latestCompletedXid + 1; read every other client's
//   xid from the dense PGXACT array (9.6-13 split PGXACT out of PGPROC so that a snapshot scan
//   touches few lines: PGXACT is 12 bytes, 5 to a 64-byte line; pgxact_ lays out the same 12
//   bytes, so the sim prices the scan - and the false sharing of neighbours' xid stores - as
//   PostgreSQL's layout would); unlock.
//   Simplifications: no xmin horizon, no subxid arrays in the snapshot (only the count of
//   running xids is returned), no KnownAssignedXids, and only transactions with an xid end here
//   (PostgreSQL's read-only path clears xmin without the lock).
//
// SHARED STATE AND WHAT PROTECTS IT
//   lock_                         ProcArrayLock.
//   latest_completed_             ShmemVariableCache->latestCompletedXid: ProcArrayLock
//                                 (written exclusive, read shared).
//   pgxact_[c].xid (PGXACT xid)   set by its owner under XidGenLock (XidGen::assign, through
//                                 xid_slot()), an atomic because snapshots read it under the
//                                 shared lock meanwhile; cleared with Proc::xid under the
//                                 exclusive lock (by the owner, or by its group leader).
//   Proc::nsubxids, subxids_overflowed   cleared with xid under the exclusive lock.
//   group_first_                  procArrayGroupFirst: P::Atomic, pushed by CAS, detached by
//                                 the leader's exchange while it holds the exclusive lock.
//   Proc::pa_group_member/next    P::Atomic (procArrayGroupMember/Next): set by the owner before
//                                 its CAS; reset by the leader, member last.
//   Proc::pa_group_latest_xid     P::Shared: written by the owner before the CAS that publishes
//                                 it, read by the leader after the exchange that detached it.
//   counters_                     instrumentation (Counter): under the lock, or the owner's.
//
// INVARIANTS (checks cite them as // A<n>)
//   A1  An xid is cleared exactly once, under ProcArrayLock exclusive, by its owner or by the
//       leader of the one group its owner joined (trace and the `cleared` counter check this).
//   A2  A member returns only after seeing pa_group_member == false, stored by the leader after
//       it cleared the member's xid and reset its link: its xid is gone when it returns.
//   A3  No wake-up is lost or misattributed: a member sleeps until it sees member == false,
//       re-posting the posts it absorbed meanwhile (LWLock wake-ups share the semaphore); the
//       leader posts each member exactly once, after member = false.
//   A4  latestCompletedXid never goes backwards.
//
// LOCK ORDER
//   ProcArrayLock is taken with no other lock held (after the CLOG update at commit, at the
//   start of a statement). The leader posts only after releasing it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/counter.h"
#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/types.h"

#define WALBENCH_PROCARRAY_CHECK(cond, inv, what)                                               \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "walbench: ProcArray invariant %s violated at %s:%d: %s\n", inv,     \
                   __FILE__, __LINE__, what);                                                   \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)

namespace walbench {

// How committers clear their xid (config key clog.procarray).
enum class ProcArrayMode {
  kOff,         // no ProcArray modelled: the owner clears its xid without a lock, no snapshots
  kExclusive,   // PG <= 9.5: ProcArrayLock exclusive per committer
  kGroupClear,  // PG 9.6+: conditional acquire, else ProcArrayGroupClearXid
};
// NB: the names must match harness/config_fields.cc (clog.procarray).
inline ProcArrayMode parse_procarray_mode(const std::string& s) {
  if (s == "off") return ProcArrayMode::kOff;
  if (s == "exclusive") return ProcArrayMode::kExclusive;
  if (s == "group_clear") return ProcArrayMode::kGroupClear;
  throw std::invalid_argument("unknown clog.procarray \"" + s + "\" (off, exclusive, group_clear)");
}

// What one GetSnapshotData saw.
struct SnapshotInfo {
  Xid xmax = kInvalidXid;  // latestCompletedXid + 1
  uint32_t running = 0;    // other clients' xids found running (below xmax)
};

struct ProcArrayCounters {
  Counter snapshots;      // GetSnapshotData calls
  Counter cleared;        // xids cleared (A1)
  Counter alone;          // conditional acquire succeeded (or mode exclusive)
  Counter leaders;        // group leaders
  Counter members;        // xids cleared by leaders, their own included
  Counter largest_group;  // a maximum over the run
  Counter extra_wakeups;  // stray semaphore posts absorbed by waiting members (A3)
};

template <class P>
class ProcArray {
 public:
  ProcArray(ProcTable<P>& procs, uint32_t clients, ProcArrayMode mode)
      : procs_(procs), clients_(clients), mode_(mode), lock_(&procs, WaitEvent::kProcArrayLock) {}
  ProcArray(const ProcArray&) = delete;
  ProcArray& operator=(const ProcArray&) = delete;

  ProcArrayMode mode() const { return mode_; }
  LWLock<P>& lock() { return lock_; }

  // MyPgXact->xid, for XidGen::assign to store a new top-level xid in under XidGenLock.
  typename P::template Atomic<uint32_t>& xid_slot(const Proc<P>& me) { return pgxact_[me.id.value].xid; }
  uint32_t advertised_xid(uint32_t client) const { return pgxact_[client].xid.load(); }

  // GetSnapshotData (pre-14): the running xids of every other client, under the shared lock.
  SnapshotInfo get_snapshot(Proc<P>& me) {
    lock_.acquire(me, kLwShared);
    SnapshotInfo s;
    s.xmax = Xid{latest_completed_.get() + 1};
    for (uint32_t c = 0; c < clients_; ++c) {
      if (c == me.id.value) continue;
      const uint32_t x = pgxact_[c].xid.load();
      if (x != 0 && x < s.xmax.value) ++s.running;
    }
    ++counters_[me.id.value].snapshots;
    lock_.release(me);
    return s;
  }

  // ProcArrayEndTransaction for a transaction with an xid (latest_xid: the largest xid of its
  // tree, what latestCompletedXid advances to).
  void end_transaction(Proc<P>& me, Xid latest_xid) {
    WALBENCH_PROCARRAY_CHECK(pgxact_[me.id.value].xid.load() != 0, "A1",
                             "ending a transaction without an advertised xid");
    if (mode_ == ProcArrayMode::kExclusive) {
      lock_.acquire(me, kLwExclusive);
      clear_locked(me, me, latest_xid);
      lock_.release(me);
      ++counters_[me.id.value].alone;
      return;
    }
    if (lock_.conditional_acquire(me, kLwExclusive)) {
      clear_locked(me, me, latest_xid);
      lock_.release(me);
      ++counters_[me.id.value].alone;
      return;
    }
    group_clear(me, latest_xid);
  }

  // After the run.
  Xid latest_completed() const { return Xid{latest_completed_.get()}; }
  ProcArrayCounters totals() const {
    ProcArrayCounters t;
    for (const auto& c : counters_) {
      t.snapshots += c.snapshots;
      t.cleared += c.cleared;
      t.alone += c.alone;
      t.leaders += c.leaders;
      t.members += c.members;
      t.extra_wakeups += c.extra_wakeups;
      t.largest_group = std::max<uint64_t>(t.largest_group, c.largest_group);
    }
    return t;
  }
  // May be called while clients run (Counters only).
  nlohmann::json stats() const {
    const ProcArrayCounters t = totals();
    return {{"mode", mode_ == ProcArrayMode::kGroupClear ? "group_clear" : "exclusive"},
            {"snapshots", t.snapshots.get()},
            {"cleared", t.cleared.get()},
            {"alone", t.alone.get()},
            {"leaders", t.leaders.get()},
            {"group_members", t.members.get()},
            {"largest_group", t.largest_group.get()},
            {"extra_wakeups", t.extra_wakeups.get()}};
  }

  // Test hook: when set, every xid cleared is appended (xid, client) under the exclusive lock.
  std::vector<std::pair<uint32_t, uint32_t>>* trace = nullptr;

 private:
  // ProcArrayEndTransactionInternal. The exclusive lock held by `me`; `m` is me or a member.
  void clear_locked(Proc<P>& me, Proc<P>& m, Xid latest_xid) {
    WALBENCH_LOCK_DCHECK(lock_.held_by_me_in_mode(me, kLwExclusive), "A1",
                         "clearing an xid without ProcArrayLock exclusive");
    PgXact& px = pgxact_[m.id.value];
    const uint32_t x = px.xid.load();
    WALBENCH_PROCARRAY_CHECK(x != 0, "A1", "xid cleared twice");
    if (trace != nullptr) trace->emplace_back(x, m.id.value);
    px.xid.store(0);
    px.xmin.set(0);
    m.xid.store(0);
    m.nsubxids.set(0);
    m.subxids_overflowed.set(0);
    if (latest_completed_.get() < latest_xid.value) latest_completed_.set(latest_xid.value);  // A4
    ++counters_[me.id.value].cleared;
  }

  // ProcArrayGroupClearXid.
  void group_clear(Proc<P>& me, Xid latest_xid) {
    const uint32_t self = me.id.value;
    WALBENCH_PROCARRAY_CHECK(me.pa_group_next.load() == kInvalidProcNo, "A1", "already on a group list");
    me.pa_group_member.store(1);
    me.pa_group_latest_xid.set(latest_xid.value);
    uint32_t next = group_first_.load();
    for (;;) {
      me.pa_group_next.store(next);
      if (group_first_.compare_exchange(next, self)) break;
    }
    if (next != kInvalidProcNo) {
      // A member: wait for the leader (A2, A3).
      LockStats& ls = me.stats.of(WaitEvent::kProcArrayGroupUpdate);
      ++ls.acquisitions;
      const uint64_t t0 = P::now_ns();
      me.set_wait(WaitEvent::kProcArrayGroupUpdate);
      uint32_t extra = 0;
      for (;;) {
        me.sem.wait();
        ++ls.sleeps;
        if (me.pa_group_member.load() == 0) break;  // A2
        ++extra;
      }
      me.clear_wait();
      ls.wait_ns += P::now_ns() - t0;
      WALBENCH_PROCARRAY_CHECK(me.pa_group_next.load() == kInvalidProcNo, "A2", "woken still linked");
      for (uint32_t i = 0; i < extra; ++i) me.sem.post();  // A3
      counters_[self].extra_wakeups += extra;
      return;
    }
    // The leader.
    PerClientCounters& pc = counters_[self];
    ++pc.leaders;
    lock_.acquire(me, kLwExclusive);
    uint32_t cur = group_first_.exchange(kInvalidProcNo);
    const uint32_t wake = cur;
    uint64_t n = 0;
    while (cur != kInvalidProcNo) {
      Proc<P>& m = procs_[static_cast<int32_t>(cur)];
      clear_locked(me, m, Xid{m.pa_group_latest_xid.get()});
      ++n;
      cur = m.pa_group_next.load();
    }
    lock_.release(me);
    pc.members += n;
    if (n > pc.largest_group) pc.largest_group = n;
    for (cur = wake; cur != kInvalidProcNo;) {
      Proc<P>& m = procs_[static_cast<int32_t>(cur)];
      cur = m.pa_group_next.load();
      m.pa_group_next.store(kInvalidProcNo);
      m.pa_group_member.store(0);  // A2: after the link reset
      if (&m != &me) m.sem.post();  // A3
    }
  }

  // Per client, on its own line; written by the client (a leader counts its members on its own).
  using PerClientCounters = ProcArrayCounters;
  struct alignas(64) Padded : ProcArrayCounters {};

  // PGXACT (9.6-13): xid 4, xmin 4, vacuumFlags/overflowed/delayChkpt/nxids 1 each = 12 bytes.
  struct PgXact {
    typename P::template Atomic<uint32_t> xid{0};
    typename P::template Shared<uint32_t> xmin{0};  // not modelled beyond its place in the line
    typename P::template Shared<uint32_t> flags{0};
  };
  static_assert(sizeof(PgXact) == 12, "PGXACT is 12 bytes");
  // The array on whole 64-byte lines, so which entries share a line does not depend on the heap.
  struct alignas(64) Line {
    unsigned char bytes[64];
  };
  class PgXactArray {
   public:
    explicit PgXactArray(size_t n)
        : lines_(std::make_unique<Line[]>((n * sizeof(PgXact) + 63) / 64)),
          base_(reinterpret_cast<PgXact*>(lines_.get())), n_(n) {
      for (size_t i = 0; i < n_; ++i) new (&base_[i]) PgXact();
    }
    PgXact& operator[](size_t i) { return base_[i]; }
    const PgXact& operator[](size_t i) const { return base_[i]; }

   private:
    std::unique_ptr<Line[]> lines_;
    PgXact* base_;
    size_t n_;
  };

  ProcTable<P>& procs_;
  const uint32_t clients_;
  const ProcArrayMode mode_;
  alignas(64) LWLock<P> lock_;  // ProcArrayLock
  typename P::template Shared<uint32_t> latest_completed_{kFirstNormalXid.value - 1};
  alignas(64) typename P::template Atomic<uint32_t> group_first_{kInvalidProcNo};  // procArrayGroupFirst
  std::vector<Padded> counters_ = std::vector<Padded>(procs_.size());
  PgXactArray pgxact_{procs_.size()};
};

}  // namespace walbench
