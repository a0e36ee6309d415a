// The ProcArray: which transactions are running, as snapshots see it. Committers clear their xid
// under ProcArrayLock exclusive (ProcArrayEndTransaction), or, when that lock is busy, join a
// group whose leader takes the lock once and clears every member (ProcArrayGroupClearXid);
// statements take snapshots under ProcArrayLock shared (GetSnapshotData), in one of two forms:
// PG 9.2-13's scan of the 12-byte PGXACT array, or PG 14+'s scan of the dense xids array with
// snapshot reuse (clog.snapshot "pgxact" | "dense").
//
// ORIGIN
//   PostgreSQL storage/ipc/procarray.c, 9.6-13: ProcArrayEndTransaction,
//   ProcArrayEndTransactionInternal, ProcArrayGroupClearXid (0e141c0fbb "Reduce ProcArrayLock
//   contention by removing backends in batches.", Amit Kapila, heavily revised and committed by
//   Robert Haas 2015-08-06, PG 9.6; the list is detached
//   with an exchange since 2f39106a20, 2018; wait event ProcArrayGroupUpdate since PG 10) and
//   GetSnapshotData (the pre-14 version that scans every PGXACT under ProcArrayLock shared).
//   PG 14's snapshot scalability work (Andres Freund, 2020): 941697c3c1 "snapshot scalability:
//   Introduce dense array of in-progress xids" (ProcGlobal->xids, indexed by pgxactoff, written
//   by GetNewTransactionId under XidGenLock and cleared by ProcArrayEndTransactionInternal),
//   5788e258bb "snapshot scalability: Move PGXACT->vacuumFlags to ProcGlobal->statusFlags",
//   73487a60fc "snapshot scalability: Move subxact info to ProcGlobal, remove PGXACT" (the
//   dense subxidStates) and 623a9ba79b "snapshot scalability: cache snapshots using a xact
//   completion counter" (ShmemVariableCache->xactCompletionCount, bumped by every xid-bearing
//   ProcArrayEndTransactionInternal; GetSnapshotDataReuse returns the last snapshot when it did
//   not move). PROTOCOLS.md section 6. The CLOG group update of PG 11 (strategies/clog_group_update) copied
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
//   get_snapshot(me), form "pgxact" (9.2-13): lock shared; xmax = latestCompletedXid + 1; read
//   every other client's xid from the PGXACT array (9.2, ed0b409d22, split PGXACT out of PGPROC so that a
//   snapshot scan touches few lines: PGXACT is 12 bytes, 5 to a 64-byte line; pgxact_ lays out
//   the same 12 bytes, so the sim prices the scan - and the false sharing of neighbours' xid
//   stores - as PostgreSQL's layout would); unlock.
//   get_snapshot(me), form "dense" (14+): lock shared; if xactCompletionCount equals the one
//   this client's last snapshot saw, reuse that snapshot (GetSnapshotDataReuse) and unlock;
//   else read latestCompletedXid and xactCompletionCount (one line, as in VariableCacheData),
//   scan the dense xids array (4 bytes, 16 to a line) and, for each xid that is running, read
//   its statusFlags byte and subxidStates entry (dense arrays of their own, as PostgreSQL's),
//   a line at a time (P::read_run: on the sim the entries of a line arrive together, so a line
//   is one load and its other entries hits, and the scan's misses overlap, up to 24 in flight,
//   as an out-of-order core's independent loads do). read_run is an approximation for
//   simulator speed (sim.h "RUNS"), needed here: a load per entry cost 12,000 events per
//   4,096-client snapshot.
//   The "pgxact" scan keeps the finer load per entry (its configs have at most 128 clients).
//   What the approximation costs, measured on the CLOG config with "pgxact" priced both ways
//   (a build not kept, seeds 1-3): group update over exclusive at 64 clients 1.03-1.06 per entry,
//   0.99-1.02 line at a time; at 128 clients 1.01-1.07 against 0.96-1.00 (published 1.11, 1.64).
//   Remember the count; unlock.
//   Clearing an xid stores 0 in xids[c], zeroes subxidStates[c] if it was set, and bumps
//   xactCompletionCount, all under the exclusive lock. Every transaction that ends here has an
//   xid, so a client's own commit moves the count before its next statement: with one snapshot
//   per statement (wal_cell.h statement()) a snapshot is reused only by a client that took two
//   with no commit anywhere between them, never in emit_message.
//   Simplifications: no xmin horizon, no subxid arrays in the snapshot (only the count of
//   running xids is returned; "dense" reads each running xid's subxidStates entry but does not
//   copy the subxids it counts), no KnownAssignedXids, and only transactions with an xid end
//   here (PostgreSQL's read-only path clears xmin without the lock, and in 14+ does not bump
//   xactCompletionCount). "dense" also reads a running xid's subxidStates entry after the
//   snapshot overflowed (PostgreSQL stops looking), and writes no proc->xmin (at a clear or on
//   reuse). pgxactoff is the client index (PostgreSQL keeps the dense arrays in
//   procarray order, the connected backends packed; walbench's clients connect once, in order).
//
// SHARED STATE AND WHAT PROTECTS IT
//   lock_                         ProcArrayLock.
//   cache_->latest_completed      ShmemVariableCache->latestCompletedXid: ProcArrayLock
//                                 (written exclusive, read shared).
//   cache_->xact_completion_count ShmemVariableCache->xactCompletionCount ("dense"): ProcArrayLock
//                                 (bumped exclusive, read shared). Both on the VariableCache line
//                                 beside nextXid (core/clog/variable_cache.h: XidGen's, passed to
//                                 the constructor; a ProcArray without one has its own line).
//   pgxact_[c].xid (PGXACT xid)   "pgxact": set by its owner under XidGenLock (XidGen::assign,
//   or xids_[c] (ProcGlobal->xids) through xid_slot()), an atomic because snapshots read it
//                                 under the shared lock meanwhile (a PlainWord: PostgreSQL's is
//                                 a plain TransactionId, so --disable-atomics leaves it alone,
//                                 core/platform/platform.h); cleared with Proc::xid under
//                                 the exclusive lock (by the owner, or by its group leader).
//   subxid_states_[c]             "dense" (ProcGlobal->subxidStates: count | overflowed << 8):
//                                 set by its owner under XidGenLock (XidGen::assign, through
//                                 subxid_status_slot()), an atomic for the same reason; zeroed
//                                 with the xid.
//   status_flags_[c]              "dense" (ProcGlobal->statusFlags): always 0 here (no vacuum, no
//                                 logical decoding); read by the scan for each running xid.
//   last_[c]                      client-local (the backend's static snapshot: its xmax, the
//                                 completion count it saw, and with keep_snapshots() its running
//                                 xids for xid_visible), on its own line; not priced, as a
//                                 backend's own snapshot memory is not shared.
//   Proc::nsubxids, subxids_overflowed   cleared with xid under the exclusive lock.
//   group_first_                  procArrayGroupFirst: P::Atomic, pushed by CAS, detached by
//                                 the leader's exchange while it holds the exclusive lock.
//   Proc::pa_group_member/next    PlainWord / P::Atomic (procArrayGroupMember/Next): set by the owner before
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
//   A5  ("dense") a reused snapshot is exact: xactCompletionCount moves with every clear, and
//       every clear happens under the exclusive lock, so an unchanged count under the shared
//       lock means no xid ended since the snapshot was taken; an xid assigned since then is
//       >= its xmax and would not be listed anyway (tests/clog_procarray_test.cc compares every
//       snapshot with one computed from the advertised xids, and, under concurrent group clears,
//       every reused one with a scan under the same shared lock: check_reuse).
//
// LOCK ORDER
//   ProcArrayLock is taken with no other lock held (after the CLOG update at commit, at the
//   start of a statement). The leader posts only after releasing it.
#pragma once

