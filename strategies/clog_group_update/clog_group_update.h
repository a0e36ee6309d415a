// clog_group_update: committers that find CLogControlLock busy queue themselves on a lock-free
// list; the first becomes the leader, takes the lock once and sets the status of the whole group.
//
// Origin
//   PostgreSQL 11, baaf272ac9 "Use group updates when setting transaction status in clog."
//   (Amit Kapila, committed by Robert Haas 2017-09-01; an earlier version, ccce90b398, was
//   reverted in 2017-03), from the pgsql-hackers thread "Speed up Clog Access by increasing CLOG
//   buffers" (Amit Kapila, 2015-17). b786304c29 (2021) fixed the clean-up when leaving a group
//   whose page differs (modelled: clog_group_next is reset on that exit). Modelled on the
//   ProcArray group clear of 9.6 (0e141c0fbb). Facts: PROTOCOLS.md section 6. Our code.
//
// Design summary
//   clog.c TransactionIdSetPageStatus: a transaction whose whole tree is on one page, with at
//   most `threshold_subxids` (THRESHOLD_SUBTRANS_CLOG_OPT = 5) subtransactions that are exactly
//   its unoverflowed PGPROC subxid cache, first tries LWLockConditionalAcquire; if that fails it
//   tries TransactionGroupUpdateXidStatus, and only if the group would not take it (the head of
//   the list wants another page) does it wait for the lock normally. Every other case takes the
//   lock normally (the exclusive path of clog_exclusive).
//
// Shared state (what protects it)
//   group_first_                P::Atomic<uint32_t> (procglobal->clogGroupFirst): the procno of
//                               the list head or kInvalidProcNo; pushed by CAS, detached by the
//                               leader with exchange (under the control lock).
//   Proc::clog_group_member     PlainWord (clogGroupMember): true from the owner's fill-in to
//                               the leader's wake-up; the owner's "done" condition.
//   Proc::clog_group_next       P::Atomic (clogGroupNext): the list link; written by the owner
//                               before its CAS, reset by the leader before it clears member.
//   Proc::clog_group_xid, _status, _lsn, xid, nsubxids, subxids   P::Shared: written by the
//                               owner before the CAS that publishes it, read by the leader after
//                               the exchange that detaches the list (ordered by those RMWs).
//   Proc::clog_group_page       PlainWord: also read by joiners checking the head's page.
//   The CLOG itself: under its control lock (core/clog/clog.h).
//
// Invariants (asserts and checks cite them as // G<n>)
//   G1  A client is on at most one list, once: it pushes itself only with clog_group_next reset
//       to kInvalidProcNo and clog_group_member just set by itself.
//   G2  Only the leader that detached a list walks it and only while holding the control lock
//       exclusively (a page read for a member releases and takes it again inside, as
//       SimpleLruReadPage does in PostgreSQL); it applies every member's own page (a group may mix pages: the head's page
//       check races with the head's leader finishing, as PostgreSQL's comment admits).
//   G3  A follower returns only after seeing clog_group_member == false, which the leader stores
//       after applying its status and resetting its link: the status is set when it returns.
//   G4  No wake-up is lost or misattributed: the follower sleeps on its semaphore until it sees
//       member == false, counting posts that arrive earlier (left over from LWLock wake-ups) and
//       re-posting them; the leader posts each follower exactly once, after clearing member.
//
// Steps (set_page_status, the eligible case)
//   1. conditional_acquire(exclusive) -> set alone, release, done ("alone").
//   2. Fill in clog_group_member = true, xid, status, page, lsn.
//   3. head = load(group_first_). If head is a member for another page: member = false, next =
//      invalid (b786304c29), take the lock normally ("fallback_page").
//   4. next = head; CAS(group_first_, head -> me); on failure retry from 3 with the new head.
//   5. Follower (head was not empty): wait event IPC:ClogGroupUpdate (XactGroupUpdate 13+); sleep on the semaphore
//      until member == false (G3, G4). Done.
//   6. Leader (list was empty): acquire(exclusive) (blocking); first = exchange(group_first_,
//      invalid); for each member from first: set_page_status_locked(member's xid, its cached
//      subxids, status, lsn, page); release.
//   7. Wake: for each member: save next, reset its next, member = false (a seq_cst store: the
//      write barrier), post its semaphore unless it is the leader.
// Wait and wake paths: followers on their Proc semaphore (step 5) woken by the leader (step 7);
//   the leader and the fallbacks in the LWLock queue.
// Lock order: CLogControlLock -> (WAL flush locks via the CLOG's page write). Followers hold no
//   lock while they sleep; the leader posts only after releasing the control lock.
// Hazards
//   - A member's fields must not be reused before the leader is done with it: the owner does not
//     start another transaction before it has seen member == false (G3).
//   - The Proc semaphore is shared with the LWLock wait queue; both sides absorb stray posts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clog/clog.h"
#include "core/proc.h"
#include "strategies/strategy.h"

