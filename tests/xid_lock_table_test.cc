// The xid lock table (core/clog/xid_lock_table.h), beside the behaviour:
//   - on threads, clients entering and releasing xid locks at once (subtransactions' xids too)
//     leave the table empty, every freelist's count back at zero (X1, X3);
//   - a freelist that runs out borrows from the others, and the counts stay exact (X1);
//   - on the sim, through the runner: the LockManager partition locks' own statistics count one
//     acquisition per xid entered and one per partition LockReleaseAll visits, a transaction
//     with subtransactions' xids included (savepoints), the verifier finds the tables empty
//     after the run (X3), and the cell with the table runs fewer transactions than without it;
//   - a cell records the setting either way, and a rerun of a cell that does not (written
//     before 8b3317e, when the key was recorded only when true) runs without it.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "core/clog/xid_lock_table.h"
#include "core/platform/sim.h"
#include "core/platform/threads.h"
#include "harness/cell_json.h"
#include "harness/config.h"
#include "tests/conformance.h"
#include "tests/sim_matrix.h"

using namespace walbench;
using namespace walbench::conformance;

TEST_CASE("xid lock table: concurrent clients leave it empty, every freelist count back at zero", "[clog][xidlock]") {
  using P = ThreadsPlatform;
  constexpr uint32_t kClients = 8, kTxns = 3000;
  ProcTable<P> procs(kClients, 3);
  XidLockTable<P> table(procs, kClients);
  std::atomic<uint32_t> next_xid{3};
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      Proc<P>& me = procs[static_cast<int32_t>(c)];
      for (uint32_t i = 0; i < kTxns; ++i) {
        const uint32_t xids = 1 + (i + c) % 3;  // a top-level xid and up to two subtransactions'
        for (uint32_t k = 0; k < xids; ++k) table.insert(me, Xid{next_xid.fetch_add(1)});
        table.release_all(me);
      }
    });
  for (auto& t : threads) t.join();
  const auto totals = table.totals();
  CHECK(totals.inserts.get() == totals.releases.get());
  CHECK(totals.inserts.get() == 2ull * kClients * kTxns);  // (1 + 2 + 3) per three transactions
  CHECK(table.held() == 0);
  CHECK(table.lock_entries() == 0);
  CHECK(table.proclock_entries() == 0);
  // One acquisition to enter each xid, and one per partition that LockReleaseAll visits.
  CHECK(totals.partition_acquisitions.get() > totals.inserts.get());
  CHECK(totals.partition_acquisitions.get() <= 2 * totals.inserts.get());
}

TEST_CASE("xid lock table: counts stay exact while locks are held", "[clog][xidlock]") {
  using P = ThreadsPlatform;
  ProcTable<P> procs(2, 1);
  XidLockTable<P> table(procs, 2);
  Proc<P>& a = procs[0];
  Proc<P>& b = procs[1];
  for (uint32_t x = 3; x < 40; ++x) table.insert(x % 2 ? a : b, Xid{x});
  CHECK(table.held() == 37);
  CHECK(table.lock_entries() == 37);
  CHECK(table.proclock_entries() == 37);
  table.release_all(a);
  CHECK(table.held() == 18);  // b's: the even xids 4..38
  CHECK(table.lock_entries() == 18);
  table.release_all(b);
  CHECK(table.held() == 0);
  CHECK(table.lock_entries() == 0);
}

TEST_CASE("xid lock table: a freelist that runs out borrows from the others", "[clog][xidlock]") {
  using P = ThreadsPlatform;
  ProcTable<P> procs(1, 1);
  XidLockTable<P> table(procs, 1);  // 3,904 LOCKs, 122 a freelist
  Proc<P>& me = procs[0];
  uint32_t taken = 0;
  for (uint32_t x = 3; taken < 300; ++x)  // 300 xids of freelist 0 (partition 0): 178 borrowed
    if (XidLockTable<P>::hashcode(Xid{x}) % 32 == 0) {
      table.insert(me, Xid{x});
      ++taken;
    }
  CHECK(table.held() == 300);
  CHECK(table.lock_entries() == 300);
  CHECK(table.proclock_entries() == 300);  // 244 a freelist: 56 borrowed
  table.release_all(me);
  CHECK(table.held() == 0);
  CHECK(table.lock_entries() == 0);
  CHECK(table.proclock_entries() == 0);
  CHECK(table.totals().partition_acquisitions.get() == 301);  // 300 to enter, 1 to release
}

namespace {

CellSpec sim_cell(const std::string& workload, uint32_t clients, bool xid_locks) {
  CellSpec spec = stress_spec(Variant{"insert_locks", nlohmann::json::object()});
  spec.label = workload + (xid_locks ? "_xid_locks" : "_none");
  spec.workload.name = workload;
  spec.workload.transactional = true;
  spec.workload.record_size = SizeSpec{};  // emit_message: 16 bytes, fixed
  spec.workload.client_overhead_us = 2;
  spec.commit.synchronous_commit = false;
  spec.clog.xid_locks = xid_locks;
  spec.platform.kind = "sim";
  spec.platform.sim = {{"preset", "icelake_2s"}, {"cores", 8}, {"sockets", 1}};
  spec.clients = clients;
  spec.run.duration_s = 0.002;
  spec.run.warmup_s = 0.001;
  return spec;
}

}  // namespace

