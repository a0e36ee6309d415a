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
#include <mutex>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "harness/report.h"
#include "harness/cell_json.h"
#include "harness/repetition.h"

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
//                   LWLock:wal_insert, odd ones on CPU; they return when stop is set
//   "stuck"         like stall, but the clients never return (forked test only)
//   "check_file"    the factory checks that strategy_params.check_file holds
//                   strategy_params.expect_cells finished cells (the per-cell rewrite)
//   "decay"         transactions take 100 us in the first half of the run, 400 us after
//   "slow"          one transaction per 50 ms
// Every transaction takes 2 "WALInsert" acquisitions and 3 "writes" in model_stats().
std::atomic<bool> g_never{false};  // never set: what "stuck" clients wait for
// Which (label, seed) repetitions were built, in order; and how many "sim" cells are running
// at once and the most a real-thread cell ever saw running beside it.
std::mutex g_log_mu;
std::vector<std::string> g_built;  // protected by g_log_mu
std::atomic<int> g_sim_running{0};
std::atomic<int> g_sim_beside_threads{0};

class FakeRun : public CellRun {
 public:
  FakeRun(const CellSpec& cell, uint64_t seed)
      : mode_(cell.strategy_params.value("mode", "ok")),
        seed_(seed),
        sim_(cell.platform.kind == "sim"),
        run_s_(cell.run.warmup_s + cell.run.duration_s),
        events_(new std::atomic<uint32_t>[cell.clients]),
        n_(cell.clients) {
    for (uint32_t i = 0; i < n_; ++i) events_[i].store(0);
    if (sim_) ++g_sim_running;
    else g_sim_beside_threads = std::max(g_sim_beside_threads.load(), g_sim_running.load());
  }
  ~FakeRun() override {
    if (sim_) --g_sim_running;
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
      const bool in_window = ctl.measuring.load(std::memory_order_acquire);
      const auto t0 = std::chrono::steady_clock::now();
      events_[i].store(static_cast<uint32_t>(WaitEvent::kWalInsert));
      std::this_thread::sleep_for(std::chrono::microseconds(txn_us(t0)));
      events_[i].store(0);
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - t0);
      ctl.counters[i].count_txn(100, static_cast<uint64_t>(ns.count()),
                                ctl.measuring.load(std::memory_order_acquire));
      if (in_window) window_txns_.fetch_add(1);
      ++k;
      txns_.fetch_add(1);
    }
  }
  int64_t txn_us(std::chrono::steady_clock::time_point now) {
    if (mode_ == "slow") return 50'000;
    if (mode_ != "decay") return 200;
    return std::chrono::duration<double>(now - start_).count() < run_s_ / 2 ? 100 : 400;
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
  nlohmann::json lock_stats() const override {
    return {{"LWLock:WALInsert", {{"acquisitions", 2 * window_txns_.load()}, {"wait_ms", 0.5 * window_txns_.load()}}}};
  }
  WindowTotals window_totals() const override {
    const uint64_t t = window_txns_.load();
    return {t, 2 * t, 100 * t, t};
  }
  nlohmann::json model_stats() const override {
    return {{"writes", 3 * txns_.load()}, {"streams", 1}, {"seed", seed_}, {"finished", finished_}};
  }

 private:
  std::string mode_;
  uint64_t seed_;
  bool sim_;
  double run_s_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::unique_ptr<std::atomic<uint32_t>[]> events_;
  uint32_t n_;
  std::atomic<uint64_t> txns_{0};
  std::atomic<uint64_t> window_txns_{0};
  bool finished_ = false;
};

