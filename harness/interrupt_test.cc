// SIGINT/SIGTERM during `walbench run` and `walbench run --resume` (harness/interrupt.h,
// harness/resume.h), end to end: the built binary runs as a child process and gets real signals
// from this one with kill(2).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/platform/sim.h"
#include "harness/interrupt.h"
#include "tests/spawn_walbench.h"
#include "tests/temp_dir.h"


namespace walbench {
namespace {

using testing::TempDir;
using testing::slurp;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Four simulated cells: two quick ones (1 and 2 clients), then two that take about a second of
// real time each (512 and 1024 clients), so that a signal sent after the first cell's line
// finds the run busy.
constexpr const char* kSimConfig = R"({
  "platform": {"kind": "sim", "preset": "icelake_2s", "sockets": 1, "cores": 8, "smt": 1},
  "workload": {"name": "emit_message", "transactional": true, "record_size": 64},
  "wal": {"storage": "memory"},
  "run": {"duration_s": 0.05, "warmup_s": 0.002, "repetitions": 1, "seed": 7,
          "progress_interval_s": 0},
  "matrix": {
    "strategy": [{"name": "insert_locks", "label": "insert_locks_atomic",
                  "params": {"insertingat": "atomic"}}],
    "clients": [1, 2, 512, 1024]
  }
})";

// `walbench ARGS` started in `dir` with stdout and stderr to files, SIGINT and SIGTERM at their
// default dispositions (whatever this process does with them).
struct Child : testing::WalbenchProcess {
  Child(const TempDir& dir, const std::vector<std::string>& args, const std::string& tag)
      : WalbenchProcess(WALBENCH_BINARY, args, dir.path, dir.file(tag + ".out"),
                        dir.file(tag + ".err")) {}

