// The simulated platform runs every strategy unchanged: the conformance body on the sim, and
// determinism (same config and seed -> identical result cells, through the real runner).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/platform/sim.h"
#include "harness/runner.h"
#include "strategies/strategy.h"
#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;

namespace {

CellSpec sim_stress_spec(const Variant& v) {
  CellSpec spec = stress_spec(v);
  spec.platform.kind = "sim";
  spec.platform.sim = {{"cores", 8}, {"sockets", 2}};
  spec.clients = 24;  // 3 clients per simulated core: a run queue, dispatches across sockets
  spec.commit.wal_writer_delay_ms = 0.05;
  return spec;
}

// Clients that are runnable most of the time, so that time slices expire with a full run queue.
// In the stress spec they are not: they mostly sleep on a lock's semaphore or wait for ring
// space or a flush (with 24 clients on 8 cores, 2 ms, even 0.2 ms slices, most strategies see no
// preemption at all). Here each transaction does 200 us of client work, so the 24 clients want
// ~3x the CPUs most of the time, and slices are 0.2 ms (the default 3 ms would hardly expire in
// the run). A preempted client may hold any lock or be half-way through a copy; the others must
// get through, and the WAL must still verify.
CellSpec sim_preemption_spec(const Variant& v) {
  CellSpec spec = sim_stress_spec(v);
  spec.platform.sim["time_slice_ns"] = 200000;
  spec.wal.wal_buffers = 64;
  spec.workload.record_size.min = 1;
  spec.workload.record_size.max = 4096;  // still crossing 1 KiB pages and 8 KiB segments
  spec.workload.client_overhead_us = 200;
  return spec;
}

// Runs the cells through the real runner into a scratch file and returns the file's cells.
nlohmann::json run_cells(std::vector<CellSpec>& cells, const std::string& name) {
  for (auto& c : cells) c.total = cells.size();
  const std::string path =
      "/tmp/walbench-sim-" + name + "-" + std::to_string(::getpid()) + ".json";
  RunOptions opts;
  opts.output_path = path;
  opts.quiet = true;
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err) == 0);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::remove(path.c_str());
  return doc.at("cells");
}

}  // namespace

TEST_CASE("every strategy passes the verifier on the simulated platform", "[conformance][sim]") {
  for (const Variant& v : all_variants()) {
    for (bool sync : {true, false}) {
      CellSpec spec = sim_stress_spec(v);
      spec.commit.synchronous_commit = sync;
      INFO(describe(v, spec));
      const Outcome o = run_cell(spec, 0.002);  // 2 ms of virtual time
      INFO("verify: " << o.verify.error << " model: " << o.model.dump());
      CHECK(o.txns > 0);
      CHECK(o.verify.ok);
      CHECK(o.driven.measured);
      CHECK(o.model.at("pages_initialised").get<uint64_t>() > 4);
    }
  }
}

TEST_CASE("every strategy passes the verifier on the simulated platform with clients preempted",
          "[conformance][sim]") {
  for (const Variant& v : all_variants()) {
    for (bool sync : {true, false}) {
      CellSpec spec = sim_preemption_spec(v);
      spec.commit.synchronous_commit = sync;
      INFO(describe(v, spec));
      const Outcome o = run_cell(spec, 0.005);  // 5 ms of virtual time: 25 slices
      INFO("verify: " << o.verify.error << " model: " << o.model.dump());
      const nlohmann::json& sim = o.driven.platform_stats.at("sim");
      INFO("sim counters: " << sim.dump());
      CHECK(o.txns > 0);
      CHECK(o.verify.ok);
      CHECK(o.driven.measured);
      CHECK(o.model.at("pages_initialised").get<uint64_t>() > 4);
      // It really time-sliced: clients were taken off their CPUs for others, many times.
      CHECK(sim.at("preemptions").get<uint64_t>() >= spec.clients);
    }
  }
}

TEST_CASE("every strategy passes the verifier on the simulated platform with lock-free buffer init",
          "[conformance][sim]") {
  // wal.buffer_init "lockfree" (bc22dc0e0d) on the sim, a 16-page ring so pages are reserved,
  // initialised and evicted by several clients at once, with the ring bytes charged through
  // P::touch_range (sim.h "RANGES").
  for (const Variant& v : all_variants()) {
    CellSpec spec = sim_stress_spec(v);
    spec.wal.buffer_init = "lockfree";
    spec.wal.wal_buffers = 16;
    INFO(describe(v, spec) << " buffer_init=lockfree");
    const Outcome o = run_cell(spec, 0.002);
    INFO("verify: " << o.verify.error << " model: " << o.model.dump());
    CHECK(o.txns > 0);
    CHECK(o.verify.ok);
    CHECK(o.model.at("pages_initialised").get<uint64_t>() > 16);  // the ring went round
  }
}