std::unique_ptr<CellRun> make_fake(const CellSpec& cell, uint64_t seed) {
  const std::string mode = cell.strategy_params.value("mode", "ok");
  {
    std::lock_guard<std::mutex> g(g_log_mu);
    g_built.push_back(cell.label + std::to_string(seed));
  }
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
  // The fake cells run on real threads: their throughput may drift past 10% on a loaded machine,
  // and this test pins the file's layout, not the drift warning (tested with deterministic cells).
  for (auto& c : cells) c.run.trend_warn_pct = 1e6;
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
  CHECK(ctx["schema_version"] == 2);
  CHECK(ctx["walbench_version"] == "0.1.0");
  CHECK(ctx["config_files"] == ojson::array({"configs/fake.json"}));
  CHECK(ctx["config_hash"] == "0123abcd");
  CHECK(ctx["overrides"] == ojson::array({"run.seed=7"}));
  CHECK(ctx["seed"] == 7);
  CHECK(ctx["config"]["run"]["duration_s"] == 0.2);
  for (const char* k : {"date", "host", "cpu_model", "kernel", "git_sha", "command_line"})
    CHECK(ctx[k].is_string());
  CHECK(ctx["git_dirty"].is_boolean());
  CHECK(ctx["git_diff_hash"].is_null() == !ctx["git_dirty"].get<bool>());
  for (const char* k : {"type", "compiler", "flags"}) CHECK(ctx["build"][k].is_string());
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
  CHECK(b["clog"]["strategy"] == "clog_exclusive");
  CHECK(nlohmann::json(b["platform"]) ==
        nlohmann::json{{"kind", "threads"}, {"atomics", "native"}, {"spinlocks", "native"}});
  CHECK(b["warnings"] == ojson::array());
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
    CHECK(rep["wait_events"]["LWLock:wal_insert"].get<uint64_t>() > 0);
    // Window counters and the per-transaction figures derived from them.
    const uint64_t wtx = rep["window"]["txns"].get<uint64_t>();
    CHECK(wtx > 0);
    CHECK(rep["lock_stats"]["LWLock:WALInsert"]["acquisitions"].get<uint64_t>() == 2 * wtx);
    CHECK(rep["per_txn"]["locks"]["LWLock:WALInsert"]["acquisitions"] == 2.0);
    CHECK(rep["per_txn"]["locks"]["LWLock:WALInsert"]["wait_us"] == 500.0);
    CHECK(rep["per_txn"]["wal_bytes"] == 100.0);
    CHECK(rep["per_txn"]["records"] == 2.0);
    // model_stats() is cumulative; the file holds its difference over the window, which counts
    // 3 writes per transaction of the window (give or take the transactions in flight at its
    // two edges), and keeps a gauge's value.
    CHECK(rep["model"]["streams"] == 1);
    CHECK(rep["model"]["seed"] == 0);  // a count: 7 + r at both edges
    CHECK(rep["per_txn"]["model"]["writes"].get<double>() == Approx(3.0).margin(3.0 * 2 * 3 / txns));
    CHECK(rep["verify"]["ok"] == true);
    tps.push_back(rep["tps"].get<double>());
  }
  const ojson& s = b["summary"];
  CHECK(s["repetitions"] == 2);
  const double mean = (tps[0] + tps[1]) / 2;
  CHECK(s["tps_median"].get<double>() == Approx(mean));  // the median of two is their mean
  CHECK(s["tps_min"].get<double>() == std::min(tps[0], tps[1]));
  // Sample stddev of two values is |a - b| / sqrt(2).
  CHECK(s["tps_rsd_pct"].get<double>() ==
        Approx(std::fabs(tps[0] - tps[1]) / std::sqrt(2.0) / mean * 100));
  CHECK(s["tps_ci"].is_null());  // fewer than 3 repetitions
  CHECK(s["per_txn"]["locks"]["LWLock:WALInsert"]["acquisitions"] == 2.0);
  // One repetition: no spread at all.
  CHECK(doc["cells"][0]["summary"]["tps_rsd_pct"].is_null());

  // One line per cell on `out`.
  const std::string o = out.str();
  CHECK(contains_match(o, "cell 1/2 a clients=2 record_size=16: # tps (rsd n/a) verify ok  [eta #m#s]\n"));
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
  // The transactions' own latency: each sleeps 200 us (and the sleep may overshoot).
  CHECK(progress[0]["lat_ms"].get<double>() >= 0.2);
  CHECK(progress[0]["lat_ms"].get<double>() < 5);
  CHECK(progress[0]["stddev_ms"].get<double>() >= 0);

  std::ostringstream out2, err2;
  opts.quiet = true;
  REQUIRE(run_matrix(cells, opts, out2, err2, fake_lookup) == 0);
  CHECK(err2.str().empty());
}

