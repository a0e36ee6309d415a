// What is special to clog_group_update (the conformance suite covers correctness under load):
// followers really are grouped behind one leader, the fallbacks (other page, too many or
// uncached subtransactions, a tree over pages) take the lock themselves, and a leader applies
// each member's subtransactions in the SUB_COMMITTED-first order.
//
// Forcing the interleaving: the test holds the control lock itself, starts the committers, and
// waits until each has published the wait event it must end up in (IPC:ClogGroupUpdate for a
// follower, LWLock:CLogControlLock for the leader and for a fallback) before releasing the lock.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "core/clog/clog.h"
#include "core/platform/threads.h"
#include "strategies/clog_exclusive/clog_exclusive.h"
#include "strategies/clog_group_update/clog_group_update.h"

using namespace walbench;
using P = ThreadsPlatform;

namespace {

struct Fixture {
  explicit Fixture(uint32_t clients, uint32_t page_size = kClogDefaultPageSize)
      : procs(clients + 1, 7), clog(procs, 8, page_size), gen(procs),
        group(clog, procs, ClogGroupUpdateParams{}), holder(procs[static_cast<int32_t>(clients)]) {}

  ProcTable<P> procs;
  Clog<P> clog;
  XidGen<P> gen;
  ClogGroupUpdate<P> group;
  Proc<P>& holder;  // the test's own Proc: holds the control lock while committers pile up

  // Gives client c a transaction with `nsub` subtransactions (from the shared counter, as the
  // workloads do); returns (xid, subxids).
  std::pair<Xid, std::vector<Xid>> begin(uint32_t c, uint32_t nsub) {
    Proc<P>& me = procs[static_cast<int32_t>(c)];
    const Xid x = gen.assign(me, &clog, false);
    std::vector<Xid> subs;
    for (uint32_t i = 0; i < nsub; ++i) subs.push_back(gen.assign(me, &clog, true));
    return {x, subs};
  }

  WaitEvent event_of(uint32_t c) {
    return static_cast<WaitEvent>(procs[static_cast<int32_t>(c)].wait_event.load());
  }

