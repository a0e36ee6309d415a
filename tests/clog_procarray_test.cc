// CLOG status lookups and the ProcArray (core/clog/proc_array.h), beside the behaviour:
//   - a lookup (TransactionIdGetStatus, control lock shared) and a commit-time update (exclusive)
//     exclude each other on the one LWLock: each waits in LWLock:CLogControlLock for the other;
//   - the ProcArray group clear clears every xid exactly once (A1), with members really grouped
//     behind one leader (IPC:ProcArrayGroupUpdate), on threads;
//   - ShmemVariableCache: nextXid, latestCompletedXid and xactCompletionCount share one line
//     of their own (XidGen's cache, which the ProcArray writes), named so on the sim;
//   - conformance: the transaction workloads with the ProcArray modelled pass the WAL and CLOG
//     verifiers and the ProcArray's own check (every committed transaction's xid cleared once,
//     none left advertised), on threads and on the sim;
//   - hint bits: on the sim, clog.hint_bit_miss = 1 makes exactly one more shared
//     CLogControlLock acquisition per simple_update transaction than 0 does;
//   - the sim shape of the CLOG experiment (configs/sim-clog-group-update-wait-events-128core
//     .json, smaller windows): clog_exclusive falls from 64 to 128 clients, clog_group_update is
//     ahead of it at 128, and CLogControlLock waits are the exclusive variant's, not the group's.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "core/clog/clog.h"
#include "core/clog/proc_array.h"
#include "core/clog/variable_cache.h"
#include "core/platform/line_names.h"
#include "core/platform/sim.h"
#include "core/platform/threads.h"
#include "harness/runner.h"
#include "strategies/clog_exclusive/clog_exclusive.h"
#include "tests/conformance.h"
#include "tests/sim_matrix.h"

using namespace walbench;
using namespace walbench::conformance;
using P = ThreadsPlatform;