// The watchdog's message up to its list of waiters. The seconds are measured: 0.2 on an idle
// machine, more on a loaded one, 1.0 and up when the monitor thread wakes late.
const std::string kNoProgressFor = "watchdog: no progress for (0\\.[2-9]|[1-9][0-9]*\\.[0-9]) s; ";

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
  // The stalled cell alone would have run 5 s; the watchdog ends it after 0.2 s and the next
  // cell takes 0.25 s: well under 5 s in all, even on a loaded machine.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(4500));
  const ojson doc = read_ordered(opts.output_path);
  CHECK(doc["cells"][0]["ok"] == false);
  CHECK_THAT(doc["cells"][0]["error"].get<std::string>(),
             Catch::Matches(kNoProgressFor + "clients waiting: 2 x LWLock:wal_insert "
                            "\\[0,2\\], 1 x CPU \\[1\\]"));
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
  CHECK_THAT(doc["cells"][1]["error"].get<std::string>(),
             Catch::Matches(kNoProgressFor + "clients waiting: 1 x CPU \\[1\\], "
                            "1 x LWLock:wal_insert \\[0\\] \\(the client threads did not stop; walbench exits\\)"));
}

TEST_CASE("median and relative standard deviation", "[runner]") {
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({110, 90, 100}) == 100);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK_FALSE(rsd_pct({100}).has_value());
  CHECK(*rsd_pct({110, 90, 100}) == Approx(10.0));  // sample stddev 10 of mean 100
  CHECK(*rsd_pct({2, 4, 4, 4, 5, 5, 7, 9}) == Approx(std::sqrt(32.0 / 7) / 5 * 100));
  CHECK_FALSE(rsd_pct({0, 0}).has_value());
}