namespace walbench {

ClogStrategyInfo clog_group_update_info();

struct ClogGroupUpdateParams {
  uint32_t threshold_subxids = kClogGroupThreshold;  // THRESHOLD_SUBTRANS_CLOG_OPT
  static ClogGroupUpdateParams from_json(const nlohmann::json& j);
};

template <class P>
class ClogGroupUpdate {
 public:
  ClogGroupUpdate(Clog<P>& clog, ProcTable<P>& procs, const ClogGroupUpdateParams& params)
      : clog_(clog), procs_(procs), params_(params), stats_(procs.size()) {}

  // TransactionIdSetTreeStatus through this strategy's page step.
  void set_status(Proc<P>& me, Xid xid, std::span<const Xid> subxids, XidStatus status, Lsn lsn) {
    clog_.set_tree_status(*this, me, xid, subxids, status, lsn);
  }

  // TransactionIdSetPageStatus, PG 11-16.
  void set_page_status(Proc<P>& me, Xid xid, std::span<const Xid> subxids, XidStatus status,
                       Lsn lsn, uint32_t pageno, bool all_xact_same_page) {
    Stats& st = stats_[me.id.value];
    if (all_xact_same_page && eligible(me, xid, subxids)) {
      LWLock<P>& lock = clog_.control_lock();
      if (lock.conditional_acquire(me, kLwExclusive)) {  // 1
        clog_.set_page_status_locked(me, xid, subxids, status, lsn, pageno);
        lock.release(me);
        ++st.alone;
        return;
      }
      if (group_update(me, xid, status, lsn, pageno, st)) return;
      ++st.fallback_page;  // the group wanted another page: fall through
    } else {
      ++st.not_eligible;
    }
    clog_.control_lock().acquire(me, kLwExclusive);
    clog_.set_page_status_locked(me, xid, subxids, status, lsn, pageno);
    clog_.control_lock().release(me);
  }

  // After the run: how the updates went. leaders + followers + alone + fallback_page +
  // not_eligible = page updates; group_members = statuses leaders set (their own included).
  nlohmann::json stats() const {
    Stats t;
    for (const auto& s : stats_) {
      t.alone += s.alone;
      t.leaders += s.leaders;
      t.followers += s.followers;
      t.group_members += s.group_members;
      t.largest_group = std::max(t.largest_group, s.largest_group);
      t.fallback_page += s.fallback_page;
      t.not_eligible += s.not_eligible;
      t.extra_wakeups += s.extra_wakeups;
    }
    return {{"alone", t.alone},
            {"leaders", t.leaders},
            {"followers", t.followers},
            {"group_members", t.group_members},
            {"largest_group", t.largest_group},
            {"fallback_page", t.fallback_page},
            {"not_eligible", t.not_eligible},
            {"extra_wakeups", t.extra_wakeups}};
  }

 private:
  struct alignas(64) Stats {  // owner-only instrumentation (core/counter.h)
    Counter alone;          // conditional acquire succeeded
    Counter leaders;
    Counter followers;
    Counter group_members;  // statuses set as leader
    Counter largest_group;  // a maximum, not a sum: covers the whole run
    Counter fallback_page;  // list head wanted another page
    Counter not_eligible;   // tree over pages, too many subxids, or not the cached ones
    Counter extra_wakeups;  // stray semaphore posts absorbed while following (G4)
  };

  // The group path applies to the transaction in the Proc: its own xid and exactly its cached,
  // unoverflowed subxids (the leader reads them from the Proc, not from the caller).
  bool eligible(Proc<P>& me, Xid xid, std::span<const Xid> subxids) const {
    if (subxids.size() > params_.threshold_subxids) return false;
    if (xid.value != me.xid.load() || me.subxids_overflowed.get() != 0) return false;
    if (subxids.size() != me.nsubxids.get()) return false;
    for (size_t i = 0; i < subxids.size(); ++i)
      if (subxids[i].value != me.subxids[i].get()) return false;
    return true;
  }