namespace {

WaitEvent event_of(ProcTable<P>& procs, uint32_t c) {
  return static_cast<WaitEvent>(procs[static_cast<int32_t>(c)].wait_event.load());
}

bool wait_for_event(ProcTable<P>& procs, uint32_t c, WaitEvent e) {
  for (int i = 0; i < 20000; ++i) {
    if (event_of(procs, c) == e) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("clog lookups and commit-time updates exclude each other on the control lock", "[clog][procarray]") {
  ProcTable<P> procs(3, 5);
  Clog<P> clog(procs, 8);
  XidGen<P> gen(procs);
  ClogExclusive<P> excl(clog, procs);
  Proc<P>& reader = procs[0];
  Proc<P>& committer = procs[1];
  Proc<P>& other = procs[2];
  const Xid x = gen.assign(committer, &clog, false);

  SECTION("a reader holding the lock shared makes the committer wait") {
    clog.control_lock().acquire(reader, kLwShared);  // a lookup in progress
    std::thread t([&] { excl.set_status(committer, x, {}, XidStatus::kCommitted, kInvalidLsn); });
    REQUIRE(wait_for_event(procs, 1, WaitEvent::kXactSlru));
    clog.control_lock().release(reader);
    t.join();
    CHECK(clog.get_status(reader, x) == XidStatus::kCommitted);
    CHECK(committer.stats.of(WaitEvent::kXactSlru).contended == 1);
  }
  SECTION("an update in progress makes a lookup wait, and the lookup sees its result") {
    clog.control_lock().acquire(committer, kLwExclusive);
    std::thread t([&] { CHECK(clog.get_status(other, x) == XidStatus::kCommitted); });
    REQUIRE(wait_for_event(procs, 2, WaitEvent::kXactSlru));
    clog.set_page_status_locked(committer, x, {}, XidStatus::kCommitted, kInvalidLsn, 0);
    clog.control_lock().release(committer);
    t.join();
    CHECK(other.stats.of(WaitEvent::kXactSlru).contended == 1);
  }
}

TEST_CASE("procarray group clear: members wait behind one leader; every xid cleared once", "[clog][procarray]") {
  constexpr uint32_t kClients = 5;
  const SnapshotForm form = GENERATE(SnapshotForm::kPgxact, SnapshotForm::kDense);
  INFO("snapshot form " << (form == SnapshotForm::kDense ? "dense" : "pgxact"));
  ProcTable<P> procs(kClients + 1, 3);
  ProcArray<P> pa(procs, kClients, ProcArrayMode::kGroupClear, form);
  XidGen<P> gen(procs);
  Proc<P>& holder = procs[kClients];
  std::vector<std::pair<uint32_t, uint32_t>> trace;
  pa.trace = &trace;
  std::vector<Xid> xids;
  for (uint32_t c = 0; c < kClients; ++c)
    xids.push_back(gen.assign(procs[static_cast<int32_t>(c)], nullptr, false, &pa.xid_slot(procs[static_cast<int32_t>(c)])));
  // Nothing completed yet: xmax = latestCompletedXid + 1 is the first xid, so all five are
  // "running" implicitly (>= xmax) and none is listed (GetSnapshotData lists only xids < xmax).
  const SnapshotInfo before = pa.get_snapshot(holder);
  CHECK(before.xmax == kFirstNormalXid);
  CHECK(before.running == 0);

  REQUIRE(pa.lock().conditional_acquire(holder, kLwExclusive));
  std::vector<std::thread> threads;
  auto start = [&](uint32_t c) {
    threads.emplace_back([&, c] { pa.end_transaction(procs[static_cast<int32_t>(c)], xids[c]); });
  };
  start(0);  // the leader: blocks on the lock we hold
  REQUIRE(wait_for_event(procs, 0, WaitEvent::kProcArrayLock));
  for (uint32_t c = 1; c < kClients; ++c) {
    start(c);
    REQUIRE(wait_for_event(procs, c, WaitEvent::kProcArrayGroupUpdate));
  }
  CHECK(trace.empty());
  pa.lock().release(holder);
  for (auto& t : threads) t.join();

  std::multiset<uint32_t> cleared;
  for (const auto& [x, c] : trace) cleared.insert(x);
  REQUIRE(cleared.size() == kClients);
  for (const Xid x : xids) CHECK(cleared.count(x.value) == 1);  // A1
  for (uint32_t c = 0; c < kClients; ++c) {
    CHECK(pa.advertised_xid(c) == 0);
    CHECK(procs[static_cast<int32_t>(c)].xid.load() == 0);
  }
  const ProcArrayCounters t = pa.totals();
  CHECK(t.leaders == 1);
  CHECK(t.members == kClients);
  CHECK(t.largest_group == kClients);
  CHECK(pa.latest_completed() == xids.back());  // A4
  const SnapshotInfo after = pa.get_snapshot(holder);
  CHECK(after.xmax.value == xids.back().value + 1);
  CHECK(after.running == 0);
}

TEST_CASE("procarray group clear under load: every xid cleared exactly once", "[clog][procarray]") {
  constexpr uint32_t kClients = 6, kTxns = 3000;
  const SnapshotForm form = GENERATE(SnapshotForm::kPgxact, SnapshotForm::kDense);
  INFO("snapshot form " << (form == SnapshotForm::kDense ? "dense" : "pgxact"));
  ProcTable<P> procs(kClients, 11);
  ProcArray<P> pa(procs, kClients, ProcArrayMode::kGroupClear, form);
  XidGen<P> gen(procs);
  std::vector<std::pair<uint32_t, uint32_t>> trace;
  pa.trace = &trace;
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      Proc<P>& me = procs[static_cast<int32_t>(c)];
      for (uint32_t i = 0; i < kTxns; ++i) {
        const Xid x = gen.assign(me, nullptr, false, &pa.xid_slot(me));
        if (i % 3 == 0) pa.get_snapshot(me);
        pa.end_transaction(me, x);
      }
    });
  for (auto& t : threads) t.join();
  std::map<uint32_t, uint32_t> seen;
  for (const auto& [x, c] : trace) ++seen[x];
  CHECK(trace.size() == kClients * kTxns);
  CHECK(seen.size() == kClients * kTxns);
  for (const auto& [x, n] : seen) {
    INFO("xid " << x);
    REQUIRE(n == 1);
  }
  CHECK(pa.totals().cleared == kClients * kTxns);
  CHECK(pa.latest_completed().value == gen.next().value - 1);
}

TEST_CASE("dense snapshots: reused while no transaction ended, and then exact (A5)", "[clog][procarray]") {
  // Clients 0-3 run transactions; 4 takes a snapshot after every step and never gets an xid.
  // Every snapshot, reused or fresh, is compared with one computed from the advertised xids.
  constexpr uint32_t kClients = 5;
  ProcTable<P> procs(kClients, 5);
  ProcArray<P> pa(procs, kClients, ProcArrayMode::kExclusive, SnapshotForm::kDense);
  XidGen<P> gen(procs);
  Proc<P>& watcher = procs[4];
  auto client = [&](uint32_t c) -> Proc<P>& { return procs[static_cast<int32_t>(c)]; };
  auto expected = [&] {
    SnapshotInfo e;
    e.xmax = Xid{pa.latest_completed().value + 1};
    for (uint32_t c = 0; c < kClients; ++c) {
      const uint32_t x = pa.advertised_xid(c);
      if (c != 4 && x != 0 && x < e.xmax.value) ++e.running;
    }
    return e;
  };
  auto snapshot = [&](bool reuse_expected) {
    const uint64_t reused = pa.totals().reused;
    const SnapshotInfo s = pa.get_snapshot(watcher);
    CHECK(pa.totals().reused == reused + (reuse_expected ? 1 : 0));
    CHECK(s == expected());
    return s;
  };
  std::vector<Xid> xids;
  for (uint32_t c = 0; c < 4; ++c) xids.push_back(gen.assign(client(c), nullptr, false, &pa.xid_slot(client(c))));
  SnapshotInfo s = snapshot(false);  // the first: nothing to reuse; xmax is the first xid
  CHECK(s.xmax == kFirstNormalXid);
  CHECK(s.running == 0);
  snapshot(true);  // no transaction ended: reused

  pa.end_transaction(client(1), xids[1]);  // the completion count moves: a fresh scan
  s = snapshot(false);
  CHECK(s.xmax.value == xids[1].value + 1);
  CHECK(s.running == 1);  // xids[0] is below xmax and still running; 2 and 3 are not below it

  // A new xid does not move the count: the snapshot is reused, and still exact (the new xid is
  // above its xmax).
  const Xid late = gen.assign(client(1), nullptr, false, &pa.xid_slot(client(1)));
  CHECK(snapshot(true) == s);
  CHECK(late.value >= s.xmax.value);

  for (uint32_t c : {0u, 2u, 3u}) pa.end_transaction(client(c), xids[c]);
  s = snapshot(false);
  CHECK(s.xmax.value == xids[3].value + 1);
  CHECK(s.running == 0);  // only `late` runs, above xmax
  snapshot(true);
  pa.end_transaction(client(1), late);
  s = snapshot(false);
  CHECK(s.xmax.value == late.value + 1);
  for (uint32_t c = 0; c < kClients; ++c) CHECK(pa.advertised_xid(c) == 0);
  CHECK(pa.stats()["snapshot"] == "dense");
}

TEST_CASE("dense snapshots under concurrent group clears: every reuse exact (A5)", "[clog][procarray]") {
  // Four committers (group clear) and two read-only watchers; each reuse is rescanned under the
  // same shared lock (check_reuse).
  constexpr uint32_t kCommitters = 4, kWatchers = 2, kTxns = 3000;
  ProcTable<P> procs(kCommitters + kWatchers, 13);
  ProcArray<P> pa(procs, kCommitters + kWatchers, ProcArrayMode::kGroupClear, SnapshotForm::kDense);
  pa.check_reuse = true;
  XidGen<P> gen(procs);
  std::atomic<uint32_t> running{kCommitters};
  // Committers start only once every watcher has taken a snapshot: on a loaded machine the
  // committers could otherwise finish before a watcher is scheduled, and nothing is reused.
  std::latch watchers_started(kWatchers);
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kCommitters; ++c)
    threads.emplace_back([&, c] {
      Proc<P>& me = procs[static_cast<int32_t>(c)];
      watchers_started.wait();
      for (uint32_t i = 0; i < kTxns; ++i) {
        const Xid x = gen.assign(me, nullptr, false, &pa.xid_slot(me));
        pa.get_snapshot(me);
        pa.end_transaction(me, x);
      }
      running.fetch_sub(1);
    });
  for (uint32_t w = 0; w < kWatchers; ++w)
    threads.emplace_back([&, w] {
      Proc<P>& me = procs[static_cast<int32_t>(kCommitters + w)];
      pa.get_snapshot(me);
      watchers_started.count_down();
      while (running.load() > 0) pa.get_snapshot(me);
    });
  for (auto& t : threads) t.join();
  const ProcArrayCounters t = pa.totals();
  INFO("snapshots " << t.snapshots << ", reused " << t.reused);
  CHECK(t.cleared == kCommitters * kTxns);
  CHECK(t.reused > 0);  // the watchers loop far faster than transactions end
  CHECK(pa.reuse_mismatches.load() == 0);
}

