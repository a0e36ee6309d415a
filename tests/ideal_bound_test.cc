// `ideal` is a bound (issue 8): on the simulated platform no insertion strategy reaches a
// higher throughput than `ideal` in the same cell, across the workloads, both commit modes and a
// range of client counts (fsync on, memory storage, the default sim preset). Every registered
// insertion strategy takes part with its main variants; a new strategy fails the "every strategy
// is covered" check until it is added here.
//
// Tolerance: a cell's tps counts the transactions that complete inside the timed window. A
// client's transaction in flight at either edge of the window falls in or out depending on its
// phase, so two runs that are equally fast can differ by up to one transaction per client per
// edge. The bound therefore allows tps(strategy) <= tps(ideal) + 2 * clients / window, and
// nothing more (no relative slack): the simulator is exact, and anything above that is a
// strategy genuinely beating `ideal`.
//
// Warm-up: 4 ms, so that the window starts after the WAL writer's first opportunistic pass over
// the ring (XLogBackgroundFlush -> AdvanceXLInsertBuffer initialises every free page under
// WALBufMappingLock: 16 MB of memset, ~1.4 ms). With 1 ms a client of `ideal` met that pass
// inside the 4 ms window and lost to single_lock by 1.7% (savepoints, async commit), a one-off
// stall and not a steady-state cost: with an 8 ms window ideal led by 27%.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/runner.h"
#include "tests/sim_matrix.h"
#include "strategies/strategy.h"

using namespace walbench;

namespace {

struct Contender {
  std::string label;
  std::string strategy;
  nlohmann::json params;
  std::string buffer_init = "mapping_lock";
};

std::vector<Contender> contenders() {
  return {
      {"single_lock", "single_lock", nlohmann::json::object()},
      {"insert_locks_waitlist", "insert_locks", {{"insertingat", "waitlist"}}},
      {"insert_locks_atomic", "insert_locks", {{"insertingat", "atomic"}}},
      {"insert_locks_atomic_fastpath", "insert_locks", {{"insertingat", "atomic_fastpath"}}},
      {"lockfree_reserve", "lockfree_reserve", nlohmann::json::object()},
      {"link_buf", "link_buf", nlohmann::json::object()},
      {"link_buf_waiter", "link_buf", {{"tail_advancer", "waiter"}}},
      {"consolidation_array", "consolidation_array", nlohmann::json::object()},
      {"insert_locks_buffer_init_lockfree", "insert_locks", nlohmann::json::object(), "lockfree"},
      {"write_group_leader", "write_group", {{"copy", "leader"}}},
      {"write_group_parallel", "write_group", {{"copy", "parallel"}}},
      {"per_client_progress", "per_client_progress", nlohmann::json::object()},
  };
}

struct Workload {
  std::string label;
  std::string name;
  bool transactional;
};

const std::vector<Workload> kWorkloads = {
    {"emit_message", "emit_message", true},
    {"emit_message_nontx", "emit_message", false},
    {"simple_update", "simple_update", true},
    {"tpcb_like", "tpcb_like", true},
    {"savepoints", "savepoints", true},
};

constexpr double kWindowS = 0.004;
constexpr double kWarmupS = 0.004;  // past the WAL writer's first pass over the ring (below)

CellSpec bound_cell(const Contender& c, const Workload& w, bool sync, uint32_t clients) {
  CellSpec s;
  s.label = c.label + "/" + w.label + "/sync=" + std::to_string(sync);
  s.strategy = c.strategy;
  s.strategy_params = c.params;
  s.clients = clients;
  s.platform.kind = "sim";  // the default preset
  s.workload.name = w.name;
  s.workload.transactional = w.transactional;
  s.wal.storage = "memory";
  s.wal.memory_mb = 4;  // the storage ring: its size costs wall time (pre-faulting), not tps
  s.wal.fsync = true;
  s.wal.buffer_init = c.buffer_init;
  s.commit.synchronous_commit = sync;
  s.commit.wal_writer_delay_ms = 1;  // the WAL writer runs several times inside the window
  s.run.duration_s = kWindowS;
  s.run.warmup_s = kWarmupS;
  s.run.repetitions = 1;
  s.run.seed = 1;
  s.run.progress_interval_s = 0;
  return s;
}

}  // namespace