#include <algorithm>
#include <atomic>
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

#include "core/aligned_array.h"
#include "core/counter.h"
#include "core/clog/variable_cache.h"
#include "core/locks/lwlock.h"
#include "core/platform/line_names.h"
#include "core/platform/platform.h"
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

// How GetSnapshotData finds the running xids (config key clog.snapshot).
enum class SnapshotForm {
  kPgxact,  // PG 9.2-13: scan the 12-byte PGXACT array
  kDense,   // PG 14+: scan the dense xids array; reuse while xactCompletionCount stands still
};
// NB: the names must match harness/config_fields.cc (clog.snapshot).
inline SnapshotForm parse_snapshot_form(const std::string& s) {
  if (s == "pgxact") return SnapshotForm::kPgxact;
  if (s == "dense") return SnapshotForm::kDense;
  throw std::invalid_argument("unknown clog.snapshot \"" + s + "\" (pgxact, dense)");
}

// What one GetSnapshotData saw.
struct SnapshotInfo {
  Xid xmax = kInvalidXid;  // latestCompletedXid + 1
  uint32_t running = 0;    // other clients' xids found running (below xmax)
  bool operator==(const SnapshotInfo&) const = default;
};

struct ProcArrayCounters {
  Counter snapshots;      // GetSnapshotData calls
  Counter reused;         // of which GetSnapshotDataReuse returned the last one ("dense")
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
  // cache: ShmemVariableCache (XidGen::variable_cache()), where latestCompletedXid and
  // xactCompletionCount live beside nextXid; nullptr gives the ProcArray a line of its own.
  ProcArray(ProcTable<P>& procs, uint32_t clients, ProcArrayMode mode,
            SnapshotForm form = SnapshotForm::kPgxact, VariableCache<P>* cache = nullptr)
      : procs_(procs), clients_(clients), mode_(mode), form_(form),
        lock_(&procs, WaitEvent::kProcArrayLock),
        own_cache_(cache ? nullptr : std::make_unique<VariableCache<P>>()),
        cache_(cache ? *cache : *own_cache_) {
    if constexpr (runs_in_virtual_time<P>())  // `walbench run --top-lines` (line_names.h)
      line_names::add(&group_first_, sizeof(group_first_), "procArrayGroupFirst");
  }
  ~ProcArray() {
    if constexpr (runs_in_virtual_time<P>()) line_names::remove(&group_first_);
  }
  ProcArray(const ProcArray&) = delete;
  ProcArray& operator=(const ProcArray&) = delete;