TEST_CASE("dense snapshots: subtransactions advertise their cache state; a clear zeroes it", "[clog][procarray]") {
  constexpr uint32_t kClients = 2;
  ProcTable<P> procs(kClients, 7);
  ProcArray<P> pa(procs, kClients, ProcArrayMode::kExclusive, SnapshotForm::kDense);
  XidGen<P> gen(procs);
  Proc<P>& me = procs[0];
  REQUIRE(pa.subxid_status_slot(me) != nullptr);
  gen.assign(me, nullptr, false, &pa.xid_slot(me));
  Xid last;
  for (uint32_t i = 0; i < kMaxCachedSubxids + 2; ++i)
    last = gen.assign(me, nullptr, true, nullptr, pa.subxid_status_slot(me));
  CHECK(pa.subxid_status_slot(me)->load() == (kMaxCachedSubxids | 1u << 8));  // overflowed
  pa.end_transaction(me, last);
  CHECK(pa.subxid_status_slot(me)->load() == 0);
  CHECK(pa.advertised_xid(0) == 0);
  ProcArray<P> old(procs, kClients, ProcArrayMode::kExclusive, SnapshotForm::kPgxact);
  CHECK(old.subxid_status_slot(me) == nullptr);
}

namespace {

// A ProcArray (exclusive clears) that keeps its clients' snapshots, with an xid generator.
struct KeptSnapshots {
  KeptSnapshots(uint32_t clients, uint64_t seed, SnapshotForm form)
      : procs(clients, seed), pa(procs, clients, ProcArrayMode::kExclusive, form), gen(procs) {
    pa.keep_snapshots();
  }
  Proc<P>& client(uint32_t c) { return procs[static_cast<int32_t>(c)]; }
  Xid assign(uint32_t c) { return gen.assign(client(c), nullptr, false, &pa.xid_slot(client(c))); }
  ProcTable<P> procs;
  ProcArray<P> pa;
  XidGen<P> gen;
};

}  // namespace

