// Lock-wait traces (harness/trace.h): the file's structure from synthetic events, and
// `walbench run --trace` end to end on a small simulated cell (Perfetto-readable JSON, nested
// slices, counters back to 0, the same cell with and without tracing).
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/proc.h"
#include "harness/trace.h"
#include "tests/temp_dir.h"

namespace walbench {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::slurp;

struct Result {
  int rc = -1;
  std::string out, err;
};

Result walbench(const std::string& args, const TempDir& dir) {
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + WALBENCH_BINARY + "' " + args +
                          " >'" + dir.file("stdout.txt") + "' 2>'" + dir.file("stderr.txt") + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir.file("stdout.txt"));
  r.err = slurp(dir.file("stderr.txt"));
  return r;
}

// The structural checks every trace must pass; returns the last counter args per counter name.
std::map<std::string, json> check_trace_structure(const json& doc) {
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::vector<std::string>> open;  // (pid, tid) -> B names
  std::map<std::pair<int, int>, double> last_ts;
  std::map<std::string, json> last_counter;
  for (const json& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M") continue;
    const std::pair<int, int> track{e.at("pid").get<int>(), e.at("tid").get<int>()};
    const double ts = e.at("ts").get<double>();
    INFO("event " << e.dump());
    if (ph != "C") {  // counters are per process: their own order is checked by value below
      if (last_ts.count(track)) CHECK(ts >= last_ts[track]);  // time order per track
      last_ts[track] = ts;
    }
    if (ph == "B") open[track].push_back(e.at("name"));
    if (ph == "E") {
      REQUIRE(!open[track].empty());  // every E closes a B of the same track
      CHECK(open[track].back() == e.at("name").get<std::string>());
      open[track].pop_back();
    }
    if (ph == "C") last_counter[e.at("name")] = e.at("args");
  }
  for (const auto& [track, names] : open) {
    INFO("track pid " << track.first << " tid " << track.second);
    CHECK(names.empty());  // every B has its E
  }
  return last_counter;
}

TEST_CASE("trace file: nested slices, a non-LIFO release, lock counters", "[trace]") {
  int lock_l = 0, lock_m = 0;  // two lock identities
  const uint16_t tr = static_cast<uint16_t>(WaitEvent::kWalInsert);
  auto ev = [&](uint64_t ts, const void* lock, TraceKind k, TraceMode m = TraceMode::kExclusive,
                uint32_t flag = 0) { return TraceEvent{ts, lock, k, m, tr, flag}; };
  std::vector<TraceTrackInput> tracks(2);
  tracks[0].name = "client 0";
  tracks[0].events = {ev(10, &lock_l, TraceKind::kHold),
                      ev(20, &lock_m, TraceKind::kLockWait),
                      ev(30, &lock_l, TraceKind::kHoldEnd),  // released while waiting for M
                      ev(40, &lock_m, TraceKind::kLockWaitEnd, TraceMode::kExclusive, 1),
                      ev(40, &lock_m, TraceKind::kHold),
                      ev(50, &lock_m, TraceKind::kHoldEnd)};
  tracks[1].name = "client 1";
  tracks[1].open_at_start = {ClientTrace::Open{TraceKind::kLockWait, TraceMode::kExclusive, tr, &lock_l}};
  tracks[1].events = {ev(31, &lock_l, TraceKind::kLockWaitEnd, TraceMode::kExclusive, 1),
                      ev(31, &lock_l, TraceKind::kHold),
                      ev(45, &lock_l, TraceKind::kHoldEnd)};
  uint64_t events = 0;
  const std::string text = build_chrome_trace(tracks, 0, 5, 1000, json{{"walbench", {{"x", 1}}}}, &events);
  const json doc = json::parse(text);
  CHECK(doc["otherData"]["walbench"]["x"] == 1);
  const auto last = check_trace_structure(doc);
  CHECK(events > 0);

  // Names: two locks of one tranche are numbered in address order.
  const std::string name_l = std::less<const void*>()(&lock_l, &lock_m) ? "LWLock:wal_insert #0"
                                                                         : "LWLock:wal_insert #1";
  // Lock L: client 1 waited from before the window; holders and queue as they happened.
  std::vector<std::pair<double, json>> l_counter;
  std::vector<std::string> client0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == name_l) l_counter.emplace_back(e["ts"].get<double>(), e["args"]);
    if (e["pid"] == 1 && e["tid"] == 1 && (e["ph"] == "B" || e["ph"] == "E"))
      client0.push_back(e["ph"].get<std::string>() + " " + e["name"].get<std::string>());
  }
  REQUIRE(l_counter.size() == 6);
  CHECK(l_counter[0].second == json{{"holders", 0}, {"queue", 1}});  // at the window's start
  CHECK(l_counter[1].second == json{{"holders", 1}, {"queue", 1}});  // 10: client 0 takes it
  CHECK(l_counter[2].second == json{{"holders", 0}, {"queue", 1}});  // 30: released
  CHECK(l_counter[3].second == json{{"holders", 0}, {"queue", 0}});  // 31: client 1 got it
  CHECK(l_counter[4].second == json{{"holders", 1}, {"queue", 0}});
  CHECK(l_counter[5].second == json{{"holders", 0}, {"queue", 0}});  // 45: released
  CHECK(last.at(name_l) == json{{"holders", 0}, {"queue", 0}});
  // The release of L inside the wait for M splits the wait slice, which goes on "continued".
  const std::string name_m = name_l.back() == '0' ? "LWLock:wal_insert #1" : "LWLock:wal_insert #0";
  CHECK(client0 == std::vector<std::string>{
                       "B " + name_l + " exclusive", "B wait " + name_m, "E wait " + name_m,
                       "E " + name_l + " exclusive", "B wait " + name_m, "E wait " + name_m,
                       "B " + name_m + " exclusive", "E " + name_m + " exclusive"});
}

