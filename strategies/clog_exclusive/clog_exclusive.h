// clog_exclusive: every committer takes CLogControlLock exclusively for its own update.
//
// Origin
//   PostgreSQL <= 10, clog.c TransactionIdSetPageStatus: LWLockAcquire(CLogControlLock,
//   LW_EXCLUSIVE), TransactionIdSetPageStatusInternal, LWLockRelease - for every page of every
//   committing transaction tree. The baseline of the thread "Speed up Clog Access by increasing
//   CLOG buffers" (Amit Kapila, pgsql-hackers 2015-17), which led to the group update of PG 11
//   (baaf272ac9, strategies/clog_group_update). Facts: PROTOCOLS.md section 6.
//
// Design summary
//   No coordination beyond the lock: N committers on one page take the lock N times, one after
//   the other; the LWLock queue (core/locks/lwlock.h) sleeps the losers on their semaphores.
//
// Shared state (what protects it)
//   The CLOG (core/clog/clog.h): everything under its control lock. This strategy adds none.
//
// Invariants
//   I1 set_page_status_locked runs only with the control lock held exclusively (checked there;
//      a page read inside it releases and takes the lock again, as SimpleLruReadPage does).
//
// Steps of set_page_status: acquire exclusive; TransactionIdSetPageStatusInternal; release.
// Wait / wake: the LWLock's own (sleep on the Proc semaphore, woken by release).
// Lock order: CLogControlLock -> (WAL flush locks when a page with async commits is evicted).
// Hazards: none beyond the CLOG's (a page write may flush WAL while the lock is held).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clog/clog.h"
#include "core/proc.h"
#include "strategies/strategy.h"

namespace walbench {

ClogStrategyInfo clog_exclusive_info();

template <class P>
class ClogExclusive {
 public:
  ClogExclusive(Clog<P>& clog, ProcTable<P>& procs) : clog_(clog), stats_(procs.size()) {}

  // TransactionIdSetTreeStatus through this strategy's page step.
  void set_status(Proc<P>& me, Xid xid, std::span<const Xid> subxids, XidStatus status, Lsn lsn) {
    clog_.set_tree_status(*this, me, xid, subxids, status, lsn);
  }

  // TransactionIdSetPageStatus, PG <= 10.
  void set_page_status(Proc<P>& me, Xid xid, std::span<const Xid> subxids, XidStatus status,
                       Lsn lsn, uint32_t pageno, bool /*all_xact_same_page*/) {
    clog_.control_lock().acquire(me, kLwExclusive);
    clog_.set_page_status_locked(me, xid, subxids, status, lsn, pageno);  // I1
    clog_.control_lock().release(me);
    ++stats_[me.id.value].page_updates;
  }

  // After the run.
  nlohmann::json stats() const {
    uint64_t n = 0;
    for (const auto& s : stats_) n += s.page_updates;
    return {{"page_updates", n}};
  }

 private:
  struct alignas(64) Stats {  // owner-only instrumentation (core/counter.h)
    Counter page_updates;
  };
  Clog<P>& clog_;
  std::vector<Stats> stats_;
};

}  // namespace walbench