TEST_CASE("every strategy passes the verifier on the simulated platform with a driver thread "
          "per client", "[conformance][sim]") {
  for (const Variant& v : all_variants()) {
    for (const char* workload : {"emit_message", "tpcb_like"}) {  // one and seven statements
      CellSpec spec = sim_preemption_spec(v);  // 24 clients and their 24 drivers on 8 cores
      spec.workload.name = workload;
      spec.workload.driver_us = 60;
      INFO(describe(v, spec) << " " << workload);
      const Outcome o = run_cell(spec, 0.004);
      INFO("verify: " << o.verify.error << " model: " << o.model.dump());
      CHECK(o.txns > 0);
      CHECK(o.verify.ok);
      CHECK(o.driven.measured);
      // Every statement is two hand-overs, each a semaphore wake-up unless the other thread has
      // not blocked yet (oversubscribed here: a preempted driver may find the next result
      // already posted), so at least one wake-up per completed statement.
      const uint64_t statements = o.txns * (spec.workload.name == "tpcb_like" ? 7 : 1);
      CHECK(o.driven.platform_stats.at("sim").at("semaphore_wakes").get<uint64_t>() >=
            statements);
    }
  }
}

TEST_CASE("sim: the client driver: a statement's round trip is two hand-overs, the backend "
          "waits in ClientRead only while its driver works", "[sim]") {
  auto run = [](uint32_t cores, double driver_us) {
    CellSpec spec;
    spec.strategy = "single_lock";
    spec.clients = 1;
    spec.platform.kind = "sim";
    spec.platform.sim = {{"cores", cores}, {"sockets", 1}, {"smt", 1}};
    spec.workload.record_size.value = 16;
    spec.workload.transactional = false;
    spec.workload.client_overhead_us = 100;
    spec.workload.driver_us = driver_us;
    spec.commit.wal_writer_delay_ms = 1000;  // the WAL writer stays out of the way
    spec.run.seed = 3;
    return run_cell(spec, 0.05);  // 50 ms: about 500 statements
  };
  const SimConfig d;
  const double switch_ns = static_cast<double>(d.context_switch_ns);
  const double post_ns = static_cast<double>(d.semaphore_post_ns);
  auto per_statement_ns = [](const Outcome& o) { return 0.05e9 / static_cast<double>(o.txns); };
  auto client_read_share = [](const Outcome& o) {
    uint64_t all = 0;
    for (uint64_t x : o.driven.wait_samples) all += x;
    return static_cast<double>(o.driven.wait_samples[static_cast<size_t>(WaitEvent::kClientRead)]) /
           static_cast<double>(all);
  };
  // One core: the backend posts, blocks, the driver is dispatched, works 40 us, posts, blocks,
  // the backend is dispatched and works 60 us: two more dispatches and two posts per statement.
  const Outcome alone = run(1, 0), driven = run(1, 40);
  REQUIRE(alone.verify.ok);
  REQUIRE(driven.verify.ok);
  const double extra = per_statement_ns(driven) - per_statement_ns(alone);
  INFO("per statement: " << per_statement_ns(alone) << " ns alone, " << per_statement_ns(driven)
                         << " ns with the driver");
  CHECK(extra > 2 * switch_ns);
  CHECK(extra < 2 * (switch_ns + post_ns) + 3000);
  // Without a driver the whole round trip is ClientRead; with one, only the driver's part.
  CHECK(client_read_share(alone) > 0.9);
  const Outcome two_cores = run(2, 40);
  REQUIRE(two_cores.verify.ok);
  CHECK(client_read_share(two_cores) > 0.3);
  CHECK(client_read_share(two_cores) < 0.6);
  // On two cores the driver wakes on the idle one and the backend back on its own: each
  // hand-over pays an idle CPU's semaphore_wake_ns, where one core only queued the other thread.
  INFO("per statement on two cores: " << per_statement_ns(two_cores) << " ns");
  CHECK(per_statement_ns(two_cores) - per_statement_ns(driven) >
        static_cast<double>(d.semaphore_wake_ns));
}