TEST_CASE("the confidence interval of a median from order statistics", "[runner]") {
  CHECK_FALSE(median_ci({1, 2}).has_value());
  // n = 3..5: no interval reaches 95%; [min, max] with its coverage 1 - 2 / 2^n.
  auto ci = median_ci({30, 10, 20});
  REQUIRE(ci);
  CHECK(ci->lo == 10);
  CHECK(ci->hi == 30);
  CHECK(ci->level == 0.75);
  CHECK(median_ci({5, 1, 4, 2, 3})->level == 0.9375);
  // n = 6: [min, max] covers with 1 - 2/64 = 0.96875; [x2, x5] only 1 - 14/64.
  ci = median_ci({6, 5, 4, 3, 2, 1});
  CHECK(ci->lo == 1);
  CHECK(ci->hi == 6);
  CHECK(ci->level == 0.96875);
  // n = 10: [x2, x9] covers with 1 - 2 * 11/1024; [x3, x8] with 1 - 2 * 56/1024 < 0.95.
  ci = median_ci({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  CHECK(ci->lo == 2);
  CHECK(ci->hi == 9);
  CHECK(ci->level == Approx(1 - 22.0 / 1024));
}

TEST_CASE("counter snapshots are differenced member by member, gauges kept", "[runner]") {
  const nlohmann::json start = {{"writes", 10u}, {"streams", 1u}, {"clog", {{"page_hits", 5u}, {"strategy", "x"}}},
                                {"wait_ms", 1.5}};
  const nlohmann::json end = {{"writes", 25u}, {"streams", 1u}, {"clog", {{"page_hits", 9u}, {"strategy", "x"}}},
                              {"wait_ms", 4.0}, {"fsyncs", 3u}};
  const nlohmann::json d = counter_delta(end, start);
  CHECK(d["writes"] == 15u);
  CHECK(d["streams"] == 1u);        // a level, not a count
  CHECK(d["clog"]["page_hits"] == 4u);
  CHECK(d["clog"]["strategy"] == "x");
  CHECK(d["wait_ms"] == 2.5);
  CHECK(d["fsyncs"] == 3u);         // missing at the start: counted from 0
  for (const char* gauge : {"buffers", "pages", "largest_group", "streams", "strategy", "ring_pages", "clogs"})
    CHECK(is_gauge_key(gauge));
  CHECK_FALSE(is_gauge_key("writes"));
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
  CHECK(format_progress_line(1.0, 0, std::nan(""), std::nan("")) == "progress: 1.0 s, 0.0 tps, lat n/a");
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

namespace walbench {
namespace {

TEST_CASE("cells say when they cannot be trusted", "[runner]") {
  std::vector<CellSpec> cells = {make_cell("slow", "slow", 2), make_cell("decay", "decay", 1),
                                 make_cell("steady", "ok", 1)};
  for (auto& c : cells) {
    c.run.progress_interval_s = 0.05;
    c.run.warmup_s = 0.1;
    c.run.duration_s = 0.3;
  }
  number(cells);
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  const ojson doc = read_ordered(opts.output_path);
  // slow: about 10 transactions per client in 0.3 s, under run.min_txns_per_client = 10 + ...
  const ojson& slow = doc["cells"][0]["warnings"];
  REQUIRE(slow.size() >= 1);
  CHECK(contains_match(slow[0].get<std::string>(), "# transactions per client in the window (under run.min_txns_per_client = 10)"));
  // decay: transactions take 4x longer in the second half: the window drifts.
  bool drift = false;
  for (const auto& w : doc["cells"][1]["warnings"])
    drift |= w.get<std::string>().find("throughput drifts inside the window") != std::string::npos;
  CHECK(drift);
  CHECK(out.str().find("\n  warning: throughput drifts inside the window") != std::string::npos);
}

TEST_CASE("run.interleave runs repetitions round-robin across cells", "[runner]") {
  std::vector<CellSpec> cells = {make_cell("a", "ok", 1), make_cell("b", "ok", 1)};
  for (auto& c : cells) {
    c.run.repetitions = 2;
    c.run.interleave = true;
    c.run.duration_s = 0.05;
    c.run.warmup_s = 0;
  }
  number(cells);
  {
    std::lock_guard<std::mutex> g(g_log_mu);
    g_built.clear();
  }
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  {
    std::lock_guard<std::mutex> g(g_log_mu);
    CHECK(g_built == std::vector<std::string>{"a7", "b7", "a8", "b8"});
  }
  const ojson doc = read_ordered(opts.output_path);
  REQUIRE(doc["cells"].size() == 2);
  CHECK(doc["cells"][0]["label"] == "a");
  CHECK(doc["cells"][0]["repetitions"].size() == 2);
  // Without it, back to back.
  for (auto& c : cells) c.run.interleave = false;
  {
    std::lock_guard<std::mutex> g(g_log_mu);
    g_built.clear();
  }
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  std::lock_guard<std::mutex> g(g_log_mu);
  CHECK(g_built == std::vector<std::string>{"a7", "a8", "b7", "b8"});
}

TEST_CASE("with -j a real-thread cell never runs beside a simulated one", "[runner]") {
  std::vector<CellSpec> cells = {make_cell("s1", "ok", 1), make_cell("t", "ok", 1),
                                 make_cell("s2", "ok", 1), make_cell("s3", "ok", 1)};
  for (auto& c : cells) {
    c.run.duration_s = 0.15;
    c.run.warmup_s = 0;
  }
  cells[0].platform.kind = cells[2].platform.kind = cells[3].platform.kind = "sim";
  number(cells);
  g_sim_beside_threads = 0;
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  opts.jobs = 2;
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err, fake_lookup) == 0);
  CHECK(g_sim_beside_threads.load() == 0);
  const ojson doc = read_ordered(opts.output_path);
  REQUIRE(doc["cells"].size() == 4);
  for (size_t k = 0; k < 4; ++k) CHECK(doc["cells"][k]["index"] == k);  // matrix order
}

}  // namespace
}  // namespace walbench

namespace walbench {
namespace {

TEST_CASE("lengthened_window: in proportion to the shortfall, capped, off by default", "[runner]") {
  RunSpec rs;
  rs.duration_s = 0.25;
  rs.warmup_s = 0.05;
  rs.min_txns_per_client = 10;
  CHECK_FALSE(lengthened_window(rs, 0.3).has_value());  // max_window_s 0: never
  rs.max_window_s = 10;
  CHECK_FALSE(lengthened_window(rs, 10).has_value());   // enough
  const auto a = lengthened_window(rs, 4);              // x 1.25 * 10 / 4 = x 3.125
  REQUIRE(a.has_value());
  CHECK(a->duration_s == Approx(0.782));                // 0.78125 rounded up to 1 ms
  CHECK(a->warmup_s == Approx(0.157));                  // 0.05 x 3.128 rounded up
  const auto b = lengthened_window(rs, 0.3);            // x 41.7: past the cap
  REQUIRE(b.has_value());
  CHECK(b->duration_s == Approx(10));
  CHECK(b->warmup_s == Approx(2));
  const auto none = lengthened_window(rs, 0);           // nobody finished: x 250, capped
  REQUIRE(none.has_value());
  CHECK(none->duration_s == Approx(10));
  rs.max_window_s = 0.2505;                             // the cap holds after the rounding up
  const auto c = lengthened_window(rs, 9.9);
  REQUIRE(c.has_value());
  CHECK(c->duration_s == Approx(0.2505));
  rs.max_window_s = 10;
  rs.duration_s = 10;
  CHECK_FALSE(lengthened_window(rs, 0.3).has_value());  // already at the cap
  rs.duration_s = 0.25;
  rs.min_txns_per_client = 0;
  CHECK_FALSE(lengthened_window(rs, 0.3).has_value());  // no minimum asked
}

// 8 clients committing through a 1 ms fsync on a 4-core simulated machine finish a few
// transactions each in 5 ms: too few for run.min_txns_per_client = 10.
CellSpec short_window_sim_cell(const std::string& label, double max_window_s, uint32_t reps = 1) {
  CellSpec c;
  c.label = label;
  c.strategy = "single_lock";
  c.clients = 8;
  c.platform.kind = "sim";
  c.platform.sim = {{"cores", 4}, {"fsync_ns", 1000000}};
  c.run.duration_s = 0.005;
  c.run.warmup_s = 0.002;
  c.run.repetitions = reps;
  c.run.seed = 3;
  c.run.progress_interval_s = 0;
  c.run.max_window_s = max_window_s;
  c.matrix_values = {{"clients", 8}, {"strategy", label}};
  return c;
}

TEST_CASE("sim: a window too short for its cell is run again longer (run.max_window_s)", "[runner]") {
  std::vector<CellSpec> cells = {short_window_sim_cell("off", 0), short_window_sim_cell("on", 0.2),
                                 short_window_sim_cell("at_cap", 0.005),
                                 short_window_sim_cell("capped", 0.008),
                                 short_window_sim_cell("two_reps", 0.2, 2)};
  number(cells);
  TempDir dir;
  RunOptions opts;
  opts.output_path = dir.file("r.json");
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, opts, out, err) == 0);
  const ojson doc = read_ordered(opts.output_path);
  auto warnings = [&](size_t i) {
    std::string all;
    for (const auto& w : doc["cells"][i]["warnings"]) all += w.get<std::string>() + "\n";
    return all;
  };
  const ojson& off = doc["cells"][0]["repetitions"][0];
  const double off_per_client = off["txns"].get<double>() / 8;
  REQUIRE(off_per_client < 10);
  CHECK_FALSE(off.contains("window_lengthened"));
  CHECK(off["elapsed_s"].get<double>() == Approx(0.005));
  CHECK(warnings(0).find("too few to measure; lengthen run.duration_s or let the simulator do "
                         "it (run.max_window_s)") != std::string::npos);

  const ojson& on = doc["cells"][1]["repetitions"][0];
  REQUIRE(on.contains("window_lengthened"));
  const ojson& lw = on["window_lengthened"];
  CHECK(lw["from_duration_s"].get<double>() == Approx(0.005));
  CHECK(lw["from_warmup_s"].get<double>() == Approx(0.002));
  CHECK(lw["from_transactions_per_client"].get<double>() == Approx(off_per_client));
  CHECK(lw["steps"].get<int>() >= 1);
  CHECK(lw["duration_s"].get<double>() > 0.005);
  CHECK(lw["duration_s"].get<double>() <= 0.2);
  CHECK(lw["warmup_s"].get<double>() > 0.002);
  CHECK(on["elapsed_s"].get<double>() == Approx(lw["duration_s"].get<double>()));
  CHECK(on["txns"].get<double>() / 8 >= 10);
  CHECK(warnings(1).find("too few") == std::string::npos);
  CHECK(doc["cells"][1]["run"]["max_window_s"].get<double>() == Approx(0.2));

  CHECK_FALSE(doc["cells"][2]["repetitions"][0].contains("window_lengthened"));
  CHECK(warnings(2).find("the window is already run.max_window_s = 0.005 s or longer") !=
        std::string::npos);

  // Lengthened to the cap and still short: the warning stays and says so.
  const ojson& capped = doc["cells"][3]["repetitions"][0];
  REQUIRE(capped.contains("window_lengthened"));
  CHECK(capped["window_lengthened"]["duration_s"].get<double>() == Approx(0.008));
  REQUIRE(capped["txns"].get<double>() / 8 < 10);
  CHECK(warnings(3).find("too few to measure even in a window lengthened to 0.008 s "
                         "(run.max_window_s)") != std::string::npos);

  // One window per cell: the second repetition runs with the first one's, not deciding again.
  const ojson& reps = doc["cells"][4]["repetitions"];
  REQUIRE(reps.size() == 2);
  CHECK(reps[0]["window_lengthened"] == on["window_lengthened"]);
  CHECK(reps[1]["window_lengthened"] == reps[0]["window_lengthened"]);
  CHECK(reps[1]["elapsed_s"].get<double>() == Approx(reps[0]["elapsed_s"].get<double>()));
  CHECK(reps[1]["seed"].get<int>() == 4);
}

TEST_CASE("the warnings read a lengthened repetition's own warm-up and window", "[runner]") {
  CellSpec cell = short_window_sim_cell("w", 10);
  cell.run.warmup_s = 0.05;
  cell.run.duration_s = 0.25;
  // Ran with a 1 s warm-up and a 4 s window: progress every 0.25 s (20 intervals), 10 tps in
  // the warm-up, then 100, and 50 in the last interval.
  nlohmann::json rep = {{"txns", 8 * 50},
                        {"clients_without_txn", 0},
                        {"window_lengthened", {{"warmup_s", 1.0}, {"duration_s", 4.0}}}};
  rep["progress"] = nlohmann::json::array();
  for (int k = 1; k <= 20; ++k) {
    const double t = 0.25 * k;
    rep["progress"].push_back({{"t", t}, {"tps", t <= 1.0 ? 10.0 : k == 20 ? 50.0 : 100.0}});
  }
  const std::vector<std::string> w = cell_warnings(cell, nlohmann::json::array({rep}));
  bool drift = false, late = false;
  for (const auto& s : w) {
    drift |= s.find("throughput drifts inside the window: first interval 100 tps, last 50 tps") !=
             std::string::npos;
    late |= s.find("past the warm-up") != std::string::npos;
  }
  CHECK(drift);       // the config's 0.25 s window holds one interval: no trend to see there
  CHECK_FALSE(late);  // the median was reached at 1 s, the lengthened warm-up's end
}

}  // namespace
}  // namespace walbench