  // TransactionGroupUpdateXidStatus. False: not done, take the lock normally.
  bool group_update(Proc<P>& me, Xid xid, XidStatus status, Lsn lsn, uint32_t pageno, Stats& st) {
    const uint32_t self = me.id.value;
    // 2: fill in our request.
    WALBENCH_CLOG_CHECK(me.clog_group_next.load() == kInvalidProcNo, "G1", "already on a group list");
    me.clog_group_member.store(1);
    me.clog_group_xid.set(xid.value);
    me.clog_group_status.set(static_cast<uint32_t>(status));
    me.clog_group_page.store(pageno);
    me.clog_group_lsn.set(lsn.value);

    uint32_t next = group_first_.load();
    for (;;) {
      // 3: join only a group for our page.
      if (next != kInvalidProcNo && procs_[static_cast<int32_t>(next)].clog_group_page.load() != pageno) {
        me.clog_group_member.store(0);
        me.clog_group_next.store(kInvalidProcNo);  // b786304c29
        return false;
      }
      // 4: push.
      me.clog_group_next.store(next);
      if (group_first_.compare_exchange(next, self)) break;
    }

    if (next != kInvalidProcNo) {
      // 5: follower.
      ++st.followers;
      LockStats& ls = me.stats.of(WaitEvent::kClogGroupUpdate);
      ++ls.acquisitions;
      const uint64_t t0 = P::now_ns();
      me.set_wait(WaitEvent::kClogGroupUpdate);
      uint32_t extra = 0;
      for (;;) {
        me.sem.wait();
        ++ls.sleeps;
        if (me.clog_group_member.load() == 0) break;  // G3
        ++extra;                                      // G4: not ours
      }
      me.clear_wait();
      ls.wait_ns += P::now_ns() - t0;
      WALBENCH_CLOG_CHECK(me.clog_group_next.load() == kInvalidProcNo, "G1", "woken still linked");
      for (uint32_t i = 0; i < extra; ++i) me.sem.post();  // G4
      st.extra_wakeups += extra;
      return true;
    }

    // 6: leader.
    ++st.leaders;
    LWLock<P>& lock = clog_.control_lock();
    lock.acquire(me, kLwExclusive);
    uint32_t cur = group_first_.exchange(kInvalidProcNo);
    const uint32_t wake = cur;
    uint64_t members = 0;
    while (cur != kInvalidProcNo) {  // G2
      Proc<P>& m = procs_[static_cast<int32_t>(cur)];
      WALBENCH_CLOG_CHECK(m.subxids_overflowed.get() == 0, "G2", "an overflowed member in a group");
      Xid subs[kMaxCachedSubxids];
      const uint32_t n = m.nsubxids.get();
      for (uint32_t i = 0; i < n; ++i) subs[i] = Xid{m.subxids[i].get()};
      clog_.set_page_status_locked(me, Xid{m.clog_group_xid.get()}, std::span<const Xid>(subs, n),
                                   static_cast<XidStatus>(m.clog_group_status.get()),
                                   Lsn{m.clog_group_lsn.get()}, m.clog_group_page.load());
      ++members;
      cur = m.clog_group_next.load();
    }
    lock.release(me);
    st.group_members += members;
    st.largest_group = std::max<uint64_t>(st.largest_group, members);

    // 7: wake everyone, after dropping the lock.
    for (cur = wake; cur != kInvalidProcNo;) {
      Proc<P>& m = procs_[static_cast<int32_t>(cur)];
      cur = m.clog_group_next.load();
      m.clog_group_next.store(kInvalidProcNo);
      m.clog_group_member.store(0);  // G3: seq_cst store, ordered after the resets above
      if (&m != &me) m.sem.post();   // G4: exactly once per follower
    }
    return true;
  }

  Clog<P>& clog_;
  ProcTable<P>& procs_;
  const ClogGroupUpdateParams params_;
  alignas(64) typename P::template Atomic<uint32_t> group_first_{kInvalidProcNo};  // clogGroupFirst
  std::vector<Stats> stats_;
};

}  // namespace walbench
