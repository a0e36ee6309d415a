// The matrix runner against a toy model (FakeRun): result file, failures, watchdog, the math.
// No timing is asserted beyond "some transactions happened"; the numbers checked exactly are
// the ones computed from fixed inputs.
#include "harness/runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "harness/report.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// ---- The toy model ----
//
// strategy_params.mode:
//   "ok"            clients count a transaction every ~200 us, verify passes
//   "verify_fail"   verify reports a broken prev link
//   "throw_factory" the factory throws
//   "throw_client"  client 0 throws after a few transactions
//   "stall"         after 5 transactions each client waits (polling stop): even clients on
//                   LWLock:WALInsert, odd ones on CPU; they return when stop is set
//   "stuck"         like stall, but the clients never return (forked test only)
//   "check_file"    the factory checks that strategy_params.check_file holds
//                   strategy_params.expect_cells finished cells (the per-cell rewrite)
std::atomic<bool> g_never{false};  // never set: what "stuck" clients wait for

class FakeRun : public CellRun {
 public:
  FakeRun(const CellSpec& cell, uint64_t seed)
      : mode_(cell.strategy_params.value("mode", "ok")),
        seed_(seed),
        events_(new std::atomic<uint32_t>[cell.clients]),
        n_(cell.clients) {
    for (uint32_t i = 0; i < n_; ++i) events_[i].store(0);
  }

  void client_main(uint32_t i, RunControl& ctl) override {
    uint64_t k = 0;
    while (!ctl.stop.load(std::memory_order_acquire)) {
      if ((mode_ == "stall" || mode_ == "stuck") && k >= 5) {
        events_[i].store(static_cast<uint32_t>(i % 2 ? WaitEvent::kNone : WaitEvent::kWalInsert));
        if (mode_ == "stuck")
          while (!g_never.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (mode_ == "throw_client" && i == 0 && k == 3) throw std::runtime_error("boom");
      const auto t0 = std::chrono::steady_clock::now();
      events_[i].store(static_cast<uint32_t>(WaitEvent::kWalInsert));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      events_[i].store(0);
      ctl.counters[i].count_txn(100);
      if (ctl.measuring.load(std::memory_order_acquire))
        ctl.counters[i].record_latency(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
                .count()));
      ++k;
      txns_.fetch_add(1);
    }
  }
  WaitEvent wait_event(uint32_t i) const override { return static_cast<WaitEvent>(events_[i].load()); }
  void finish() override { finished_ = true; }
  VerifyResult verify() override {
    VerifyResult v;
    v.records = txns_.load();
    if (!finished_) {
      v.ok = false;
      v.error = "verify before finish";
    } else if (mode_ == "verify_fail") {
      v.ok = false;
      v.error = "at 0/00000028: prev link 0/00000000 should be 0/00000010";
    }
    return v;
  }
  nlohmann::json lock_stats() const override { return {{"WALInsert", {{"acquisitions", txns_.load()}}}}; }
  nlohmann::json model_stats() const override { return {{"seed", seed_}, {"finished", finished_}}; }

 private:
  std::string mode_;
  uint64_t seed_;
  std::unique_ptr<std::atomic<uint32_t>[]> events_;
  uint32_t n_;
  std::atomic<uint64_t> txns_{0};
  bool finished_ = false;
};

std::unique_ptr<CellRun> make_fake(const CellSpec& cell, uint64_t seed) {
  const std::string mode = cell.strategy_params.value("mode", "ok");
  if (mode == "throw_factory") throw std::runtime_error("cannot build: no such lock");
  if (mode == "check_file") {
    std::ifstream in(cell.strategy_params.at("check_file").get<std::string>());
    const auto doc = nlohmann::json::parse(in);  // throws when missing or torn
    const auto want = cell.strategy_params.at("expect_cells").get<size_t>();
    if (doc.at("cells").size() != want)
      throw std::runtime_error("result file has " + std::to_string(doc.at("cells").size()) +
                               " cells, expected " + std::to_string(want));
  }
  return std::make_unique<FakeRun>(cell, seed);
}

CellFactory fake_lookup(const CellSpec&) { return &make_fake; }

CellSpec make_cell(const std::string& label, const std::string& mode, uint32_t clients = 2) {
  CellSpec c;
  c.label = label;
  c.strategy = "fake";
  c.strategy_params = {{"mode", mode}};
  c.clients = clients;
  c.run.duration_s = 0.2;
  c.run.warmup_s = 0.05;
  c.run.repetitions = 1;
  c.run.seed = 7;
  c.run.progress_interval_s = 0;
  c.run.watchdog_s = 0;
  c.matrix_values = {{"clients", clients}, {"strategy", label}};
  return c;
}

void number(std::vector<CellSpec>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    cells[i].index = i;
    cells[i].total = cells.size();
  }
}