TEST_CASE("every registered insertion strategy is a contender of the ideal bound test",
          "[ideal]") {
  std::set<std::string> covered;
  for (const Contender& c : contenders()) covered.insert(c.strategy);
  for (const StrategyInfo& s : strategies()) {
    if (s.name == "ideal") continue;
    INFO("strategy " << s.name << " is not among the contenders of tests/ideal_bound_test.cc");
    CHECK(covered.count(s.name) == 1);
  }
}

TEST_CASE("no strategy beats ideal on the simulated platform", "[ideal][sim]") {
  std::vector<CellSpec> cells;
  std::vector<Contender> all = contenders();
  all.push_back({"ideal", "ideal", nlohmann::json::object()});
  for (const Workload& w : kWorkloads)
    for (bool sync : {true, false}) {
      if (!w.transactional && !sync) continue;  // nothing commits: the mode does not apply
      for (uint32_t clients : {1u, 4u, 16u, 64u})
        for (const Contender& c : all) cells.push_back(bound_cell(c, w, sync, clients));
    }
  const nlohmann::json got = testing::run_sim_matrix(cells, "ideal-bound");

  // tps by (workload/sync, clients) then contender label.
  std::map<std::pair<std::string, uint32_t>, std::map<std::string, double>> tps;
  for (const nlohmann::json& c : got) {
    INFO(c.at("label") << " clients=" << c.at("clients") << ": " << c.at("error"));
    REQUIRE(c.at("ok").get<bool>());
    const std::string label = c.at("label").get<std::string>();
    const size_t slash = label.find('/');
    tps[{label.substr(slash + 1), c.at("clients").get<uint32_t>()}][label.substr(0, slash)] =
        c.at("summary").at("tps_median").get<double>();
  }
  std::ostringstream violations;
  size_t checked = 0, beaten = 0;
  for (const auto& [where, by_label] : tps) {
    const double ideal = by_label.at("ideal");
    const double quantum = 2.0 * where.second / kWindowS;  // see the header
    for (const auto& [label, v] : by_label) {
      if (label == "ideal") continue;
      ++checked;
      if (v > ideal + quantum) {
        ++beaten;
        violations << where.first << " clients=" << where.second << ": " << label << " " << v
                   << " tps > ideal " << ideal << " tps (x" << v / ideal << ")\n";
      }
    }
  }
  INFO(violations.str());
  CHECK(checked == cells.size() - tps.size());
  CHECK(beaten == 0);
}

TEST_CASE("ideal refuses file storage with fsync: one fdatasync cannot cover private files",
          "[ideal]") {
  const StrategyInfo* ideal = find_strategy("ideal");
  REQUIRE(ideal != nullptr);
  CellSpec spec;
  spec.strategy = "ideal";
  spec.wal.storage = "file";
  spec.wal.path = "/tmp";
  spec.wal.fsync = true;
  REQUIRE_THROWS_WITH(ideal->make_cell(spec, 1),
                      Catch::Contains("ideal is not a bound with wal.storage \"file\""));
}

TEST_CASE("ideal's private rings are a share of wal_buffers, not a full ring per client",
          "[ideal][sim]") {
  // 2 x ceil(2048 / 64) = 64 pages per client (512 KiB; the old ideal had 2048, 16 MiB each).
  CellSpec spec = bound_cell({"ideal", "ideal", nlohmann::json::object()},
                             {"emit_message", "emit_message", true}, true, 64);
  spec.run.duration_s = 0.001;
  spec.run.warmup_s = 0;
  const StrategyInfo* ideal = find_strategy("ideal");
  REQUIRE(ideal != nullptr);
  auto cell = ideal->make_cell(spec, 1);
  nlohmann::json m = cell->model_stats();
  CHECK(m.at("ring_pages").get<uint32_t>() == 64);
  CHECK(m.at("streams").get<uint32_t>() == 64);
  // A record longer than the share (2 x 4 pages at 512 clients) still fits: 64 KiB messages
  // need 9 pages of 8 KiB, plus one.
  spec.clients = 512;
  spec.workload.record_size.value = 65536;
  m = ideal->make_cell(spec, 1)->model_stats();
  CHECK(m.at("ring_pages").get<uint32_t>() == 10);
}