TEST_CASE("a simulated run is deterministic: same seed, identical result cells", "[sim]") {
  auto run_once = [](uint64_t seed) {
    std::vector<CellSpec> cells;
    size_t index = 0;
    for (const char* ia : {"waitlist", "atomic"}) {
      for (uint32_t clients : {1u, 32u}) {
        CellSpec c;
        c.index = index++;
        c.label = std::string("insert_locks_") + ia;
        c.strategy = "insert_locks";
        c.strategy_params = {{"num_locks", 8}, {"insertingat", ia}, {"lock_choice", "procno"}};
        c.clients = clients;
        c.platform.kind = "sim";
        c.platform.sim = {{"cores", 16}};
        c.wal.wal_buffers = 16;
        c.workload.record_size.value = 64;
        c.run.duration_s = 0.002;
        c.run.warmup_s = 0.0005;
        c.run.progress_interval_s = 0.001;
        c.run.seed = seed;
        cells.push_back(c);
      }
    }
    return run_cells(cells, "determinism-" + std::to_string(seed));
  };
  const nlohmann::json a = run_once(7);
  const nlohmann::json b = run_once(7);
  REQUIRE(a.size() == 4);
  CHECK(a.dump() == b.dump());
  for (const auto& cell : a) {
    CHECK(cell.at("ok").get<bool>());
    CHECK(cell.at("summary").at("tps_median").get<double>() > 0);
  }
  const nlohmann::json c = run_once(8);
  // Another seed moves the wake-up jitter, so at least the contended cells differ.
  CHECK(a.dump() != c.dump());
}

// The sim keys cache lines by address, so shared arrays must not start at an offset inside a line
// that depends on the heap (core/aligned_array.h). Every strategy, run with records that span
// many lines and a ring of 16 pages, gives identical cells whether or not blocks of odd sizes were
// allocated (and kept) before the run, which moves where later allocations land.
TEST_CASE("every strategy's simulated cells are the same whatever the heap held before", "[sim]") {
  auto run_once = [](bool perturb) {
    std::vector<std::unique_ptr<char[]>> held;
    if (perturb)
      for (size_t n : {24u, 40u, 8u, 56u, 200u, 72u, 16u}) held.emplace_back(new char[n]);
    std::vector<CellSpec> cells;
    for (const StrategyInfo& s : strategies()) {
      for (uint32_t clients : {1u, 6u}) {
        CellSpec c;
        c.index = cells.size();
        c.label = s.name;
        c.strategy = s.name;
        c.clients = clients;
        c.platform.kind = "sim";
        c.platform.sim = {{"cores", 8}, {"sockets", 1}};
        c.wal.wal_buffers = 16;
        c.workload.record_size.value = 3000;
        c.workload.client_overhead_us = 5;
        c.run.duration_s = 0.003;
        c.run.warmup_s = 0.001;
        c.run.progress_interval_s = 0.001;
        c.run.seed = 7;
        cells.push_back(c);
      }
    }
    // And with a client driver, whose hand-over semaphores are heap-allocated per run.
    CellSpec driven = cells.back();
    driven.index = cells.size();
    driven.label += "+driver";
    driven.workload.driver_us = 2;
    cells.push_back(driven);
    // And pgbench's row locks (core/cell/row_locks.h), whose xmax slots, lock arrays and kept
    // snapshots are allocated per run: at scale 1 six clients queue on the one branch row; at scale 3 the 30
    // tellers' 8-byte slots share lines, so a slot array that started mid-line would move which
    // rows contend on a line (the bug 847e942 fixed: cells differed from run to run).
    for (const char* workload : {"tpcb_like", "savepoints"}) {
      for (uint32_t scale : {1u, 3u}) {
        CellSpec c = cells.front();
        c.index = cells.size();
        c.label = std::string("insert_locks+") + workload + "+scale" + std::to_string(scale);
        c.strategy = "insert_locks";
        c.clients = 6;
        c.workload.name = workload;
        c.workload.scale = scale;
        c.workload.record_size = SizeSpec{};
        c.workload.client_overhead_us = 2;
        c.clog.procarray = "group_clear";  // snapshots, kept for the re-locks without a wait
        c.clog.snapshot = "dense";
        cells.push_back(c);
      }
    }
    return run_cells(cells, "heap-" + std::to_string(perturb));
  };
  const nlohmann::json a = run_once(false);
  const nlohmann::json b = run_once(true);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].at("label").get<std::string>() << " clients " << a[i].at("clients"));
    CHECK(a[i].at("ok").get<bool>());
    CHECK(a[i].at("repetitions").dump() == b[i].at("repetitions").dump());
    if (a[i].at("label").get<std::string>().ends_with("+scale1"))  // they really queued on rows
      CHECK(a[i].at("repetitions").at(0).at("model").at("row_lock_waits").get<uint64_t>() > 0);
  }
}