TEST_CASE("kept snapshots: xid_visible answers as XidInMVCCSnapshot would, in both forms", "[clog][procarray]") {
  // READ COMMITTED's TM_Updated (core/cell/row_locks.h) asks whether a row's last updater, ended
  // by now, committed before the statement's snapshot: below the snapshot's xmax and not among
  // the xids it found running.
  for (const SnapshotForm form : {SnapshotForm::kPgxact, SnapshotForm::kDense}) {
    INFO((form == SnapshotForm::kDense ? "dense" : "pgxact"));
    KeptSnapshots k(4, 5, form);
    ProcArray<P>& pa = k.pa;
    auto client = [&](uint32_t c) -> Proc<P>& { return k.client(c); };
    auto assign = [&](uint32_t c) { return k.assign(c); };
    Proc<P>& reader = client(3);
    const Xid a = assign(0), b = assign(1), d = assign(2);
    CHECK(pa.xid_visible(reader, a));  // no snapshot taken yet: nothing hides it
    pa.end_transaction(client(2), d);  // xmax becomes d + 1, with a and b running below it
    const SnapshotInfo s = pa.get_snapshot(reader);
    REQUIRE(s.xmax.value == d.value + 1);
    REQUIRE(s.running == 2);
    pa.end_transaction(client(0), a);  // ends after the snapshot
    const Xid c = assign(2);           // begins after it: at or above its xmax
    REQUIRE(c.value >= s.xmax.value);
    auto check_old_snapshot = [&] {
      CHECK(pa.xid_visible(reader, d));        // committed before the snapshot
      CHECK_FALSE(pa.xid_visible(reader, a));  // running then (listed), ended since
      CHECK_FALSE(pa.xid_visible(reader, b));  // running then and now
      CHECK_FALSE(pa.xid_visible(reader, c));  // not begun then
    };
    check_old_snapshot();
    if (form == SnapshotForm::kDense) {
      // A reused snapshot keeps the list of the scan that made it.
      pa.end_transaction(client(2), c);
      const SnapshotInfo fresh = pa.get_snapshot(reader);
      CHECK(pa.xid_visible(reader, a));
      CHECK(pa.xid_visible(reader, c));
      CHECK_FALSE(pa.xid_visible(reader, b));  // still running
      const uint64_t reused = pa.totals().reused;
      CHECK(pa.get_snapshot(reader) == fresh);  // nothing ended: reused
      CHECK(pa.totals().reused == reused + 1);
      CHECK(pa.xid_visible(reader, a));
      CHECK_FALSE(pa.xid_visible(reader, b));
      pa.end_transaction(client(1), b);
    } else {
      pa.end_transaction(client(1), b);
      pa.end_transaction(client(2), c);
    }
    pa.get_snapshot(reader);  // everything ended before this one
    for (const Xid x : {a, b, c, d}) CHECK(pa.xid_visible(reader, x));
  }
}