  // Waits until `text` appears in stdout (or stderr with from_err); false after `limit`.
  bool wait_for(const std::string& text, bool from_err = false,
                std::chrono::seconds limit = std::chrono::seconds(120)) const {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if ((from_err ? err() : out()).find(text) != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // NB: reaps: only on failure
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
  // Returns once the child, sent SIGSTOP, is stopped; fails (the child reaped) if it exited.
  void wait_stopped() {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
    if (!WIFSTOPPED(status)) pid = -1;  // it exited and is reaped: nothing left to kill
    REQUIRE(WIFSTOPPED(status));
  }
  // The exit status, or -1 when it did not exit normally; how long it took.
  int wait_exit(double* seconds = nullptr) {
    const auto t0 = Clock::now();
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    if (seconds) *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

int run_to_end(const TempDir& dir, const std::vector<std::string>& args, const std::string& tag) {
  Child c(dir, args, tag);
  const int rc = c.wait_exit();
  INFO(tag << " stderr: " << c.err());
  return rc;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

ojson load_ordered(const std::string& path) { return ojson::parse(slurp(path)); }

// The cells of a file by index.
std::map<size_t, ojson> cells_by_index(const ojson& doc) {
  std::map<size_t, ojson> m;
  for (const auto& c : doc["cells"]) m[c["index"].get<size_t>()] = c;
  return m;
}

// Runs the sim config uninterrupted into full.json once per test case.
void run_uninterrupted(const TempDir& dir) {
  REQUIRE(run_to_end(dir, {"run", "sim.json", "-o", "full.json", "-j", "1", "-q"}, "full") == 0);
}

}  // namespace

TEST_CASE("the first signal stops a simulation at its next event; it continues once cleared",
          "[interrupt]") {
  SimConfig cfg;
  cfg.cores = 2;
  uint64_t loops = 0;
  bool stop = false;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    while (!stop) {
      SimPlatform::work(1000);
      ++loops;
    }
  }, "loop");
  uint64_t loops_at_signal = 0;
  {
    InterruptHandlers handlers("");
    CHECK(interrupt_signal() == 0);
    sim.at(50000, [&] {
      request_interrupt(SIGINT);  // what the handler does on a first signal
      loops_at_signal = loops;
    });
    const SimOutcome out = sim.run(10'000'000);
    CHECK(out.status == SimStatus::kInterrupted);
    CHECK(interrupt_signal() == SIGINT);
    CHECK(loops == loops_at_signal);  // not one more event after the signal
    CHECK(interrupted_error(interrupt_signal()) == "interrupted by SIGINT");
  }
  CHECK(interrupt_signal() == 0);  // cleared with the handlers
  sim.at(100000, [&] { stop = true; });
  const SimOutcome out = sim.run();
  CHECK(out.status == SimStatus::kFinished);
  CHECK(loops > loops_at_signal);
}

TEST_CASE("a run interrupted with SIGINT and resumed gives the cells of an uninterrupted sim run",
          "[cli][interrupt]") {
  TempDir dir;
  dir.write("sim.json", kSimConfig);
  run_uninterrupted(dir);
  const ojson full = load_ordered(dir.file("full.json"));
  REQUIRE(full["cells"].size() == 4);

  Child run(dir, {"run", "sim.json", "-o", "part.json", "-j", "1", "-q"}, "part");
  REQUIRE(run.wait_for("cell 1/4 "));
  REQUIRE(::kill(run.pid, SIGINT) == 0);
  double took = 0;
  CHECK(run.wait_exit(&took) == 130);
  CHECK(took < 10.0);  // the 1024-client cell alone takes longer than the stop

  // One line on stderr says how to resume; -q leaves no other walbench line there except a
  // stale-binary warning.
  const std::vector<std::string> err_lines = lines_of(run.err());
  INFO("stderr: " << run.err());
  REQUIRE(!err_lines.empty());
  const std::string& last = err_lines.back();
  CHECK(last.rfind("walbench: interrupted by SIGINT: ", 0) == 0);
  CHECK(last.find(" of 4 cells finished; resume with: walbench run --resume part.json") !=
        std::string::npos);
  for (size_t i = 0; i + 1 < err_lines.size(); ++i)
    CHECK(err_lines[i].find("interrupted") == std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("part.json.tmp")));

  // The file: the whole matrix, each cell finished (and equal to the uninterrupted run's) or
  // interrupted.
  const ojson part = load_ordered(dir.file("part.json"));
  const auto full_cells = cells_by_index(full);
  const auto part_cells = cells_by_index(part);
  REQUIRE(part_cells.size() == 4);
  size_t finished = 0, interrupted = 0;
  std::vector<size_t> not_finished;
  for (const auto& [idx, c] : part_cells) {
    INFO("cell " << idx);
    if (c.contains("interrupted")) {
      ++interrupted;
      not_finished.push_back(idx);
      CHECK(c["interrupted"] == true);
      CHECK(c["ok"] == false);
      const std::string error = c["error"].get<std::string>();
      CHECK((error == "interrupted by SIGINT" ||
             error == "not run: interrupted by SIGINT before it started"));
      CHECK(c["repetitions"].empty());  // one repetition each: none finished
    } else {
      ++finished;
      CHECK(c == full_cells.at(idx));
    }
  }
  CHECK(finished >= 1);
  CHECK(interrupted >= 1);
  CHECK(last.find(std::to_string(finished) + " of 4 cells finished") != std::string::npos);
  CHECK(part_cells.at(0).value("ok", false));  // its line came before the signal

  // Resume over the file: only the unfinished cells run; the result equals the uninterrupted
  // run cell for cell, and the kept cells are the interrupted file's, byte for byte.
  Child resume(dir, {"run", "--resume", "part.json", "-j", "1", "-q"}, "resume");
  CHECK(resume.wait_exit() == 0);
  INFO("resume stderr: " << resume.err());
  const ojson resumed = load_ordered(dir.file("part.json"));
  CHECK(resumed["context"]["resumed_from"]["cells"] == json(not_finished));
  CHECK(resumed["context"]["resumed_from"]["file"] == "part.json");
  CHECK(resumed["context"]["config"] == full["context"]["config"]);
  REQUIRE(resumed["cells"].size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("cell " << i);
    const ojson& c = resumed["cells"][i];
    CHECK(c["index"] == i);
    CHECK(c == full["cells"][i]);  // tps, latency, counters, warnings: the sim is deterministic
    if (!part["cells"][i].contains("interrupted"))
      CHECK(c.dump(1) == part["cells"][i].dump(1));
  }
  // Every cell is there: a second resume has nothing to do and leaves the file alone.
  const std::string before = slurp(dir.file("part.json"));
  Child again(dir, {"run", "--resume", "part.json", "-q"}, "again");
  CHECK(again.wait_exit() == 0);
  CHECK(again.err().find("nothing to resume") != std::string::npos);
  CHECK(slurp(dir.file("part.json")) == before);
}

TEST_CASE("SIGTERM stops a run with 143; resume with -o leaves the interrupted file alone",
          "[cli][interrupt]") {
  TempDir dir;
  dir.write("sim.json", kSimConfig);
  Child run(dir, {"run", "sim.json", "-o", "part.json", "-j", "2", "-q"}, "part");
  REQUIRE(run.wait_for("cell 1/4 "));
  REQUIRE(::kill(run.pid, SIGTERM) == 0);
  CHECK(run.wait_exit() == 143);
  INFO("stderr: " << run.err());
  CHECK(run.err().find("walbench: interrupted by SIGTERM: ") != std::string::npos);
  const std::string part = slurp(dir.file("part.json"));
  CHECK(ojson::parse(part)["cells"].size() == 4);

  run_uninterrupted(dir);
  Child resume(dir, {"run", "--resume", "part.json", "-o", "done.json", "-j", "2", "-q"}, "resume");
  CHECK(resume.wait_exit() == 0);
  CHECK(slurp(dir.file("part.json")) == part);
  const ojson done = load_ordered(dir.file("done.json"));
  const ojson full = load_ordered(dir.file("full.json"));
  CHECK(done["cells"] == full["cells"]);
}

TEST_CASE("a second signal exits at once without writing", "[cli][interrupt]") {
  TempDir dir;
  dir.write("sim.json", kSimConfig);
  Child run(dir, {"run", "sim.json", "-o", "part.json", "-j", "1", "-q"}, "part");
  REQUIRE(run.wait_for("cell 1/4 "));
  // The line comes before the file is rewritten with that cell (runner.cc: emit, then save):
  // wait for the version that holds it, the one the signals must leave alone.
  std::string before;
  for (int i = 0; i < 5000; ++i) {
    before = slurp(dir.file("part.json"));
    const ojson doc = ojson::parse(before, nullptr, false);
    if (!doc.is_discarded() && doc.contains("cells") && doc["cells"].size() >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Two different signals (two SIGINTs could merge into one pending signal), both made pending
  // while the process is stopped, so that the second reaches the handler while the first one's
  // stop is still under way however late this test is scheduled; and `before` is read while it
  // is stopped, so a cell that ended in between cannot have rewritten the file after it.
  REQUIRE(::kill(run.pid, SIGSTOP) == 0);
  run.wait_stopped();
  before = slurp(dir.file("part.json"));
  REQUIRE(::kill(run.pid, SIGINT) == 0);
  REQUIRE(::kill(run.pid, SIGTERM) == 0);
  REQUIRE(::kill(run.pid, SIGCONT) == 0);
  const int rc = run.wait_exit();
  INFO("stderr: " << run.err());
  CHECK((rc == 130 || rc == 143));
  CHECK(run.err().find("walbench: second signal: exiting at once") != std::string::npos);
  CHECK(run.err().find("resume with") == std::string::npos);
  CHECK(slurp(dir.file("part.json")) == before);  // the last complete version
  CHECK(!std::filesystem::exists(dir.file("part.json.tmp")));
}

TEST_CASE("resume refuses a file from another build or whose cells the config does not rebuild",
          "[cli][interrupt]") {
  TempDir dir;
  dir.write("sim.json", kSimConfig);
  REQUIRE(run_to_end(dir, {"run", "sim.json", "-o", "full.json", "-j", "2", "-q",
                           "--set", "matrix.clients=[1,2]"},
                     "full") == 0);
  ojson doc = load_ordered(dir.file("full.json"));
  doc["cells"][1]["ok"] = false;  // something to resume
  doc["cells"][1]["error"] = "interrupted by SIGINT";

  auto refused = [&](const ojson& edited, const std::string& name, const std::string& expect) {
    const std::string text = edited.dump(1) + "\n";
    dir.write(name, text);
    Child c(dir, {"run", "--resume", name, "-q"}, name);
    CHECK(c.wait_exit() == 2);
    const std::string err = c.err();
    INFO(name << " stderr: " << err);
    CHECK(err.rfind("walbench: error: run --resume: " + name + ": ", 0) == 0);
    CHECK(err.find(expect) != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK(slurp(dir.file(name)) == text);  // untouched
  };

  {
    ojson other = doc;
    other["context"]["git_sha"] = std::string(40, '0');
    refused(other, "other-sha.json", "written by another build (git commit differ");
  }
  {
    ojson other = doc;
    other["context"]["build"]["flags"] = "-O0";
    refused(other, "other-flags.json", "written by another build (build flags differ");
  }
  {
    ojson other = doc;
    other["context"]["git_dirty"] = !doc["context"]["git_dirty"].get<bool>();
    refused(other, "other-dirty.json", "uncommitted changes differ");
  }
  {
    ojson other = doc;
    other["cells"][0]["wal"]["wal_buffers"] = 7;
    refused(other, "other-setup.json",
            "/cells/0/wal differs from the recorded config's cell with the same label, clients "
            "and matrix values");
  }
  {
    ojson other = doc;
    other["context"]["config"]["run"]["seed"] = 8;  // config_hash no longer matches
    refused(other, "other-config.json", "does not match /context/config_hash");
  }
  {
    ojson other = doc;
    other["cells"].erase(1);  // fine: a missing cell runs again ...
    other["cells"].push_back(doc["cells"][0]);  // ... but not a second cell 0
    refused(other, "duplicate.json", "a second cell with index 0");
  }

  // The unedited file (cell 1 marked interrupted) resumes: the cell runs again, identical; so
  // does a file that lacks a cell (a run that died before writing it).
  for (const bool drop_cell_0 : {false, true}) {
    ojson resumable = doc;
    if (drop_cell_0) resumable["cells"].erase(0);
    const std::string name = drop_cell_0 ? "missing.json" : "ok.json";
    dir.write(name, resumable.dump(1) + "\n");
    Child c(dir, {"run", "--resume", name, "-q"}, name);
    CHECK(c.wait_exit() == 0);
    INFO(name << " stderr: " << c.err());
    CHECK(load_ordered(dir.file(name))["cells"] == load_ordered(dir.file("full.json"))["cells"]);
  }

  // A missing cell of a matrix with two swept keys besides clients cannot be placed for sure.
  ojson config = ojson::parse(kSimConfig);
  config["matrix"]["clients"] = {1, 2};
  config["matrix"]["workload.record_size"] = {16, 64};
  config["matrix"]["wal.wal_buffers"] = {64, 128};
  dir.write("two-keys.json", config.dump());
  REQUIRE(run_to_end(dir, {"run", "two-keys.json", "-o", "two.json", "-j", "2", "-q"}, "two") == 0);
  ojson two = load_ordered(dir.file("two.json"));
  // Its key order is not the recorded config's (sorted): a whole file resumes all the same.
  two["cells"][3]["ok"] = false;
  two["cells"][3]["interrupted"] = true;
  dir.write("two-interrupted.json", two.dump(1) + "\n");
  Child c(dir, {"run", "--resume", "two-interrupted.json", "-q"}, "two-interrupted");
  CHECK(c.wait_exit() == 0);
  INFO("stderr: " << c.err());
  CHECK(load_ordered(dir.file("two-interrupted.json"))["cells"] == load_ordered(dir.file("two.json"))["cells"]);
  two["cells"].erase(3);
  refused(two, "two-missing.json", "1 cells are missing and the matrix has several keys");

  // CLI misuse: one line, exit 2.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--resume", "ok.json", "sim.json"},
        std::vector<std::string>{"run", "--resume", "ok.json", "--set", "run.seed=2"},
        std::vector<std::string>{"run", "--resume", "sim.json"},
        std::vector<std::string>{"run"}}) {
    Child c(dir, args, "misuse");
    CHECK(c.wait_exit() == 2);
    const std::string err = c.err();
    INFO(args.back() << " stderr: " << err);
    CHECK(err.rfind("walbench: error: ", 0) == 0);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  }
}

TEST_CASE("SIGINT stops a cell on real threads within its window", "[cli][interrupt]") {
  TempDir dir;
  dir.write("threads.json", R"({
    "workload": {"name": "emit_message", "transactional": true, "record_size": 64},
    "wal": {"storage": "memory"},
    "run": {"duration_s": 60, "warmup_s": 0, "repetitions": 1, "seed": 1,
            "progress_interval_s": 0.1},
    "matrix": {"strategy": [{"name": "insert_locks", "label": "insert_locks_atomic",
                             "params": {"insertingat": "atomic"}}],
               "clients": [2, 4]}
  })");
  Child run(dir, {"run", "threads.json", "-o", "part.json"}, "part");
  REQUIRE(run.wait_for("progress: ", /*from_err=*/true));
  REQUIRE(::kill(run.pid, SIGINT) == 0);
  double took = 0;
  CHECK(run.wait_exit(&took) == 130);
  CHECK(took < 5.0);  // not the 60 s window
  INFO("stderr: " << run.err());
  CHECK(lines_of(run.err()).back() ==
        "walbench: interrupted by SIGINT: 0 of 2 cells finished; resume with: walbench run "
        "--resume part.json");
  const ojson part = load_ordered(dir.file("part.json"));
  REQUIRE(part["cells"].size() == 2);
  CHECK(part["cells"][0]["error"] == "interrupted by SIGINT");
  CHECK(part["cells"][0]["interrupted"] == true);
  CHECK(part["cells"][1]["error"] == "not run: interrupted by SIGINT before it started");
  CHECK(run.out().find("cell 1/2 insert_locks_atomic clients=2 record_size=64: interrupted by SIGINT") !=
        std::string::npos);
  CHECK(run.out().find("cell 2/2") == std::string::npos);  // no line for a cell not started
}

}  // namespace walbench