TEST_CASE("walbench run --trace: a simulated cell traced, the same cell untraced", "[trace][cli]") {
  TempDir dir;
  dir.write("c.json", R"({"platform": {"kind": "sim"},
      "strategy": {"name": "insert_locks", "params": {"num_locks": 1}},
      "workload": {"name": "emit_message", "transactional": true},
      "commit": {"synchronous_commit": true},
      "run": {"duration_s": 0.002, "warmup_s": 0.0005, "progress_interval_s": 0, "seed": 3},
      "matrix": {"clients": [2, 4]}})");
  // Two cells: --trace needs --trace-cell.
  const Result refused = walbench("run c.json --trace t.json -o r.json", dir);
  CHECK(refused.rc == 2);
  CHECK(refused.err.find("--trace-cell") != std::string::npos);
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  CHECK(!std::filesystem::exists(dir.path / "t.json"));

  // The window reaches past the run's end: every slice closes, every queue empties.
  const Result traced =
      walbench("run c.json --trace-cell 1 --trace t.json --trace-window 10 -q -o traced.json", dir);
  INFO("stdout: " << traced.out << "\nstderr: " << traced.err);
  REQUIRE(traced.rc == 0);
  CHECK(traced.err.find("trace: t.json, ") != std::string::npos);
  CHECK(traced.err.find(" 0 dropped, ") != std::string::npos);
  const json doc = json::parse(slurp(dir.file("t.json")));
  const auto last = check_trace_structure(doc);
  CHECK(doc["otherData"]["walbench"]["dropped_events"] == 0);
  CHECK(doc["otherData"]["walbench"]["clients"] == 4);

  std::map<int, std::string> client_tracks, lock_tracks;
  size_t waits = 0, holds = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      (e["pid"] == 1 ? client_tracks : lock_tracks)[e["tid"]] = e["args"]["name"];
    if (e["ph"] == "B" && e["pid"] == 1 && e["name"].get<std::string>().rfind("wait LWLock:", 0) == 0) ++waits;
    if (e["ph"] == "B" && e["pid"] == 2) ++holds;
  }
  CHECK(client_tracks == std::map<int, std::string>{{1, "client 0"}, {2, "client 1"}, {3, "client 2"},
                                                    {4, "client 3"}, {5, "WAL writer"}});
  bool has_insert_lock = false;
  for (const auto& [tid, name] : lock_tracks) has_insert_lock |= name == "LWLock:wal_insert";
  CHECK(has_insert_lock);
  // 4 clients committing synchronously do wait: since 0dc5789 (ShmemVariableCache's line) on
  // WALWriteLock in these 2 ms, the insertion lock's waits coming later in a run.
  CHECK(waits > 0);
  CHECK(holds > 0);
  REQUIRE(last.count("LWLock:wal_insert"));
  for (const auto& [name, args] : last) {
    INFO("counter " << name);
    CHECK(args["queue"] == 0);
    CHECK(args["holders"] == 0);
  }

  // Tracing charges no virtual time: the cell is the same without it.
  const Result plain = walbench("run c.json -q -o plain.json", dir);
  REQUIRE(plain.rc == 0);
  const json a = json::parse(slurp(dir.file("traced.json")));
  const json b = json::parse(slurp(dir.file("plain.json")));
  REQUIRE(a["cells"].size() == 1);
  REQUIRE(b["cells"].size() == 2);
  CHECK(a["cells"][0] == b["cells"][1]);
}

}  // namespace
}  // namespace walbench
