// The walbench binary end to end: help, list, validate's error lines and the exit-code contract
// (0 ok, 1 a cell failed, 2 bad input as exactly one line on stderr).
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/temp_dir.h"

#include "strategies/strategy.h"

namespace walbench {
namespace {

using testing::TempDir;
using testing::slurp;

struct Result {
  int rc = -1;
  std::string out, err;
};

// Runs `walbench ARGS` in `cwd` (arguments are passed through the shell as written).
Result walbench(const std::string& args, const TempDir& dir, const std::string& cwd = "") {
  const auto out = dir.path / "stdout.txt";
  const auto err = dir.path / "stderr.txt";
  const std::string cmd = "cd '" + (cwd.empty() ? dir.path.string() : cwd) + "' && '" +
                          WALBENCH_BINARY + "' " + args + " >'" + out.string() + "' 2>'" +
                          err.string() + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Exit code 2 and exactly one line on stderr, "walbench: error: ...".
void check_bad_input(const Result& r) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.rfind("walbench: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(!r.err.empty());
  CHECK(r.err.back() == '\n');
}

}  // namespace

TEST_CASE("walbench --help teaches every subcommand", "[cli]") {
  TempDir dir;
  const Result r = walbench("--help", dir);
  CHECK(r.rc == 0);
  for (const char* sub : {"run", "list", "validate", "report", "compare"}) {
    INFO(sub);
    CHECK(r.out.find(std::string("  ") + sub + " ") != std::string::npos);  // the listing
    CHECK(r.out.find(std::string("walbench ") + sub) != std::string::npos);  // an example
  }
  CHECK(r.out.find("configs/README.md") != std::string::npos);
  CHECK(r.err.empty());

  const Result v = walbench("--version", dir);
  CHECK(v.rc == 0);
  CHECK(v.out.rfind("walbench ", 0) == 0);

  const Result sub = walbench("run --help", dir);
  CHECK(sub.rc == 0);
  CHECK(sub.out.find("--set") != std::string::npos);
}

TEST_CASE("walbench list shows every strategy and parameter", "[cli]") {
  TempDir dir;
  const Result r = walbench("list", dir);
  REQUIRE(r.rc == 0);
  for (const auto& s : strategies()) {
    INFO(s.name);
    CHECK(r.out.find("  " + s.name + "\n") != std::string::npos);
    for (const auto& p : s.params) {
      INFO(p.name);
      CHECK(r.out.find(p.name) != std::string::npos);
    }
  }
  for (const char* w : {"emit_message", "record_size", "transactional", "client_overhead_us",
                        "threads"})
    CHECK(r.out.find(w) != std::string::npos);

  const Result only = walbench("list strategies", dir);
  CHECK(only.rc == 0);
  CHECK(only.out.find("WORKLOADS") == std::string::npos);
  check_bad_input(walbench("list stratgies", dir));
}

TEST_CASE("walbench validate: bad configs give one line on stderr and exit code 2", "[cli]") {
  TempDir dir;
  SECTION("misspelled key") {
    dir.write("typo.json", R"({"strategy": "ideal", "run": {"duraton_s": 2}})");
    const Result r = walbench("validate typo.json", dir);
    check_bad_input(r);
    CHECK(r.err.find("typo.json: /run/duraton_s: unknown key") != std::string::npos);
    CHECK(r.err.find("did you mean \"duration_s\"") != std::string::npos);
    CHECK(r.out.empty());
  }
  SECTION("negative client count") {
    dir.write("neg.json", R"({"strategy": "ideal", "matrix": {"clients": [1, 2, -8]}})");
    const Result r = walbench("validate neg.json", dir);
    check_bad_input(r);
    CHECK(r.err.find("neg.json: /matrix/clients/2: -8 is out of range; expected an integer in "
                     "1..65535") != std::string::npos);
  }
  SECTION("syntax error") {
    dir.write("syntax.json", "{\n  \"strategy\": \"ideal\"\n  \"run\": {}\n}\n");
    const Result r = walbench("validate syntax.json", dir);
    check_bad_input(r);
    CHECK(r.err.find("syntax.json:3:7: syntax error") != std::string::npos);  // end of "run"
  }
  SECTION("missing file") {
    check_bad_input(walbench("validate nowhere.json", dir));
  }
  SECTION("a bad --set value names the --set") {
    dir.write("ok.json", R"({"strategy": "ideal"})");
    const Result r = walbench("validate ok.json --set run.repetitions=0", dir);
    check_bad_input(r);
    CHECK(r.err.find("--set run.repetitions=0: /run/repetitions:") != std::string::npos);
  }
}

TEST_CASE("walbench validate: a good config", "[cli]") {
  TempDir dir;
  dir.write("good.json", R"({"matrix": {"strategy": ["single_lock", "ideal"], "clients": [1, 2, 4],
                                        "workload.record_size": [16, 1024]}})");
  const Result r = walbench("validate good.json", dir);
  CHECK(r.rc == 0);
  CHECK(r.out.rfind(
            "good.json: ok, 12 cells (2 strategies x 3 clients x 2 workload.record_size)", 0) ==
        0);
  CHECK(r.err.empty());
}