  ProcArrayMode mode() const { return mode_; }
  SnapshotForm form() const { return form_; }
  LWLock<P>& lock() { return lock_; }

  // Where XidGen::assign stores a new top-level xid under XidGenLock: MyPgXact->xid ("pgxact")
  // or ProcGlobal->xids[pgxactoff] ("dense").
  PlainWord<P, uint32_t>& xid_slot(const Proc<P>& me) {
    return form_ == SnapshotForm::kDense ? xids_[me.id.value] : pgxact_[me.id.value].xid;
  }
  // ProcGlobal->subxidStates[pgxactoff] ("dense"; nullptr for "pgxact", whose PGXACT nxids and
  // overflowed bytes are not kept up to date: its snapshots never read them).
  PlainWord<P, uint16_t>* subxid_status_slot(const Proc<P>& me) {
    return form_ == SnapshotForm::kDense ? &subxid_states_[me.id.value] : nullptr;
  }
  uint32_t advertised_xid(uint32_t client) const {
    return form_ == SnapshotForm::kDense ? xids_[client].load() : pgxact_[client].xid.load();
  }

  // Keep each client's last snapshot (its xmax and running xids, client-local and unpriced) for
  // xid_visible(): row-lock workloads ask it for READ COMMITTED's TM_Updated
  // (core/cell/row_locks.h). Off by default: the other workloads never ask, and a list per
  // snapshot would cost real-thread runs with thousands of clients for nothing.
  void keep_snapshots() {
    for (const LastSnapshot& l : last_)
      WALBENCH_PROCARRAY_CHECK(l.info.xmax == kInvalidXid, "keep_snapshots",
                               "keep_snapshots() after a snapshot was taken: its running xids are lost");
    keep_snapshots_ = true;
  }

  // XidInMVCCSnapshot inverted, over the client's last snapshot: whether `xid` (another
  // transaction's, ended) committed before that snapshot was taken. True when no snapshot was
  // kept (keep_snapshots not called, or none taken yet).
  bool xid_visible(const Proc<P>& me, Xid xid) const {
    if (!keep_snapshots_) return true;
    const LastSnapshot& last = last_[me.id.value];
    if (last.info.xmax == kInvalidXid) return true;
    if (xid.value >= last.info.xmax.value) return false;
    return std::find(last.running.begin(), last.running.end(), xid.value) == last.running.end();
  }