using testing::TempDir;

ojson read_ordered(const std::string& path) {
  std::ifstream in(path);
  return ojson::parse(in);
}

// A tiny pattern matcher for output lines (std::regex draws GCC 12 false-positive warnings in
// ASan builds): '#' matches one or more of [0-9.], '~' one or more spaces, all else literally.
bool match_here(const char* p, const char* t, const char** end) {
  if (*p == 0) {
    *end = t;
    return true;
  }
  if (*p == '#' || *p == '~') {
    auto in_class = [&](char c) { return *p == '#' ? ((c >= '0' && c <= '9') || c == '.') : c == ' '; };
    size_t run = 0;
    while (t[run] && in_class(t[run])) ++run;
    for (size_t k = run; k >= 1; --k)
      if (match_here(p + 1, t + k, end)) return true;
    return false;
  }
  return *t == *p && match_here(p + 1, t + 1, end);
}
// The whole of `text` matches.
bool full_match(const std::string& text, const std::string& pattern) {
  const char* end = nullptr;
  return match_here(pattern.c_str(), text.c_str(), &end) && *end == 0;
}
// Some substring of `text` matches (or, with at_start, a prefix).
bool contains_match(const std::string& text, const std::string& pattern, bool at_start = false) {
  const char* end = nullptr;
  for (size_t i = 0; i <= (at_start ? 0 : text.size()); ++i)
    if (match_here(pattern.c_str(), text.c_str() + i, &end)) return true;
  return false;
}

TEST_CASE("run_matrix writes a result file with context first and one entry per cell", "[runner]") {
  TempDir dir;
  std::vector<CellSpec> cells = {make_cell("a", "ok"), make_cell("b", "ok", 3)};
  cells[1].run.repetitions = 2;
  number(cells);
  RunOptions opts;
  opts.output_path = dir.file("result.json");
  opts.config_paths = {"configs/fake.json"};
  opts.config = {{"run", {{"duration_s", 0.2}}}};
  opts.config_hash = "0123abcd";
  opts.overrides = {"run.seed=7"};
  std::ostringstream out, err;

  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);

  CHECK_FALSE(fs::exists(opts.output_path + ".tmp"));
  const ojson doc = read_ordered(opts.output_path);
  REQUIRE(doc.is_object());
  CHECK(doc.begin().key() == "context");
  const ojson& ctx = doc["context"];
  CHECK(ctx["schema_version"] == 1);
  CHECK(ctx["walbench_version"] == "0.1.0");
  CHECK(ctx["config_files"] == ojson::array({"configs/fake.json"}));
  CHECK(ctx["config_hash"] == "0123abcd");
  CHECK(ctx["overrides"] == ojson::array({"run.seed=7"}));
  CHECK(ctx["seed"] == 7);
  CHECK(ctx["config"]["run"]["duration_s"] == 0.2);
  for (const char* k : {"date", "host", "cpu_model", "kernel", "compiler", "build_type", "git_sha"})
    CHECK(ctx[k].is_string());
  CHECK(full_match(ctx["date"].get<std::string>(), "#-#-#T#:#:#Z"));
  CHECK(ctx["logical_cores"].get<int>() >= 1);

  REQUIRE(doc["cells"].size() == 2);
  const ojson& b = doc["cells"][1];
  CHECK(b["index"] == 1);
  CHECK(b["label"] == "b");
  CHECK(b["strategy"] == "fake");
  CHECK(b["params"]["mode"] == "ok");
  CHECK(b["clients"] == 3);
  CHECK(b["matrix"]["clients"] == 3);
  CHECK(b["workload"]["record_size_label"] == "16");
  CHECK(b["wal"]["wal_buffers"] == WalSpec{}.wal_buffers);
  CHECK(b["commit"]["synchronous_commit"] == true);
  CHECK(b["run"]["repetitions"] == 2);
  CHECK(b["ok"] == true);
  CHECK(b["error"].is_null());
  REQUIRE(b["repetitions"].size() == 2);
  std::vector<double> tps;
  for (size_t r = 0; r < 2; ++r) {
    const ojson& rep = b["repetitions"][r];
    CHECK(rep["seed"] == 7 + r);  // seed = run.seed + repetition
    CHECK(rep["ok"] == true);
    const double txns = rep["txns"].get<double>();
    const double elapsed = rep["elapsed_s"].get<double>();
    CHECK(txns > 0);
    CHECK(elapsed >= 0.2);
    CHECK(rep["tps"].get<double>() == Approx(txns / elapsed));
    CHECK(rep["bytes_per_s"].get<double>() == Approx(100 * txns / elapsed));  // 100 B per txn
    const ojson& lat = rep["latency_ms"];
    CHECK(lat["count"].get<uint64_t>() > 0);
    CHECK(lat["mean"].get<double>() >= 0.2);  // each txn sleeps 200 us
    CHECK(lat["p50"].get<double>() <= lat["p90"].get<double>());
    CHECK(lat["p90"].get<double>() <= lat["p99"].get<double>());
    CHECK(lat["p99"].get<double>() <= lat["p999"].get<double>());
    CHECK(rep["wait_events"]["LWLock:WALInsert"].get<uint64_t>() > 0);
    CHECK(rep["lock_stats"]["WALInsert"]["acquisitions"].get<uint64_t>() > 0);
    CHECK(rep["model"]["seed"] == 7 + r);
    CHECK(rep["model"]["finished"] == true);
    CHECK(rep["verify"]["ok"] == true);
    tps.push_back(rep["tps"].get<double>());
  }
  const ojson& s = b["summary"];
  CHECK(s["repetitions"] == 2);
  CHECK(s["tps_median"].get<double>() == Approx(median(tps)));
  CHECK(s["tps_rsd_pct"].get<double>() == Approx(rsd_pct(tps)));

  // One line per cell on `out`.
  const std::string o = out.str();
  CHECK(contains_match(o, "cell 1/2 a clients=2 record_size=16: # tps (rsd 0.0%) verify ok  [eta #m#s]\n"));
  CHECK(contains_match(o, "cell 2/2 b clients=3 record_size=16: # tps (rsd #%) verify ok  [eta 0m00s]\n"));
}