TEST_CASE("kept snapshots over several lines: the list is exactly the xids counted", "[clog][procarray]") {
  // 40 clients (three lines of the dense array), running xids in several stretches with gaps,
  // the reader's own entry in the middle of a stretch: every xid is visible to the reader's
  // snapshot exactly when it had ended before it (below xmax and not advertised then).
  for (const SnapshotForm form : {SnapshotForm::kPgxact, SnapshotForm::kDense}) {
    INFO((form == SnapshotForm::kDense ? "dense" : "pgxact"));
    constexpr uint32_t kClients = 40;
    constexpr uint32_t kReader = 17;
    KeptSnapshots k(kClients, 9, form);
    ProcArray<P>& pa = k.pa;
    auto client = [&](uint32_t c) -> Proc<P>& { return k.client(c); };
    std::vector<Xid> xid(kClients);
    for (uint32_t c = 0; c < kClients; ++c) xid[c] = k.assign(c);
    // End every third client's transaction and all of 30-33 (gaps and a stretch that crosses
    // nothing), but keep the last one running so that xmax stays above most running xids.
    std::vector<bool> ended(kClients, false);
    for (uint32_t c = 0; c + 1 < kClients; ++c)
      if (c % 3 == 0 || (c >= 30 && c <= 33)) {
        pa.end_transaction(client(c), xid[c]);
        ended[c] = true;
      }
    const SnapshotInfo s = pa.get_snapshot(client(kReader));
    uint32_t expected_running = 0;
    for (uint32_t c = 0; c < kClients; ++c)
      if (c != kReader && !ended[c] && xid[c].value < s.xmax.value) ++expected_running;
    CHECK(s.running == expected_running);
    for (uint32_t c = 0; c < kClients; ++c) {
      if (c == kReader) continue;
      INFO("client " << c);
      CHECK(pa.xid_visible(client(kReader), xid[c]) == ended[c]);
    }
  }
}

TEST_CASE("ShmemVariableCache: nextXid, latestCompletedXid and xactCompletionCount on one line, apart from both locks", "[clog][procarray]") {
  // PostgreSQL 15's VariableCacheData keeps the three at offsets 8, 48 and 56 of one
  // cache-line-aligned struct (core/clog/variable_cache.h); the ProcArray given XidGen's cache
  // writes its two counters there, not on a line of its own or ProcArrayLock's.
  ProcTable<P> procs(2, 1);
  XidGen<P> gen(procs);
  ProcArray<P> pa(procs, 2, ProcArrayMode::kExclusive, SnapshotForm::kDense, &gen.variable_cache());
  const VariableCache<P>& cache = gen.variable_cache();
  auto line_of = [](const void* p) { return reinterpret_cast<uintptr_t>(p) / 64; };
  CHECK(line_of(&cache.latest_completed) == line_of(&cache.next_xid));
  CHECK(line_of(&cache.xact_completion_count) == line_of(&cache.next_xid));
  CHECK(reinterpret_cast<uintptr_t>(&cache) % 64 == 0);  // the struct starts a line: nothing shares it
  CHECK(line_of(reinterpret_cast<const char*>(&cache) + sizeof(cache) - 1) == line_of(&cache));
  Proc<P>& me = procs[0];
  const uint64_t completions = cache.xact_completion_count.get();
  const Xid x = gen.assign(me, nullptr, false, &pa.xid_slot(me));
  CHECK(cache.next_xid.get() == x.value + 1);
  pa.end_transaction(me, x);
  CHECK(cache.latest_completed.get() == x.value);
  CHECK(cache.xact_completion_count.get() == completions + 1);
  CHECK(pa.latest_completed() == x);
}