  // GetSnapshotData: the running xids of every other client, under the shared lock.
  SnapshotInfo get_snapshot(Proc<P>& me) {
    lock_.acquire(me, kLwShared);
    PerClientCounters& pc = counters_[me.id.value];
    ++pc.snapshots;
    SnapshotInfo s;
    LastSnapshot& last = last_[me.id.value];
    std::vector<uint32_t>* kept = keep_snapshots_ ? &last.running : nullptr;
    if (form_ == SnapshotForm::kPgxact) {  // never reused: completions stay 0
      s.xmax = Xid{cache_.latest_completed.get() + 1};
      if (kept) kept->clear();
      for (uint32_t c = 0; c < clients_; ++c) {
        if (c == me.id.value) continue;
        const uint32_t x = pgxact_[c].xid.load();
        if (x != 0 && x < s.xmax.value) {
          ++s.running;
          if (kept) kept->push_back(x);
        }
      }
      last.info = s;
      lock_.release(me);
      return s;
    }
    const uint64_t completions = cache_.xact_completion_count.get();
    if (last.completions != 0 && completions == last.completions) {  // GetSnapshotDataReuse
      ++pc.reused;
      if (check_reuse && (cache_.latest_completed.get() + 1 != last.info.xmax.value ||
                          scan_dense(me, last.info.xmax, nullptr) != last.info.running))
        reuse_mismatches.fetch_add(1);  // A5, test hook
      lock_.release(me);
      return last.info;  // last.running still holds the list of the scan that made it
    }
    s.xmax = Xid{cache_.latest_completed.get() + 1};
    if (kept) kept->clear();
    s.running = scan_dense(me, s.xmax, kept);
    last.completions = completions;
    last.info = s;
    lock_.release(me);
    return s;
  }