TEST_CASE("run_matrix rewrites the result file after every cell", "[runner]") {
  TempDir dir;
  const std::string path = dir.file("r.json");
  std::vector<CellSpec> cells;
  for (size_t k = 0; k < 3; ++k) {
    CellSpec c = make_cell("c" + std::to_string(k), "check_file", 1);
    c.strategy_params["check_file"] = path;
    c.strategy_params["expect_cells"] = k;  // cells finished before this one
    c.run.duration_s = 0.05;
    c.run.warmup_s = 0;
    cells.push_back(c);
  }
  number(cells);
  RunOptions opts;
  opts.output_path = path;
  std::ostringstream out, err;
  CHECK(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  INFO(out.str());
  const ojson doc = read_ordered(path);
  REQUIRE(doc["cells"].size() == 3);
  for (const auto& c : doc["cells"]) CHECK(c["ok"] == true);
}

TEST_CASE("a failed cell is recorded and the sweep goes on", "[runner]") {
  TempDir dir;
  std::vector<CellSpec> cells = {make_cell("verify_fail", "verify_fail"),
                                 make_cell("throw_factory", "throw_factory"),
                                 make_cell("throw_client", "throw_client"),
                                 make_cell("no_threads", "ok"),
                                 make_cell("good", "ok")};
  cells[0].run.repetitions = 3;  // the remaining repetitions are skipped
  number(cells);
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  FactoryLookup lookup = [](const CellSpec& c) -> CellFactory {
    return c.label == "no_threads" ? nullptr : &make_fake;
  };

  CHECK(run_matrix(cells, opts, out, err, lookup) == 1);

  const ojson doc = read_ordered(opts.output_path);
  REQUIRE(doc["cells"].size() == 5);
  const ojson& vf = doc["cells"][0];
  CHECK(vf["ok"] == false);
  CHECK(vf["error"] ==
        "repetition 1/3 (seed 7): verify failed: at 0/00000028: prev link 0/00000000 should be "
        "0/00000010");
  REQUIRE(vf["repetitions"].size() == 1);
  CHECK(vf["repetitions"][0]["verify"]["ok"] == false);
  CHECK(vf["repetitions"][0]["tps"].get<double>() > 0);  // measured before verify failed
  CHECK(vf["summary"]["tps_median"].get<double>() > 0);

  const ojson& tf = doc["cells"][1];
  CHECK(tf["ok"] == false);
  CHECK(tf["error"] == "building the model: cannot build: no such lock");
  CHECK(tf["summary"].is_null());

  const ojson& tc = doc["cells"][2];
  CHECK(tc["ok"] == false);
  CHECK(tc["error"] == "client 0: boom");
  CHECK(tc["repetitions"][0]["verify"].is_null());  // no verify of a broken run

  CHECK(doc["cells"][3]["error"] == "strategy fake has no implementation yet");
  CHECK(doc["cells"][4]["ok"] == true);

  const std::string o = out.str();
  CHECK(o.find("cell 2/5 throw_factory clients=2 record_size=16: FAILED: building the model: "
               "cannot build: no such lock  [eta ") != std::string::npos);
  CHECK(o.find("cell 4/5 no_threads clients=2 record_size=16: FAILED: strategy fake has no "
               "implementation yet") != std::string::npos);
  CHECK(contains_match(o, "cell 5/5 good clients=2 record_size=16: # tps"));
}

TEST_CASE("the registry lookup names what is missing", "[runner]") {
  CellSpec c = make_cell("x", "ok");
  c.strategy = "no_such_strategy";
  CHECK_THROWS_WITH(registry_factory_lookup(c), "unknown strategy \"no_such_strategy\"");
  // The platform is checked where the model is built (strategies/make_cell.h).
  c.strategy = "ideal";
  c.platform.kind = "no_such_platform";
  CellFactory f = registry_factory_lookup(c);
  REQUIRE(f != nullptr);
  CHECK_THROWS_WITH(f(c, 1), Catch::Contains("platform \"no_such_platform\""));
}

TEST_CASE("progress lines in pgbench's format, recorded in the result", "[runner]") {
  std::vector<CellSpec> cells = {make_cell("p", "ok")};
  cells[0].run.progress_interval_s = 0.1;
  cells[0].run.warmup_s = 0.1;
  cells[0].run.duration_s = 0.25;
  number(cells);
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);

  std::istringstream lines(err.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    CHECK(full_match(line, "progress: # s, # tps, lat # ms stddev #"));
    ++n;
  }
  CHECK(n >= 2);  // 0.35 s of run, a line per 0.1 s (the warm-up included)
  const ojson doc = read_ordered(opts.output_path);
  const ojson& progress = doc["cells"][0]["repetitions"][0]["progress"];
  CHECK(static_cast<int>(progress.size()) == n);
  CHECK(progress[0]["t"].get<double>() == Approx(0.1).margin(0.05));
  CHECK(progress[0]["tps"].get<double>() > 0);
  // Little's law: lat = clients / tps.
  CHECK(progress[0]["lat_ms"].get<double>() == Approx(2 * 1000.0 / progress[0]["tps"].get<double>()));

  std::ostringstream out2, err2;
  opts.quiet = true;
  REQUIRE(run_matrix(cells, opts, out2, err2, fake_lookup) == 0);
  CHECK(err2.str().empty());
}