TEST_CASE("sim: the ShmemVariableCache line is named as PostgreSQL names its fields, and no lock is on it", "[clog][procarray][sim]") {
  using SP = SimPlatform;
  line_names::enable();  // process-wide; other tests' objects register too, harmlessly
  ProcTable<SP> procs(2, 1);
  XidGen<SP> gen(procs);
  ProcArray<SP> pa(procs, 2, ProcArrayMode::kGroupClear, SnapshotForm::kDense, &gen.variable_cache());
  const uintptr_t line = reinterpret_cast<uintptr_t>(&gen.variable_cache()) & ~uintptr_t{63};
  CHECK(line_names::describe(line) == "nextXid + latestCompletedXid + xactCompletionCount");
}

TEST_CASE("transaction workloads with the ProcArray modelled pass every verifier", "[conformance][procarray]") {
  const Variant v{"insert_locks", nlohmann::json::object()};
  for (const char* platform : {"threads", "sim"})
    for (const char* mode : {"exclusive", "group_clear", "group_clear dense"})
      for (const char* clog : {"clog_exclusive", "clog_group_update"})
        for (const char* workload : {"simple_update", "tpcb_like", "savepoints"}) {
          CellSpec spec = stress_spec(v);
          spec.workload.name = workload;
          spec.workload.transactional = true;
          spec.clog.strategy = clog;
          spec.clog.params = nlohmann::json::object();
          const std::string m = mode;
          spec.clog.procarray = m.substr(0, m.find(' '));
          spec.clog.snapshot = m.find(" dense") != std::string::npos ? "dense" : "pgxact";
          spec.clog.hint_bit_miss = 1.0;
          spec.clog.clog_buffers = 4;
          spec.clog.page_size = 16;
          spec.commit.synchronous_commit = false;
          if (std::string(platform) == "sim") {
            spec.platform.kind = "sim";
            spec.platform.sim = {{"preset", "icelake_2s"}, {"cores", 4}, {"sockets", 1}};
            spec.clients = 12;
          }
          INFO(platform << " procarray=" << mode << " clog=" << clog << " workload=" << workload);
          const Outcome o = run_cell(spec, std::string(platform) == "sim" ? 0.002 : 0.1);
          INFO("verify: " << o.verify.error << " model: " << o.model.dump());
          CHECK(o.txns > 0);
          CHECK(o.verify.ok);
          REQUIRE(o.model.contains("procarray"));
          CHECK(o.model["procarray"]["cleared"].get<uint64_t>() == o.verify.clog_top_level);
          CHECK(o.model["procarray"]["snapshots"].get<uint64_t>() > 0);
          CHECK(o.model["procarray"]["snapshot"] == spec.clog.snapshot);
        }
}

TEST_CASE("snapshots_per_statement: each statement that reads a table takes that many snapshots", "[clog][procarray]") {
  const Variant v{"insert_locks", nlohmann::json::object()};
  for (const uint32_t per_statement : {1u, 2u}) {
    CellSpec spec = stress_spec(v);
    spec.workload.name = "simple_update";  // UPDATE, SELECT, INSERT: three statements with a snapshot
    spec.workload.transactional = true;
    spec.clog.procarray = "exclusive";
    spec.clog.snapshots_per_statement = per_statement;
    spec.commit.synchronous_commit = false;
    spec.platform.kind = "sim";
    spec.platform.sim = {{"preset", "icelake_2s"}, {"cores", 4}, {"sockets", 1}};
    spec.clients = 6;
    INFO("snapshots_per_statement " << per_statement);
    const Outcome o = run_cell(spec, 0.002);
    REQUIRE(o.verify.ok);
    const uint64_t committed = o.model["procarray"]["cleared"].get<uint64_t>();
    const uint64_t snapshots = o.model["procarray"]["snapshots"].get<uint64_t>();
    REQUIRE(committed > 10);
    // Every committed transaction took 3 x per_statement; a client stopped mid-transaction
    // took up to that many more.
    CHECK(snapshots >= 3 * per_statement * committed);
    CHECK(snapshots <= 3 * per_statement * (committed + spec.clients));
  }
}