  // Wait (bounded) until client c publishes wait event e.
  bool wait_for_event(uint32_t c, WaitEvent e) {
    for (int i = 0; i < 20000; ++i) {
      if (event_of(c) == e) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return false;
  }
};

}  // namespace

TEST_CASE("clog_group_update: followers are grouped behind one leader", "[clog]") {
  constexpr uint32_t kClients = 6;
  Fixture f(kClients);
  std::vector<std::pair<Xid, std::vector<Xid>>> txns;
  for (uint32_t c = 0; c < kClients; ++c) txns.push_back(f.begin(c, c % 4));  // 0..3 subxids
  std::vector<std::pair<Xid, XidStatus>> trace;
  f.clog.trace = &trace;

  REQUIRE(f.clog.control_lock().conditional_acquire(f.holder, kLwExclusive));
  std::vector<std::thread> threads;
  // The first committer becomes the leader (blocked on the lock we hold); start the others only
  // once it is queued, so that each of them finds a non-empty list and follows.
  auto start = [&](uint32_t c) {
    threads.emplace_back([&, c] {
      Proc<P>& me = f.procs[static_cast<int32_t>(c)];
      f.group.set_status(me, txns[c].first, txns[c].second, XidStatus::kCommitted, kInvalidLsn);
      XidGen<P>::end_transaction(me);
    });
  };
  start(0);
  REQUIRE(f.wait_for_event(0, WaitEvent::kXactSlru));
  for (uint32_t c = 1; c < kClients; ++c) start(c);
  for (uint32_t c = 1; c < kClients; ++c) REQUIRE(f.wait_for_event(c, WaitEvent::kClogGroupUpdate));
  f.clog.control_lock().release(f.holder);
  for (auto& t : threads) t.join();
  f.clog.trace = nullptr;

  const nlohmann::json st = f.group.stats();
  INFO(st.dump());
  CHECK(st["leaders"] == 1);
  CHECK(st["followers"] == kClients - 1);
  CHECK(st["group_members"] == kClients);
  CHECK(st["largest_group"] == kClients);
  CHECK(st["alone"] == 0);
  CHECK(st["fallback_page"] == 0);
  for (const auto& [x, subs] : txns) {
    CHECK(f.clog.get_status(f.holder, x) == XidStatus::kCommitted);
    for (Xid s : subs) CHECK(f.clog.get_status(f.holder, s) == XidStatus::kCommitted);
  }
  // Per member: its subxids SUB_COMMITTED before the parent, then COMMITTED after it.
  for (const auto& [x, subs] : txns) {
    size_t parent_at = trace.size();
    for (size_t i = 0; i < trace.size(); ++i)
      if (trace[i].first == x) parent_at = i;
    REQUIRE(parent_at < trace.size());
    for (Xid s : subs) {
      size_t sub_at = trace.size(), commit_at = trace.size();
      for (size_t i = 0; i < trace.size(); ++i) {
        if (trace[i].first != s) continue;
        if (trace[i].second == XidStatus::kSubCommitted) sub_at = i;
        if (trace[i].second == XidStatus::kCommitted) commit_at = i;
      }
      CHECK(sub_at < parent_at);
      CHECK(parent_at < commit_at);
      CHECK(commit_at < trace.size());
    }
  }
  // Every semaphore is balanced again: no post left over for a later sleep.
  for (uint32_t c = 0; c <= kClients; ++c) CHECK_FALSE(f.procs[static_cast<int32_t>(c)].sem.try_wait());
  // The list is empty and every member left it.
  for (uint32_t c = 0; c < kClients; ++c) {
    CHECK(f.procs[static_cast<int32_t>(c)].clog_group_member.load() == 0);
    CHECK(f.procs[static_cast<int32_t>(c)].clog_group_next.load() == kInvalidProcNo);
  }
}

TEST_CASE("clog_group_update: a committer for another page falls back to the lock", "[clog]") {
  Fixture f(2, /*page_size=*/16);  // 64 xids per page
  const auto a = f.begin(0, 0);     // xid 3, page 0
  for (int i = 0; i < 64; ++i) f.gen.assign(f.holder, &f.clog, false);  // move to page 1
  XidGen<P>::end_transaction(f.holder);
  const auto b = f.begin(1, 0);
  REQUIRE(f.clog.geometry().page_of(a.first) != f.clog.geometry().page_of(b.first));

  REQUIRE(f.clog.control_lock().conditional_acquire(f.holder, kLwExclusive));
  std::thread ta([&] { f.group.set_status(f.procs[0], a.first, a.second, XidStatus::kCommitted, kInvalidLsn); });
  REQUIRE(f.wait_for_event(0, WaitEvent::kXactSlru));  // leader of a group for page 0
  std::thread tb([&] { f.group.set_status(f.procs[1], b.first, b.second, XidStatus::kCommitted, kInvalidLsn); });
  REQUIRE(f.wait_for_event(1, WaitEvent::kXactSlru));  // refused by the group: waits for the lock
  f.clog.control_lock().release(f.holder);
  ta.join();
  tb.join();
  const nlohmann::json st = f.group.stats();
  INFO(st.dump());
  CHECK(st["leaders"] == 1);
  CHECK(st["followers"] == 0);
  CHECK(st["fallback_page"] == 1);
  CHECK(f.procs[1].clog_group_next.load() == kInvalidProcNo);  // b786304c29
  CHECK(f.procs[1].clog_group_member.load() == 0);
  CHECK(f.clog.get_status(f.holder, a.first) == XidStatus::kCommitted);
  CHECK(f.clog.get_status(f.holder, b.first) == XidStatus::kCommitted);
}

TEST_CASE("clog_group_update: who may take the group path", "[clog]") {
  Fixture f(1, 16);
  Proc<P>& me = f.procs[0];
  SECTION("uncontended: the conditional acquire succeeds") {
    const auto t = f.begin(0, 5);  // 5 subxids: at the threshold, still eligible
    if (f.clog.geometry().page_of(t.first) == f.clog.geometry().page_of(t.second.back())) {
      f.group.set_status(me, t.first, t.second, XidStatus::kCommitted, kInvalidLsn);
      CHECK(f.group.stats()["alone"] == 1);
    }
  }
  SECTION("more subtransactions than THRESHOLD_SUBTRANS_CLOG_OPT") {
    const auto t = f.begin(0, 6);
    f.group.set_status(me, t.first, t.second, XidStatus::kCommitted, kInvalidLsn);
    CHECK(f.group.stats()["not_eligible"].get<uint64_t>() >= 1);
    CHECK(f.group.stats()["alone"] == 0);
  }
  SECTION("subxids that are not the Proc's cached ones") {
    const auto t = f.begin(0, 2);
    const std::vector<Xid> other = {t.second[0]};
    f.group.set_status(me, t.first, other, XidStatus::kCommitted, kInvalidLsn);
    CHECK(f.group.stats()["not_eligible"] == 1);
  }
  SECTION("a tree over two pages takes the lock page by page") {
    for (int i = 0; i < 58; ++i) f.gen.assign(f.holder, &f.clog, false);  // xid 61 next
    XidGen<P>::end_transaction(f.holder);
    const auto t = f.begin(0, 4);  // 61 + 62..65: crosses into page 1
    REQUIRE(f.clog.geometry().page_of(t.first) != f.clog.geometry().page_of(t.second.back()));
    f.group.set_status(me, t.first, t.second, XidStatus::kCommitted, kInvalidLsn);
    CHECK(f.group.stats()["not_eligible"] == 3);  // page 1 subcommit, page 0, page 1
    for (Xid s : t.second) CHECK(f.clog.get_status(me, s) == XidStatus::kCommitted);
  }
  SECTION("threshold_subxids is a parameter") {
    ClogGroupUpdate<P> strict(f.clog, f.procs, ClogGroupUpdateParams::from_json({{"threshold_subxids", 0}}));
    const auto t = f.begin(0, 1);
    strict.set_status(me, t.first, t.second, XidStatus::kCommitted, kInvalidLsn);
    CHECK(strict.stats()["not_eligible"] == 1);
    CHECK_THROWS(ClogGroupUpdateParams::from_json({{"threshold_subxids", 65}}));
  }
}

TEST_CASE("clog_exclusive takes the lock for every page step", "[clog]") {
  ProcTable<P> procs(1, 1);
  Clog<P> clog(procs, 4, 16);
  XidGen<P> gen(procs);
  ClogExclusive<P> ex(clog, procs);
  Proc<P>& me = procs[0];
  const Xid x = gen.assign(me, &clog, false);
  const Xid s = gen.assign(me, &clog, true);
  const std::vector<Xid> subs = {s};
  ex.set_status(me, x, subs, XidStatus::kCommitted, kInvalidLsn);
  CHECK(ex.stats()["page_updates"] == 1);
  CHECK(clog.get_status(me, x) == XidStatus::kCommitted);
  CHECK(clog.get_status(me, s) == XidStatus::kCommitted);
  CHECK(me.stats.of(WaitEvent::kXactSlru).acquisitions >= 2);
}