TEST_CASE("walbench: CLI misuse is bad input", "[cli]") {
  TempDir dir;
  check_bad_input(walbench("", dir));
  check_bad_input(walbench("frobnicate", dir));
  check_bad_input(walbench("run", dir));
  check_bad_input(walbench("run --no-such-flag x.json", dir));
  check_bad_input(walbench("compare only-one.json", dir));
  check_bad_input(walbench("report missing-result.json", dir));
  dir.write("ok.json", R"({"strategy": "ideal"})");
  check_bad_input(walbench("run ok.json --set run.duraton_s=1", dir));
  check_bad_input(walbench("run ok.json -o no/such/dir/out.json", dir));
}

TEST_CASE("walbench run: default output file, exit code 0, report reads it", "[cli]") {
  TempDir dir;
  dir.write("tiny.json", R"({"strategy": "ideal", "workload": {"transactional": false},
      "run": {"duration_s": 0.05, "warmup_s": 0, "progress_interval_s": 0, "watchdog_s": 5}})");
  const Result r = walbench("run tiny.json --quiet", dir);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.rc == 0);
  std::string result;
  for (const auto& e : std::filesystem::directory_iterator(dir.path / "results"))
    if (e.path().filename().string().find("-tiny.json") != std::string::npos)
      result = e.path().string();
  REQUIRE(!result.empty());
  // results/<YYYY-MM-DD>-<host>-tiny.json
  const std::string name = std::filesystem::path(result).filename().string();
  CHECK(name.size() > 11);
  CHECK(name[4] == '-');
  CHECK(name[7] == '-');
  CHECK(name[10] == '-');
  const Result rep = walbench("report '" + result + "'", dir);
  CHECK(rep.rc == 0);
  CHECK(rep.out.find("ideal") != std::string::npos);
}

TEST_CASE("walbench run --top-lines: the hottest lines, named, and the same numbers", "[cli]") {
  TempDir dir;
  dir.write("sim.json", R"({"strategy": "insert_locks", "platform": {"kind": "sim", "cores": 4},
      "workload": {"name": "emit_message", "transactional": true},
      "clog": {"procarray": "group_clear", "snapshot": "dense"},
      "run": {"duration_s": 0.002, "warmup_s": 0.001, "progress_interval_s": 0},
      "matrix": {"clients": [8, 4]}})");
  const Result plain = walbench("run sim.json -q -o plain.json", dir);
  const Result hot = walbench("run sim.json -q --top-lines 4 -o hot.json", dir);
  INFO("stderr: " << plain.err << hot.err);
  REQUIRE(plain.rc == 0);
  REQUIRE(hot.rc == 0);
  const auto rep = [&](const char* file) {
    return nlohmann::json::parse(slurp(dir.path / file))["cells"][0]["repetitions"][0];
  };
  const nlohmann::json a = rep("plain.json"), b = rep("hot.json");
  CHECK(a["tps"] == b["tps"]);
  CHECK(a["platform"]["sim"] == b["platform"]["sim"]);
  CHECK(!a["platform"].contains("top_lines"));
  const nlohmann::json& lines = b["platform"]["top_lines"];
  REQUIRE(lines.is_array());
  REQUIRE(lines.size() == 4);
  bool named_lock = false;
  for (const auto& l : lines) {
    CHECK(l["line"].get<std::string>().rfind("0x", 0) == 0);
    CHECK(l.contains("wait_us_per_txn"));
    CHECK(l["load_misses"].get<uint64_t>() <= l["loads"].get<uint64_t>());
    if (l["names"].is_string() && l["names"].get<std::string>().find("LWLock:") != std::string::npos)
      named_lock = true;
  }
  CHECK(named_lock);
  CHECK(lines[0]["wait_ms"].get<double>() >= lines[1]["wait_ms"].get<double>());
  CHECK(nlohmann::json::parse(slurp(dir.path / "hot.json"))["context"]["top_lines"] == 4);
  // --resume applies the recorded option to the cells it runs: cell 1 made interrupted.
  nlohmann::json part = nlohmann::json::parse(slurp(dir.path / "hot.json"));
  nlohmann::json& cut = part["cells"][1];
  cut["interrupted"] = true;
  cut["ok"] = false;
  cut["error"] = "interrupted by SIGINT";
  cut["repetitions"] = nlohmann::json::array();
  cut["summary"] = nullptr;
  cut["warnings"] = nlohmann::json::array();
  dir.write("part.json", part.dump());
  const Result resumed = walbench("run --resume part.json -q", dir);
  INFO("resume stderr: " << resumed.err);
  REQUIRE(resumed.rc == 0);
  const nlohmann::json done = nlohmann::json::parse(slurp(dir.path / "part.json"));
  CHECK(done["cells"][1]["repetitions"][0]["platform"]["top_lines"].size() == 4);
  check_bad_input(walbench("run --resume part.json --top-lines 2", dir));
  part["context"]["top_lines"] = "many";  // a hand-edited file: a clear refusal, not a crash
  dir.write("bad.json", part.dump());
  check_bad_input(walbench("run --resume bad.json", dir));
  // Only simulated cells have lines to count.
  dir.write("threads.json", R"({"strategy": "ideal", "workload": {"transactional": false},
      "run": {"duration_s": 0.05, "warmup_s": 0, "progress_interval_s": 0, "watchdog_s": 5}})");
  check_bad_input(walbench("run threads.json --top-lines 3 -o t.json", dir));
  check_bad_input(walbench("run sim.json --top-lines 0 -o z.json", dir));
}

}  // namespace walbench