namespace {

// The CLOG experiment's sim cell (configs/sim-clog-group-update-wait-events-128core.json) with a
// short window.
CellSpec clog_cell(const std::string& clog, uint32_t clients, double hint_bit_miss) {
  CellSpec c;
  c.label = clog;
  c.strategy = "insert_locks";
  c.strategy_params = {{"insertingat", "waitlist"}};
  c.clients = clients;
  c.platform.kind = "sim";
  c.platform.sim = {{"preset", "cascadelake_2s"}, {"sockets", 8}, {"cores", 64}, {"smt", 2},
                    {"same_socket_transfer_ns", 60}, {"cross_socket_transfer_ns", 250}};
  c.workload.name = "simple_update";
  c.workload.client_overhead_us = 80;
  c.workload.client_overhead_jitter = 0.3;
  c.commit.synchronous_commit = false;
  c.wal.wal_buffers = 2048;
  c.clog.strategy = clog;
  c.clog.params = clog == "clog_group_update" ? nlohmann::json{{"threshold_subxids", 5}}
                                                 : nlohmann::json::object();
  c.clog.hint_bit_miss = hint_bit_miss;
  c.clog.procarray = "group_clear";
  c.run.duration_s = 0.05;
  c.run.warmup_s = 0.02;
  c.run.repetitions = 1;
  c.run.seed = 1;
  c.run.progress_interval_s = 0;
  return c;
}

}  // namespace

TEST_CASE("sim: a hint-bit miss is one shared CLogControlLock acquisition", "[clog][sim]") {
  std::vector<CellSpec> cells = {clog_cell("clog_exclusive", 4, 0.0), clog_cell("clog_exclusive", 4, 1.0)};
  cells[1].label = "miss";
  const nlohmann::json got = testing::run_sim_matrix(cells, "clog-hint-bits");
  REQUIRE(got.size() == 2);
  auto per_txn = [&](size_t i) {
    const auto& rep = got[i]["repetitions"][0];
    return rep["per_txn"]["locks"]["LWLock:CLogControlLock"]["acquisitions"].get<double>();
  };
  CHECK(per_txn(0) == Approx(1.0));  // the commit only
  CHECK(per_txn(1) == Approx(2.0));  // + the accounts row's xmin
}