TEST_CASE("the watchdog fails a stalled cell and the sweep goes on when clients come back",
          "[runner]") {
  std::vector<CellSpec> cells = {make_cell("stall", "stall", 3), make_cell("after", "ok")};
  cells[0].run.watchdog_s = 0.2;
  cells[0].run.duration_s = 5;  // the watchdog ends it long before
  number(cells);
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(run_matrix(cells, opts, out, err, fake_lookup) == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  const ojson doc = read_ordered(opts.output_path);
  CHECK(doc["cells"][0]["ok"] == false);
  CHECK(doc["cells"][0]["error"] ==
        "watchdog: no progress for 0.2 s; clients waiting: 2 x LWLock:WALInsert [0,2], 1 x CPU [1]");
  CHECK(doc["cells"][1]["ok"] == true);
}

TEST_CASE("the watchdog saves the result and exits 1 when clients are stuck for good",
          "[runner]") {
  TempDir dir;
  const std::string path = dir.file("r.json");
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: the stuck clients never return, so run_matrix must end the process itself.
    std::vector<CellSpec> cells = {make_cell("ok", "ok", 1), make_cell("stuck", "stuck", 2),
                                   make_cell("never_run", "ok", 1)};
    cells[1].run.watchdog_s = 0.2;
    cells[1].run.duration_s = 5;
    number(cells);
    RunOptions opts;
    opts.output_path = path;
    std::ostringstream out, err;
    run_matrix(cells, opts, out, err, fake_lookup);
    std::_Exit(3);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  const ojson doc = read_ordered(path);
  REQUIRE(doc["cells"].size() == 2);
  CHECK(doc["cells"][0]["ok"] == true);
  CHECK(doc["cells"][1]["ok"] == false);
  CHECK(doc["cells"][1]["error"] ==
        "watchdog: no progress for 0.2 s; clients waiting: 1 x CPU [1], 1 x LWLock:WALInsert [0] "
        "(the client threads did not stop; walbench exits)");
}

TEST_CASE("median and relative standard deviation", "[runner]") {
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({110, 90, 100}) == 100);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(rsd_pct({100}) == 0);
  CHECK(rsd_pct({110, 90, 100}) == Approx(10.0));  // sample stddev 10 of mean 100
  CHECK(rsd_pct({2, 4, 4, 4, 5, 5, 7, 9}) == Approx(std::sqrt(32.0 / 7) / 5 * 100));
  CHECK(rsd_pct({0, 0}) == 0);
}