  // ProcArrayEndTransaction for a transaction with an xid (latest_xid: the largest xid of its
  // tree, what latestCompletedXid advances to).
  void end_transaction(Proc<P>& me, Xid latest_xid) {
    WALBENCH_PROCARRAY_CHECK(xid_slot(me).load() != 0, "A1",
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
  Xid latest_completed() const { return Xid{cache_.latest_completed.get()}; }
  ProcArrayCounters totals() const {
    ProcArrayCounters t;
    for (const auto& c : counters_) {
      t.snapshots += c.snapshots;
      t.reused += c.reused;
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
            {"snapshot", form_ == SnapshotForm::kDense ? "dense" : "pgxact"},
            {"snapshots", t.snapshots.get()},
            {"snapshots_reused", t.reused.get()},
            {"cleared", t.cleared.get()},
            {"alone", t.alone.get()},
            {"leaders", t.leaders.get()},
            {"group_members", t.members.get()},
            {"largest_group", t.largest_group.get()},
            {"extra_wakeups", t.extra_wakeups.get()}};
  }

  // Test hook: when set, every xid cleared is appended (xid, client) under the exclusive lock.
  std::vector<std::pair<uint32_t, uint32_t>>* trace = nullptr;
  // Test hook (threads only: it adds priced accesses on the sim): when set, every reused snapshot
  // is compared with a fresh scan made under the same shared lock (A5); mismatches counted here.
  bool check_reuse = false;
  std::atomic<uint64_t> reuse_mismatches{0};  // shared-state-lint: allow test-only tally, threads only, never priced

 private:
  // ProcArrayEndTransactionInternal. The exclusive lock held by `me`; `m` is me or a member.
  void clear_locked(Proc<P>& me, Proc<P>& m, Xid latest_xid) {
    WALBENCH_LOCK_DCHECK(lock_.held_by_me_in_mode(me, kLwExclusive), "A1",
                         "clearing an xid without ProcArrayLock exclusive");
    const uint32_t off = m.id.value;
    const uint32_t x = xid_slot(m).load();
    WALBENCH_PROCARRAY_CHECK(x != 0, "A1", "xid cleared twice");
    if (trace != nullptr) trace->emplace_back(x, off);
    if (form_ == SnapshotForm::kPgxact) {
      pgxact_[off].xid.store(0);
      pgxact_[off].xmin.set(0);
    } else {
      xids_[off].store(0);
      if (m.nsubxids.get() != 0 || m.subxids_overflowed.get() != 0) subxid_states_[off].store(0);
    }
    m.xid.store(0);
    m.nsubxids.set(0);
    m.subxids_overflowed.set(0);
    if (cache_.latest_completed.get() < latest_xid.value) cache_.latest_completed.set(latest_xid.value);  // A4
    if (form_ == SnapshotForm::kDense)
      cache_.xact_completion_count.set(cache_.xact_completion_count.get() + 1);  // A5
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

  // The dense scan ("dense"): the running xids below xmax among the other clients' entries.
  // PostgreSQL's loop reads xids[i] and, for a running xid, statusFlags[i] and subxidStates[i].
  // Here each line of xids is read as one run (P::read_run: the sim prices a line once, the
  // entries on it as hits), then the flags and subxid states of each stretch of consecutive
  // running entries as runs of their own: the same lines and the same number of reads as the
  // loop, in the order line by line rather than entry by entry.
  uint32_t scan_dense(Proc<P>& me, Xid xmax, std::vector<uint32_t>* kept) {
    using XidSlot = PlainWord<P, uint32_t>;
    constexpr uint32_t kXidsPerLine = 64 / sizeof(XidSlot);
    static_assert(64 % sizeof(XidSlot) == 0 && sizeof(XidSlot) == sizeof(uint32_t));
    uint32_t running = 0;
    uint32_t x[kXidsPerLine];
    for (uint32_t base = 0; base < clients_; base += kXidsPerLine) {
      const uint32_t n = std::min(kXidsPerLine, clients_ - base);
      P::read_run(&xids_[base], sizeof(XidSlot), n, [&](size_t i) { x[i] = xids_[base + i].load(); });
      const auto is_running = [&](uint32_t i) {
        return x[i] != 0 && base + i != me.id.value && x[i] < xmax.value;
      };
      for (uint32_t i = 0; i < n;) {
        if (!is_running(i)) {
          ++i;
          continue;
        }
        uint32_t end = i + 1;
        while (end < n && is_running(end)) ++end;
        const uint32_t first = base + i;
        // PROC_IN_VACUUM | PROC_IN_LOGICAL_DECODING: never set here.
        P::read_run(&status_flags_[first], sizeof(status_flags_[0]), end - i,
                    [&](size_t k) { (void)status_flags_[first + k].get(); });
        // The subxids each entry counts are not copied (DESIGN SUMMARY).
        P::read_run(&subxid_states_[first], sizeof(subxid_states_[0]), end - i,
                    [&](size_t k) { (void)subxid_states_[first + k].load(); });
        running += end - i;
        if (kept) kept->insert(kept->end(), x + i, x + end);
        i = end;
      }
    }
    return running;
  }

  // Per client, on its own line; written by the client (a leader counts its members on its own).
  using PerClientCounters = ProcArrayCounters;
  struct alignas(64) Padded : ProcArrayCounters {};

  // PGXACT (9.2-13): xid 4, xmin 4, vacuumFlags/overflowed/delayChkpt/nxids 1 each = 12 bytes.
  struct PgXact {
    PlainWord<P, uint32_t> xid{0};
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

  // The backend's last snapshot, client-local: snapXactCompletionCount ("dense"; 0: none to
  // reuse), what the snapshot returned (xmax kInvalidXid: none taken yet) and, with
  // keep_snapshots(), the running xids it listed (XidInMVCCSnapshot's xip).
  struct alignas(64) LastSnapshot {
    uint64_t completions = 0;
    SnapshotInfo info;
    std::vector<uint32_t> running;
  };

  ProcTable<P>& procs_;
  const uint32_t clients_;
  const ProcArrayMode mode_;
  const SnapshotForm form_;
  alignas(64) LWLock<P> lock_;  // ProcArrayLock
  std::unique_ptr<VariableCache<P>> own_cache_;  // only without a cache from the constructor
  VariableCache<P>& cache_;
  alignas(64) typename P::template Atomic<uint32_t> group_first_{kInvalidProcNo};  // procArrayGroupFirst
  std::vector<Padded> counters_ = std::vector<Padded>(procs_.size());
  PgXactArray pgxact_{procs_.size()};
  // "dense": ProcGlobal->xids, ->subxidStates, ->statusFlags, each from a line boundary.
  AlignedArray<PlainWord<P, uint32_t>> xids_ = make_aligned_array<PlainWord<P, uint32_t>>(procs_.size());
  AlignedArray<PlainWord<P, uint16_t>> subxid_states_ =
      make_aligned_array<PlainWord<P, uint16_t>>(procs_.size());
  AlignedArray<typename P::template Shared<uint8_t>> status_flags_ =
      make_aligned_array<typename P::template Shared<uint8_t>>(procs_.size());
  std::vector<LastSnapshot> last_ = std::vector<LastSnapshot>(procs_.size());
  bool keep_snapshots_ = false;
};

}  // namespace walbench