TEST_CASE("sim: the partition locks count one acquisition per xid entered and per partition released", "[clog][xidlock][sim]") {
  const nlohmann::json cells = walbench::testing::run_sim_matrix(
      {sim_cell("emit_message", 8, true), sim_cell("emit_message", 8, false),
       sim_cell("savepoints", 8, true)},
      "xidlock");
  for (const nlohmann::json& cell : cells) {
    INFO(cell["label"].get<std::string>() << ": " << cell["error"].dump());
    REQUIRE(cell["ok"] == true);  // the verifier found both tables empty after the run (X3)
  }
  const nlohmann::json& with = cells[0]["repetitions"][0];
  const nlohmann::json& without = cells[1]["repetitions"][0];
  const nlohmann::json& savepoints = cells[2]["repetitions"][0];
  REQUIRE(with["model"].contains("xid_locks"));
  CHECK_FALSE(without["model"].contains("xid_locks"));
  CHECK_FALSE(without["lock_stats"].contains("LWLock:LockManager"));
  for (const nlohmann::json* rep : {&with, &savepoints}) {
    const nlohmann::json& m = (*rep)["model"]["xid_locks"];
    const uint64_t inserts = m["inserts"].get<uint64_t>(), releases = m["releases"].get<uint64_t>();
    const uint64_t acquisitions =
        (*rep)["lock_stats"]["LWLock:LockManager"]["acquisitions"].get<uint64_t>();
    // Counted by the LWLocks themselves (when acquired; the table counts when it is done, so
    // the two windows' edges differ by the clients in between): one per xid entered, at least
    // one per LockReleaseAll and at most one per xid released.
    const uint64_t counted = m["partition_acquisitions"].get<uint64_t>();
    CHECK(acquisitions <= counted + 8);
    CHECK(counted <= acquisitions + 8);
    CHECK(counted > inserts);
    CHECK(counted <= inserts + releases);
    CHECK(inserts >= (*rep)["window"]["xids"].get<uint64_t>() - 8);  // every xid assigned has one
  }
  // emit_message: one xid a transaction, so one partition each way, within the window's edges.
  const uint64_t inserts = with["model"]["xid_locks"]["inserts"].get<uint64_t>();
  const uint64_t releases = with["model"]["xid_locks"]["releases"].get<uint64_t>();
  const uint64_t acquired = with["lock_stats"]["LWLock:LockManager"]["acquisitions"].get<uint64_t>();
  CHECK(acquired <= inserts + releases + 8);
  CHECK(inserts + releases <= acquired + 8);
  CHECK(with["model"]["xid_locks"]["partition_acquisitions"].get<uint64_t>() == inserts + releases);
  // savepoints: 1 + 3 xids a transaction, released a partition at a time (fewer acquisitions).
  const nlohmann::json& sm = savepoints["model"]["xid_locks"];
  CHECK(sm["inserts"].get<uint64_t>() > 3 * savepoints["txns"].get<uint64_t>());
  CHECK(savepoints["lock_stats"]["LWLock:LockManager"]["acquisitions"].get<uint64_t>() <
        sm["inserts"].get<uint64_t>() + sm["releases"].get<uint64_t>());
  // The table's lines are shared and its locks contended: fewer transactions in the same window.
  CHECK(with["txns"].get<uint64_t>() < without["txns"].get<uint64_t>());
}

TEST_CASE("clog.xid_locks: on by default, recorded either way; a cell without the key reruns without the table", "[clog][xidlock][rerun]") {
  CHECK(CellSpec{}.clog.xid_locks);
  nlohmann::json on = nlohmann::json(cell_setup_json(sim_cell("emit_message", 2, true)));
  CHECK(on["clog"]["xid_locks"] == true);
  CHECK(config_of_cell(on, "x.json")["clog"]["xid_locks"] == true);
  CHECK(expand_matrix(config_of_cell(on, "x.json"), "x.json").front().clog.xid_locks);
  // Off, the cell says so, and its rerun keeps it off.
  nlohmann::json off = nlohmann::json(cell_setup_json(sim_cell("emit_message", 2, false)));
  REQUIRE(off["clog"].contains("xid_locks"));
  CHECK(off["clog"]["xid_locks"] == false);
  CHECK_FALSE(expand_matrix(config_of_cell(off, "x.json"), "x.json").front().clog.xid_locks);
  // A cell written before 8b3317e records the key only when it was on: without it, the cell
  // ran without the table, and so does its rerun, whatever today's default.
  nlohmann::json before = off;
  before["clog"].erase("xid_locks");
  CHECK(config_of_cell(before, "x.json")["clog"]["xid_locks"] == false);
  CHECK_FALSE(expand_matrix(config_of_cell(before, "x.json"), "x.json").front().clog.xid_locks);
}