TEST_CASE("latency percentiles interpolate inside a log bin", "[runner]") {
  auto h = make_latency_histogram();
  CHECK(histogram_quantile(h, 0.5) == 0);
  // 240 bins over 1e2..1e11 ns: 26.67 bins per decade, bin ratio 10^(9/240).
  const double ratio = std::pow(10.0, 9.0 / 240);
  h(1000.0);  // bin 26: [1e2 * ratio^26, 1e2 * ratio^27)
  h(1000.0);
  const double lo = 1e2 * std::pow(ratio, 26), hi = lo * ratio;
  REQUIRE(lo <= 1000.0);
  REQUIRE(hi > 1000.0);
  CHECK(histogram_quantile(h, 0.0) == Approx(lo));
  CHECK(histogram_quantile(h, 0.5) == Approx(lo * std::sqrt(ratio)));  // geometric midpoint
  CHECK(histogram_quantile(h, 1.0) == Approx(hi));
  h(50.0);   // underflow
  h(1e12);   // overflow
  CHECK(histogram_quantile(h, 0.0) == Approx(1e2));
  CHECK(histogram_quantile(h, 1.0) == Approx(1e11));
}

TEST_CASE("latency summary from the clients' sums and merged histograms", "[runner]") {
  std::vector<ClientCounters> counters(2);
  for (int k = 0; k < 90; ++k) counters[0].record_latency(1'000'000);  // 1 ms
  for (int k = 0; k < 10; ++k) counters[1].record_latency(3'000'000);  // 3 ms
  const LatencySummaryMs s = summarize_latency(counters);
  CHECK(s.count == 100);
  CHECK(s.mean == Approx(1.2));
  CHECK(s.stddev == Approx(0.6));  // sqrt(0.9*1 + 0.1*9 - 1.44) = sqrt(0.36)
  const double bin = std::pow(10.0, 9.0 / 240);
  CHECK(s.p50 == Approx(1.0).epsilon(bin - 1));
  CHECK(s.p90 == Approx(1.0).epsilon(bin - 1));
  CHECK(s.p99 == Approx(3.0).epsilon(bin - 1));
  CHECK(s.p999 == Approx(3.0).epsilon(bin - 1));
  const auto j = s.to_json();
  CHECK(j["mean"] == Approx(1.2));
  CHECK(j.contains("p999"));
}

TEST_CASE("formatting helpers", "[runner]") {
  CHECK(format_progress_line(5.0, 103575.2, 0.309, 0.071) ==
        "progress: 5.0 s, 103575.2 tps, lat 0.309 ms stddev 0.071");
  CHECK(format_eta(0) == "0m00s");
  CHECK(format_eta(42.4) == "0m42s");
  CHECK(format_eta(725) == "12m05s");
  CHECK(format_eta(3723) == "1h02m03s");
  CHECK(group_wait_events({"LWLock:WALInsert", "LWLock:WALInsert", "LWLock:WALInsert", "CPU",
                           "LWLock:WALInsert", "LWLock:WALInsert", "CPU", "LWLock:WALInsert"}) ==
        "6 x LWLock:WALInsert [0,1,2,4,5,7], 2 x CPU [3,6]");
  CHECK(group_wait_events({}) == "");
}

TEST_CASE("write_file_atomically replaces the file and names the path on failure", "[runner]") {
  TempDir dir;
  const std::string path = dir.file("f.json");
  write_file_atomically(path, "one");
  write_file_atomically(path, "two");
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  CHECK(s == "two");
  CHECK_FALSE(fs::exists(path + ".tmp"));
  CHECK_THROWS_WITH(write_file_atomically(dir.file("no/such/dir/f.json"), "x"),
                    Catch::Contains("no/such/dir/f.json"));
}

TEST_CASE("a run's result file reads back in the report", "[runner][report]") {
  std::vector<CellSpec> cells = {make_cell("a", "ok", 1), make_cell("a", "ok", 2)};
  number(cells);
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  std::ostringstream rep, rerr;
  CHECK(report_command(opts.output_path, rep, rerr) == 0);
  CHECK(contains_match(rep.str(), "~16\na_1_clients~#\na_2_clients~#\n", /*at_start=*/true));
}

}  // namespace
}  // namespace walbench