TEST_CASE("sim shape: CLOG experiment at 64 and 128 clients", "[clog][sim][shape]") {
  // Each variant at 64 and 128 clients, with PostgreSQL's two snapshots per statement (the
  // default) and with one (the model before 2026-12-04). ProcArrayLock is past its peak at
  // these client counts either way, but with one snapshot (4 acquisitions per transaction
  // instead of 7) enough transactions reach the CLOG for its control lock's own contention to
  // show.
  std::vector<CellSpec> cells;
  for (const uint32_t per_statement : {2u, 1u})
    for (const char* clog : {"clog_exclusive", "clog_group_update"})
      for (uint32_t n : {64u, 128u}) {
        CellSpec c = clog_cell(clog, n, 1.0);
        c.clog.snapshots_per_statement = per_statement;
        c.label = std::string(clog) + "/" + std::to_string(per_statement);
        cells.push_back(c);
      }
  // And as the config runs them since 2026-12-05: 36M xids into a run at scale 300, lookups of
  // the last unhinted stamp on the row's page; with 128 CLOG buffers and with PostgreSQL 9.1's 8.
  for (const uint32_t buffers : {128u, 8u}) {
    CellSpec c = clog_cell("clog_exclusive", 64, 1.0);
    c.workload.scale = 300;
    c.clog.lookup_xids = "pgbench_pages";
    c.clog.xid_history = 36000000;
    c.clog.clog_buffers = buffers;
    c.label = "clog_exclusive/history" + std::to_string(buffers);
    cells.push_back(c);
  }
  const nlohmann::json got = testing::run_sim_matrix(cells, "clog-shape");
  std::map<std::string, double> reads_per_txn;
  for (const nlohmann::json& c : got) {
    const auto& rep = c["repetitions"][0];
    reads_per_txn[c["label"].get<std::string>() + "@" + std::to_string(c["clients"].get<uint32_t>())] =
        rep["model"]["clog"]["page_reads"].get<double>() / rep["txns"].get<double>();
  }
  std::map<std::pair<std::string, uint32_t>, double> tps, clog_share;
  std::map<std::pair<std::string, uint32_t>, std::string> top_wait;
  for (const nlohmann::json& c : got) {
    const std::string label = c["label"].get<std::string>();
    const uint32_t n = c["clients"].get<uint32_t>();
    tps[{label, n}] = c["summary"]["tps_median"].get<double>();
    double waits = 0, clog = 0, top = 0;
    for (const auto& [e, s] : c["repetitions"][0]["wait_events"].items()) {
      if (e == "CPU") continue;
      waits += s.get<double>();
      if (e == "LWLock:CLogControlLock") clog += s.get<double>();
      if (s.get<double>() > top) top = s.get<double>(), top_wait[{label, n}] = e;
    }
    clog_share[{label, n}] = waits > 0 ? clog / waits : 0;
  }
  auto at = [&](const char* variant, uint32_t per_statement, uint32_t n) {
    return tps[{std::string(variant) + "/" + std::to_string(per_statement), n}];
  };
  {  // two snapshots per statement (PostgreSQL's, the default)
    const double e64 = at("clog_exclusive", 2, 64), e128 = at("clog_exclusive", 2, 128);
    const double g64 = at("clog_group_update", 2, 64), g128 = at("clog_group_update", 2, 128);
    INFO("tps excl " << e64 << " -> " << e128 << ", group " << g64 << " -> " << g128);
    // Published: the exclusive variant falls from 64 to 128 clients, and the group update's
    // top wait at 128 is IPC:ProcArrayGroupUpdate. Here the exclusive variant falls for the
    // group update's reason (ProcArrayLock), not the CLOG lock's: the check pins the direction.
    CHECK(e128 < e64);
    CHECK(top_wait[{"clog_group_update/2", 128}] == "IPC:ProcArrayGroupUpdate");
    // Not reproduced (README "Snapshots", results/README.md "Two snapshots per statement"):
    // ProcArrayLock saturates first, so both variants fall from 64 to 128 clients (published,
    // the group update holds), neither leads at 64 (published: group update by 11%), and the
    // exclusive variant's CLogControlLock waits (published 64% of its top waits at 128) are
    // nearly absent.
  }
  {  // one snapshot per statement: the CLOG control lock's own contention
    const double e64 = at("clog_exclusive", 1, 64), e128 = at("clog_exclusive", 1, 128);
    const double g64 = at("clog_group_update", 1, 64), g128 = at("clog_group_update", 1, 128);
    const double ce = clog_share[{"clog_exclusive/1", 128}], cg = clog_share[{"clog_group_update/1", 128}];
    INFO("tps excl " << e64 << " -> " << e128 << ", group " << g64 << " -> " << g128);
    INFO("CLogControlLock share at 128: excl " << ce << ", group " << cg);
    // Published: the exclusive variant falls from 64 to 128 clients; group update wins at 64 (by
    // 11%) and at 128. At 128 simulated clients the model is bistable (the ProcArray convoy; the
    // config's description), so which variant wins there depends on the seed and on every cost in
    // the model. The win at 64 held here until 0dc5789 put latestCompletedXid and
    // xactCompletionCount on nextXid's line, as PostgreSQL does: the group leader's stores now
    // meet XidGenLock's holders there, and group update runs 121,740 tps against the exclusive
    // variant's 125,280 (not reproduced, as with two snapshots per statement): only the fall is
    // pinned.
    CHECK(e128 < e64);
    // CLogControlLock waits are the exclusive variant's (published: 63% of its top waits at 128,
    // absent from the group update's list). The model shows far less (README "CLOG"): 5% of this
    // cell's waits at 4b10816, above 10% before xlblocks stores became plain and the commit record
    // took walbench's tag, 1.6% once the xid lock table was on by default (8b3317e); the bound
    // asks that they are there, and five times the group update's.
    CHECK(ce > 0.01);
    CHECK(ce > 5 * cg);
  }
  {  // after a history: lookups spread over the CLOG pages of the page-visit horizon
    const double r128 = reads_per_txn["clog_exclusive/history128@64"];
    const double r8 = reads_per_txn["clog_exclusive/history8@64"];
    const double c128 = clog_share[{"clog_exclusive/history128", 64}];
    const double c8 = clog_share[{"clog_exclusive/history8", 64}];
    INFO("page reads per txn: 128 buffers " << r128 << ", 8 buffers " << r8
         << "; CLogControlLock share " << c128 << ", " << c8);
    // At scale 300 the accounts table has 491,804 pages: a page's unhinted stamps are a mean of
    // 492k xids (15 CLOG pages) old. 128 buffers hold them (9.6's 5364b357fb); PostgreSQL 9.1's
    // 8 did not (Robert Haas, "CLOG contention", 2011): about e^-(7 x 32768 / 491804) = 0.63
    // of the lookups miss, each a page read with two exclusive acquisitions.
    CHECK(r128 < 0.05);  // pages the short warm-up had not yet read in (1.2% here)
    CHECK(reads_per_txn["clog_exclusive/2@64"] == 0);  // the run alone stays within the buffers
    CHECK(r8 > 0.4);
    CHECK(r8 < 0.8);
    CHECK(c8 > 2 * c128);
  }
}
