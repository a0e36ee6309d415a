// `walbench report` / `compare` on hand-written result files: exact (golden) layout, matching,
// and the errors for files that are not results.
#include "harness/report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "harness/config.h"
#include "harness/pairing.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using testing::TempDir;

// A cell as runner.cc writes it (only the fields the report reads, plus a few more).
// size_label: the record size column; tps < 0: a failed cell.
json cell(const std::string& label, int clients, const std::string& size_label, double tps,
          json extra_matrix = json::object()) {
  json record_size = size_label.find('(') == std::string::npos
                         ? json(std::stoi(size_label))
                         : json{{"dist", "uniform"}, {"min", 16}, {"max", 1024}};
  json matrix = {{"strategy", label}, {"clients", clients}, {"workload.record_size", record_size}};
  for (const auto& [k, v] : extra_matrix.items()) matrix[k] = v;
  json c = {
      {"index", 0},
      {"label", label},
      {"strategy", "insert_locks"},
      {"params", {{"insertingat", label == "insert_locks_atomic" ? "atomic" : "waitlist"}}},
      {"clients", clients},
      {"matrix", matrix},
      {"platform", {{"kind", "threads"}}},
      {"workload",
       {{"name", "emit_message"},
        {"record_size", record_size},
        {"record_size_label", size_label},
        {"transactional", true},
        {"client_overhead_us", 0}}},
      {"wal",
       {{"page_size", 8192},
        {"segment_size", 16777216},
        {"wal_buffers", extra_matrix.value("wal.wal_buffers", 512)},
        {"storage", "memory"},
        {"path", ""},
        {"fsync", true},
        {"buffer_init", "mapping_lock"}}},
      {"commit", {{"synchronous_commit", true}, {"wal_writer_delay_ms", 200}, {"wal_writer_flush_after", 128}}},
      {"run",
       {{"duration_s", 5},
        {"warmup_s", 1},
        {"repetitions", 3},
        {"seed", 1},
        {"progress_interval_s", 1},
        {"verify", true},
        {"watchdog_s", 10}}},
      {"ok", tps >= 0},
      {"error", tps >= 0 ? json(nullptr) : json("verify failed: at 0/01A2B3C8: bad prev link")},
      {"repetitions", json::array()},
      {"summary",
       tps >= 0 ? json{{"repetitions", 3}, {"tps_median", tps}, {"tps_rsd_pct", 1.5}, {"bytes_per_s_median", tps * 100}, {"lat_ms_median", 0.3}}
                : json(nullptr)},
  };
  return c;
}

std::string result_file(const json& cells) {
  json doc = {{"context", {{"schema_version", 1}, {"walbench_version", "0.1.0"}}}, {"cells", cells}};
  return doc.dump(1);
}

TEST_CASE("report prints pgsql-hackers tables (golden)", "[report]") {
  TempDir dir;
  const json cells = json::array({
      cell("insert_locks_waitlist", 16, "1024", 9003.4),
      cell("insert_locks_waitlist", 4, "16", 3026.4),
      cell("insert_locks_waitlist", 4, "1024", 2880),
      cell("insert_locks_waitlist", 16, "16", 12087.5),
      cell("insert_locks_atomic", 4, "16", 3104),
      cell("insert_locks_atomic", 4, "1024", -1),
      cell("insert_locks_atomic", 16, "16", 13000.2),
      cell("insert_locks_waitlist", 4, "16", 2500, {{"wal.wal_buffers", 64}}),
      cell("insert_locks_waitlist", 4, "uniform(16,1024)", 2000),
  });
  const std::string path = dir.write("r.json", result_file(cells));
  std::ostringstream out, err;
  REQUIRE(report_command(path, out, err) == 0);
  CHECK(err.str().empty());
  CHECK(out.str() ==
        "                                     16    1024  uniform(16,1024)\n"
        "insert_locks_waitlist_4_clients    3026    2880              2000\n"
        "insert_locks_waitlist_16_clients  12088    9003                 -\n"
        "insert_locks_atomic_4_clients      3104  FAILED                 -\n"
        "insert_locks_atomic_16_clients    13000       -                 -\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps\n"
        "\n"
        "                                   16\n"
        "insert_locks_waitlist_4_clients  2500\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, wal.wal_buffers=64\n"
        "\n"
        "failed cells (1):\n"
        "  insert_locks_atomic_4_clients record_size=1024: verify failed: at 0/01A2B3C8: bad "
        "prev link\n");
}

TEST_CASE("compare prints NEW/BASE - 1 per paired cell, the geometric mean and unpaired cells",
          "[report][compare]") {
  TempDir dir;
  const std::string base = dir.write("base.json", result_file(json::array({
                                                      cell("insert_locks_waitlist", 4, "16", 1000),
                                                      cell("insert_locks_waitlist", 4, "1024", 2000),
                                                      cell("insert_locks_atomic", 4, "16", 500),
                                                      cell("insert_locks_waitlist", 8, "16", 100),
                                                  })));
  const std::string next = dir.write("new.json", result_file(json::array({
                                                     cell("insert_locks_waitlist", 4, "16", 1100),
                                                     cell("insert_locks_waitlist", 4, "1024", 1900),
                                                     cell("insert_locks_atomic", 4, "16", -1),
                                                     cell("insert_locks_waitlist", 16, "16", 42),
                                                 })));
  std::ostringstream out, err;
  REQUIRE(compare_command(base, next, out, err) == 0);
  CHECK(err.str().empty());
  CHECK(out.str() ==
        "compare: NEW " + next + " vs BASE " + base + " (median tps, NEW/BASE - 1)\n"
        "settings that differ (BASE -> NEW):\n"
        "  clients: 4, 8 -> 4, 16\n"
        "BASE and NEW are schema-1 files, which record no clog block and only platform.kind (not the "
        "simulated machine), so cells pair on less\n"
        "\n"
        "                                      16    1024\n"
        "insert_locks_waitlist_4_clients  +10.0%?  -5.0%?\n"
        "insert_locks_atomic_4_clients     FAILED       -\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps\n"
        "\n"
        "* the change exceeds the noise within each run: exact two-sided Mann-Whitney U test over "
        "the repetitions' tps, p < 0.05; unmarked: p >= 0.05 (drift between the two runs is not "
        "noise it can see); ? n/a, too few repetitions for any p < 0.05: no "
        "repetition with a tps in BASE and in NEW (2 cells)\n"
        "beyond the noise: 0 of 0 cells with a verdict (0 up, 0 down); 2 without a verdict\n"
        "geometric mean change: +2.2% over 2 cells, the paired cells that succeeded in both files (of 3 paired)\n"
        "\n"
        "unpaired in BASE (1):\n"
        "  insert_locks_waitlist_8_clients record_size=16: the closest NEW cell "
        "(insert_locks_waitlist_4_clients record_size=16) differs in clients: 8 -> 4\n"
        "\n"
        "unpaired in NEW (1):\n"
        "  insert_locks_waitlist_16_clients record_size=16: the closest BASE cell "
        "(insert_locks_waitlist_4_clients record_size=16) differs in clients: 4 -> 16\n");
}

TEST_CASE("compare matches on the setup, not on position", "[report][compare]") {
  TempDir dir;
  // Same label and clients, different wal_buffers: two different cells.
  const std::string base = dir.write("b.json", result_file(json::array({
                                                   cell("w", 4, "16", 1000, {{"wal.wal_buffers", 64}}),
                                                   cell("w", 4, "16", 2000, {{"wal.wal_buffers", 128}}),
                                               })));
  const std::string next = dir.write("n.json", result_file(json::array({
                                                   cell("w", 4, "16", 2200, {{"wal.wal_buffers", 128}}),
                                                   cell("w", 4, "16", 1500, {{"wal.wal_buffers", 64}}),
                                               })));
  std::ostringstream out, err;
  REQUIRE(compare_command(base, next, out, err) == 0);
  const std::string o = out.str();
  CHECK(o.find("w_4_clients  +10.0%?\n") != std::string::npos);
  CHECK(o.find("w_4_clients  +50.0%?\n") != std::string::npos);
  CHECK(o.find("wal.wal_buffers=128") != std::string::npos);
  CHECK(o.find("geometric mean change: +28.5% over 2 cells, the paired cells that succeeded in both files (of 2 paired)\n") != std::string::npos);  // sqrt(1.1*1.5)
  CHECK(o.find("unpaired") == std::string::npos);
}

TEST_CASE("report and compare reject files that are not results, naming the file", "[report]") {
  TempDir dir;
  std::ostringstream out, err;
  const std::string missing = (dir.path / "missing.json").string();
  CHECK_THROWS_AS(report_command(missing, out, err), UsageError);
  CHECK_THROWS_WITH(report_command(missing, out, err),
                    missing + ": cannot read result file: No such file or directory");

  const std::string garbage = dir.write("garbage.json", "{\"cells\": [\n  nonsense\n");
  CHECK_THROWS_WITH(report_command(garbage, out, err),
                    garbage + ": not a walbench result file: invalid JSON at line 2, column 4");

  const std::string empty = dir.write("empty.json", "");
  CHECK_THROWS_WITH(report_command(empty, out, err),
                    empty + ": not a walbench result file: the file is empty");

  const std::string config = dir.write("config.json", R"({"matrix": {"clients": [1, 2]}})");
  CHECK_THROWS_WITH(report_command(config, out, err),
                    config + ": not a walbench result file: expected an object with \"context\" "
                             "and a \"cells\" array");

  const std::string v9 = dir.write("v9.json", R"({"context": {"schema_version": 9}, "cells": []})");
  CHECK_THROWS_WITH(report_command(v9, out, err),
                    v9 + ": result schema_version 9 is not supported (this walbench reads 1 to 2)");

  json c = cell("w", 4, "16", 1000);
  c.erase("label");
  const std::string nolabel = dir.write("nolabel.json", result_file(json::array({cell("w", 2, "16", 1), c})));
  CHECK_THROWS_WITH(report_command(nolabel, out, err),
                    nolabel + ": /cells/1/label: missing or invalid; expected a string");

  const std::string good = dir.write("good.json", result_file(json::array({cell("w", 2, "16", 1)})));
  CHECK_THROWS_WITH(compare_command(good, garbage, out, err), Catch::StartsWith(garbage + ": "));
  CHECK_THROWS_WITH(compare_command(missing, good, out, err), Catch::StartsWith(missing + ": "));
}

TEST_CASE("report on a result without cells says so", "[report]") {
  TempDir dir;
  const std::string path = dir.write("r.json", result_file(json::array()));
  std::ostringstream out, err;
  CHECK(report_command(path, out, err) == 0);
  CHECK(out.str() == path + ": no cells\n");
}

// ---- compare BASE NEW on schema-2 files ----

// A schema-2 cell (harness/RESULTS.md) on the simulated platform: label "a", emit_message with
// 16-byte records on memory storage, 4 repetitions. `patch` is merged in (RFC 7386) to change
// any setting; `tps` are the repetitions' tps (the median goes to the summary).
json cell2(const std::string& label, int clients, std::vector<double> tps, const json& patch = json::object()) {
  std::vector<double> sorted = tps;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0
                        : sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  json reps = json::array();
  for (size_t i = 0; i < tps.size(); ++i) reps.push_back({{"seed", 1 + i}, {"ok", true}, {"error", nullptr}, {"tps", tps[i]}});
  json c = {
      {"index", 0},
      {"label", label},
      {"strategy", "insert_locks"},
      {"params", {{"insertingat", "atomic"}, {"lock_choice", "procno"}, {"num_locks", 8}}},
      {"clients", clients},
      {"matrix", {{"clients", clients}, {"strategy", label}}},
      {"platform",
       {{"kind", "sim"}, {"atomics", "native"}, {"spinlocks", "native"},
        {"sim", {{"cores", 64}, {"sockets", 1}, {"same_socket_transfer_ns", 50.0}}}}},
      {"workload",
       {{"name", "emit_message"}, {"record_size", 16}, {"record_size_label", "16"}, {"transactional", true},
        {"client_overhead_us", 0.0}, {"client_overhead_jitter", 0.0}, {"payload_ns_per_byte", 0.0}}},
      {"wal",
       {{"page_size", 8192}, {"segment_size", 16777216}, {"wal_buffers", 2048}, {"storage", "memory"},
        {"path", ""}, {"fsync", true}, {"buffer_init", "mapping_lock"}}},
      {"commit", {{"synchronous_commit", true}, {"wal_writer_delay_ms", 200.0}, {"wal_writer_flush_after", 128}}},
      {"clog", {{"strategy", "clog_exclusive"}, {"params", json::object()}, {"clog_buffers", 128}, {"page_size", 8192}}},
      {"run",
       {{"duration_s", 5.0}, {"warmup_s", 1.0}, {"repetitions", tps.size()}, {"seed", 1},
        {"progress_interval_s", 0.0}, {"verify", true}, {"watchdog_s", 10.0}, {"interleave", false},
        {"min_txns_per_client", 0}, {"trend_warn_pct", 10.0}}},
      {"ok", true},
      {"error", nullptr},
      {"warnings", json::array()},
      {"repetitions", reps},
      {"summary", {{"repetitions", tps.size()}, {"tps_median", median}}},
  };
  c.merge_patch(patch);
  return c;
}

std::string result_file2(json cells) {
  for (size_t i = 0; i < cells.size(); ++i) cells[i]["index"] = i;
  json doc = {{"context", {{"schema_version", 2}, {"walbench_version", "0.1.0"}}}, {"cells", cells}};
  return doc.dump(1);
}

const std::vector<double> kFour = {1000, 1010, 990, 1005};
const std::vector<double> kFourUp = {1200, 1210, 1190, 1205};

struct CompareRun {
  int rc = -1;
  std::string out, err;
};
CompareRun run_compare(const std::string& base, const std::string& next, const CompareOptions& opts = {}) {
  std::ostringstream out, err;
  CompareRun r;
  r.rc = compare_command(base, next, out, err, opts);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The text of a table row after its name ("+20.0%*"), or "" when there is no such row.
std::string row_text(const std::string& out, const std::string& row) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(row + " ", 0) == 0) return line.substr(line.find_first_not_of(' ', row.size()));
  return "";
}

// The "settings that differ" block of the header, one entry per line.
std::vector<std::string> difference_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "settings that differ (BASE -> NEW):") {
      inside = true;
      continue;
    }
    if (inside && line.rfind("  ", 0) != 0) break;
    if (inside) lines.push_back(line);
  }
  return lines;
}

TEST_CASE("compare pairs nothing across record size, storage or platform and says why", "[compare]") {
  TempDir dir;
  const json one_setting_apart[] = {
      {{"workload", {{"record_size", 16384}, {"record_size_label", "16384"}}}},
      {{"wal", {{"storage", "file"}}}},
      {{"platform", {{"sim", {{"cores", 32}}}}}},
  };
  const std::string expected_line[] = {
      "  workload.record_size: 16 -> 16384",
      "  wal.storage: memory -> file",
      "  platform.sim.cores: 64 -> 32",
  };
  const std::string expected_path[] = {"workload.record_size", "wal.storage", "platform.sim.cores"};
  const std::string base = dir.write("base.json", result_file2(json::array({cell2("a", 1, kFour), cell2("a", 4, kFour)})));
  for (size_t k = 0; k < 3; ++k) {
    INFO(expected_line[k]);
    const std::string next =
        dir.write("new.json", result_file2(json::array({cell2("a", 1, kFourUp, one_setting_apart[k]),
                                                         cell2("a", 4, kFourUp, one_setting_apart[k])})));
    const CompareRun r = run_compare(base, next);
    CHECK(r.rc == 1);
    CHECK(difference_lines(r.out) == std::vector<std::string>{expected_line[k]});
    CHECK(r.out.find('%') == std::string::npos);  // no ratio between cells that do not pair
    CHECK(r.out.find("unpaired in BASE (2):\n  a_1_clients record_size=16: the closest NEW cell") != std::string::npos);
    CHECK(r.out.find("differs in " + expected_line[k].substr(2) + "\n") != std::string::npos);
    CHECK(r.err == "walbench: compare: no cell of NEW pairs with a cell of BASE: the files differ in " +
                       expected_path[k] +
                       " (listed above); --ignore KEY or --pair-by KEY pairs such cells deliberately\n");
  }

  // All three at once: one line per difference, in block order.
  json all = one_setting_apart[0];
  all.merge_patch(one_setting_apart[1]);
  all.merge_patch(one_setting_apart[2]);
  const std::string next = dir.write("all.json", result_file2(json::array({cell2("a", 1, kFourUp, all)})));
  const CompareRun r = run_compare(base, next);
  CHECK(r.rc == 1);
  CHECK(difference_lines(r.out) == std::vector<std::string>{"  clients: 1, 4 -> 1 (NEW has a subset)",
                                                           expected_line[2], expected_line[0], expected_line[1]});
  CHECK(r.err.find("the files differ in platform.sim.cores, workload.record_size, wal.storage (listed above)") !=
        std::string::npos);
}

TEST_CASE("compare pairs a rerun of a subset with the full run", "[compare]") {
  TempDir dir;
  json full = json::array();
  for (const char* label : {"a", "b"})
    for (int clients : {1, 4, 8}) full.push_back(cell2(label, clients, kFour));
  const std::string base = dir.write("full.json", result_file2(full));
  // `--set matrix.clients=[8] --set run.duration_s=10` on one variant: other index, no swept keys;
  // and a number spelled as an integer (200 for 200.0) is the same setting.
  const std::string next = dir.write(
      "subset.json", result_file2(json::array({cell2("b", 8, kFourUp,
                                                     {{"matrix", nullptr},
                                                      {"run", {{"duration_s", 10.0}}},
                                                      {"commit", {{"wal_writer_delay_ms", 200}}}})})));
  const CompareRun r = run_compare(base, next);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(difference_lines(r.out) == std::vector<std::string>{
                                       "  label: a, b -> b (NEW has a subset)",
                                       "  clients: 1, 4, 8 -> 8 (NEW has a subset)",
                                       "  run.duration_s: 5.0 -> 10.0 (measurement; cells still pair)",
                                   });
  CHECK(row_text(r.out, "b_8_clients") == "+20.0%*");
  CHECK(r.out.find("geometric mean change: +20.0% over 1 cell, the paired cells that succeeded in both files (of 1 paired)\n") != std::string::npos);
  CHECK(r.out.find("beyond the noise: 1 of 1 cells with a verdict (1 up, 0 down)\n") != std::string::npos);
  CHECK(r.out.find("unpaired in BASE (5):\n") != std::string::npos);
  CHECK(r.out.find("  a_8_clients record_size=16: the closest NEW cell (b_8_clients record_size=16) differs in "
                   "label: a -> b\n") != std::string::npos);
  CHECK(r.out.find("unpaired in NEW") == std::string::npos);
}

TEST_CASE("compare --ignore and --pair-by pair cells that differ on purpose", "[compare]") {
  TempDir dir;
  const std::string base = dir.write(
      "base.json", result_file2(json::array({cell2("a", 1, kFour), cell2("a", 4, kFour)})));
  const std::string file_storage = dir.write(
      "file.json", result_file2(json::array({cell2("a", 1, kFourUp, {{"wal", {{"storage", "file"}}}}),
                                             cell2("a", 4, kFourUp, {{"wal", {{"storage", "file"}}}})})));
  REQUIRE(run_compare(base, file_storage).rc == 1);

  SECTION("--ignore wal.storage") {
    const CompareRun r = run_compare(base, file_storage, {{"wal.storage"}, {}});
    CHECK(r.rc == 0);
    CHECK(difference_lines(r.out) ==
          std::vector<std::string>{"  wal.storage: memory -> file (--ignore; cells still pair)"});
    CHECK(row_text(r.out, "a_1_clients") == "+20.0%*");
    CHECK(row_text(r.out, "a_4_clients") == "+20.0%*");
  }
  SECTION("--ignore a whole block") {
    CHECK(run_compare(base, file_storage, {{"wal"}, {}}).rc == 0);
  }
  SECTION("--pair-by pairs by clients and the keys only") {
    const CompareRun r = run_compare(base, file_storage, {{}, {"workload.record_size"}});
    CHECK(r.rc == 0);
    CHECK(difference_lines(r.out) ==
          std::vector<std::string>{"  wal.storage: memory -> file (not a --pair-by key; cells still pair)"});
    CHECK(run_compare(base, file_storage, {{}, {"wal.storage"}}).rc == 1);
  }
  SECTION("two strategies of otherwise equal cells") {
    const std::string other = dir.write(
        "other.json", result_file2(json::array({cell2("single_lock", 1, kFourUp,
                                                      {{"strategy", "single_lock"}, {"params", nullptr}}),
                                                cell2("single_lock", 4, kFourUp,
                                                      {{"strategy", "single_lock"}, {"params", nullptr}})})));
    CHECK(run_compare(base, other).rc == 1);
    const CompareRun r = run_compare(base, other, {{"label", "params", "strategy"}, {}});
    CHECK(r.rc == 0);
    CHECK(row_text(r.out, "single_lock_4_clients") == "+20.0%*");
    CHECK(difference_lines(r.out) ==
          std::vector<std::string>{"  label: a -> single_lock (--ignore; cells still pair)",
                                   "  strategy: insert_locks -> single_lock (--ignore; cells still pair)"});
  }
  SECTION("an unknown KEY is a usage error with the closest key") {
    std::ostringstream out, err;
    CHECK_THROWS_WITH(compare_command(base, file_storage, out, err, {{"wal.storag"}, {}}),
                      Catch::StartsWith("compare: --ignore wal.storag: no such setting in " + base + " or " +
                                        file_storage) &&
                          Catch::EndsWith("(did you mean \"wal.storage\"?)"));
    CHECK_THROWS_WITH(compare_command(base, file_storage, out, err, {{}, {"platform.sim.coers"}}),
                      Catch::Contains("--pair-by platform.sim.coers") &&
                          Catch::Contains("did you mean \"platform.sim.cores\"?"));
    CHECK_THROWS_AS(compare_command(base, file_storage, out, err, {{"colour"}, {}}), UsageError);
  }
  SECTION("--pair-by that leaves two cells of one file alike is the duplicate error") {
    const std::string two_labels = dir.write(
        "two.json", result_file2(json::array({cell2("a", 1, kFour), cell2("b", 1, kFour)})));
    std::ostringstream out, err;
    CHECK_THROWS_WITH(compare_command(two_labels, base, out, err, {{}, {"wal.storage"}}),
                      Catch::StartsWith(two_labels + ": cells 0 and 1 have the same setup (b_1_clients "
                                                     "record_size=16; they differ only in label"));
  }
}

TEST_CASE("compare reads a key that older cells leave out as the value they ran with", "[compare]") {
  // A file made before 8b3317e records clog.xid_locks only where it was true: its other cells
  // ran without the xid lock table, and hold against a newer file's as false.
  TempDir dir;
  const std::string before = dir.write("before.json", result_file2(json::array({cell2("a", 1, kFour)})));
  const std::string on = dir.write(
      "on.json", result_file2(json::array({cell2("a", 1, kFourUp, {{"clog", {{"xid_locks", true}}}})})));
  const std::string off = dir.write(
      "off.json", result_file2(json::array({cell2("a", 1, kFourUp, {{"clog", {{"xid_locks", false}}}})})));
  {
    const CompareRun r = run_compare(before, on);
    CHECK(r.rc == 1);
    CHECK(difference_lines(r.out) == std::vector<std::string>{"  clog.xid_locks: false -> true"});
    CHECK(r.out.find("not compared") == std::string::npos);
  }
  CHECK(run_compare(before, on, {{"clog.xid_locks"}, {}}).rc == 0);
  {
    const CompareRun r = run_compare(before, off);
    CHECK(r.rc == 0);
    CHECK(difference_lines(r.out).empty());
  }
  SECTION("where the table can never run, the key is not part of a cell's setup") {
    // A server cell, a non-transactional workload and `ideal` build no xid lock table
    // (core/cell/wal_cell.h): an older file of them pairs with a newer one whatever the key says.
    const json server = {{"platform", {{"kind", "postgres"}}}};
    const json wal_only = {{"workload", {{"transactional", false}}}};
    const json ideal = {{"strategy", "ideal"}, {"params", json::object()}};
    for (const json& patch : {server, wal_only, ideal}) {
      json with_key = patch;
      with_key["clog"] = {{"xid_locks", true}};
      const std::string old_file = dir.write("old.json", result_file2(json::array({cell2("a", 1, kFour, patch)})));
      const std::string new_file = dir.write("new.json", result_file2(json::array({cell2("a", 1, kFourUp, with_key)})));
      const CompareRun r = run_compare(old_file, new_file);
      CHECK(r.rc == 0);
      CHECK(difference_lines(r.out).empty());
      INFO(r.out);
      CHECK(r.out.find("clog.xid_locks") == std::string::npos);
    }
  }
}

TEST_CASE("compare refuses a file with two cells of the same setup, naming both", "[compare]") {
  TempDir dir;
  const std::string dup = dir.write(
      "dup.json", result_file2(json::array({cell2("a", 1, kFour), cell2("a", 4, kFour), cell2("a", 1, kFourUp)})));
  const std::string good = dir.write("good.json", result_file2(json::array({cell2("a", 1, kFour)})));
  std::ostringstream out, err;
  const std::string expected = dup + ": cells 0 and 2 have the same setup (a_1_clients record_size=16; the same "
                                     "setup twice); compare needs each setup once: remove one, or tell them "
                                     "apart with --pair-by KEY";
  CHECK_THROWS_WITH(compare_command(dup, good, out, err), expected);
  CHECK_THROWS_WITH(compare_command(good, dup, out, err), expected);
  // A run setting that varies inside one file (run.seed here) was swept: it tells cells apart.
  const std::string reseeded = dir.write(
      "reseeded.json", result_file2(json::array({cell2("a", 1, kFour), cell2("a", 1, kFour, {{"run", {{"seed", 7}}}})})));
  CHECK_NOTHROW(compare_command(reseeded, good, out, err));
}

TEST_CASE("compare marks changes beyond the noise and says n/a for too few repetitions", "[compare]") {
  TempDir dir;
  const std::string base = dir.write(
      "base.json", result_file2(json::array({
                       cell2("sep", 1, {100, 101, 102, 103}),   // 4 vs 4, fully separated: p = 2/70
                       cell2("mixed", 1, {100, 103, 105, 108}), // 4 vs 4, interleaved
                       cell2("three", 1, {100, 101, 102}),      // 3 vs 3: p >= 0.1 whatever the data
                       cell2("single", 1, {100}),               // 1 vs 4: never a verdict
                   })));
  const std::string next = dir.write(
      "new.json", result_file2(json::array({
                      cell2("sep", 1, {110, 111, 112, 113}),
                      cell2("mixed", 1, {101, 104, 106, 107}),
                      cell2("three", 1, {150, 151, 152}),
                      cell2("single", 1, {200, 201, 202, 203}),
                  })));
  const CompareRun r = run_compare(base, next);
  REQUIRE(r.rc == 0);
  CHECK(row_text(r.out, "sep_1_clients") == "+9.9%*");     // medians 111.5 / 101.5
  CHECK(row_text(r.out, "mixed_1_clients") == "+1.0%");    // 105 / 104, p = 0.886
  CHECK(row_text(r.out, "three_1_clients") == "+49.5%?");  // 151 / 101
  CHECK(row_text(r.out, "single_1_clients") == "+101.5%?");
  CHECK(r.out.find("? n/a, too few repetitions for any p < 0.05: 3 vs 3 repetitions: the smallest possible p is "
                   "0.100 (1 cell); 1 repetition in BASE (1 cell)\n") != std::string::npos);
  CHECK(r.out.find("beyond the noise: 1 of 2 cells with a verdict (1 up, 0 down); 2 without a verdict\n") !=
        std::string::npos);
}

TEST_CASE("compare holds a schema-1 file against a schema-2 file on what both record", "[compare]") {
  TempDir dir;
  // Schema 1: platform.kind only, no clog block (cell() above); threads platform.
  const std::string old_file = dir.write("old.json", result_file(json::array({
                                                         cell("insert_locks_waitlist", 4, "16", 1000),
                                                         cell("insert_locks_waitlist", 16, "16", 2000),
                                                     })));
  auto as_new = [](json c) {
    c["platform"] = {{"kind", "threads"}, {"atomics", "native"}, {"spinlocks", "native"}};
    c["clog"] = {{"strategy", "clog_exclusive"}, {"clog_buffers", 128}};
    return c;
  };
  const std::string new_file = dir.write(
      "new.json", result_file2(json::array({as_new(cell("insert_locks_waitlist", 4, "16", 1100)),
                                            as_new(cell("insert_locks_waitlist", 16, "16", 2200))})));
  const CompareRun r = run_compare(old_file, new_file);
  CHECK(r.rc == 0);
  CHECK(r.out.find("settings: the files agree on every setting both record\n"
                   "BASE is a schema-1 file, which records no clog block and only platform.kind (not the "
                   "simulated machine), so cells pair on less\n"
                   // NEW's cells, schema 2, ran without images (keys_older_cells_lack); BASE,
                   // schema 1, says nothing of them
                   "only NEW records (not compared): platform.atomics, platform.spinlocks, "
                   "workload.full_page_writes, clog\n") != std::string::npos);
  CHECK(row_text(r.out, "insert_locks_waitlist_16_clients") == "+10.0%?");

  SECTION("cells the older file cannot tell apart stay unpaired, with the reason") {
    json emulated = as_new(cell("insert_locks_waitlist", 4, "16", 900));
    emulated["platform"]["atomics"] = "emulated";
    const std::string two = dir.write(
        "two.json", result_file2(json::array({as_new(cell("insert_locks_waitlist", 4, "16", 1100)), emulated,
                                              as_new(cell("insert_locks_waitlist", 16, "16", 2200))})));
    const CompareRun a = run_compare(old_file, two);
    CHECK(a.rc == 0);
    CHECK(a.out.find("unpaired in NEW (2):\n  insert_locks_waitlist_4_clients record_size=16: ambiguous: NEW "
                     "cells 0, 1 differ only in platform.atomics, which BASE does not record\n") != std::string::npos);
    CHECK(a.out.find("unpaired in BASE (1):\n  insert_locks_waitlist_4_clients record_size=16: ambiguous") !=
          std::string::npos);
  }
}

TEST_CASE("walbench compare BASE NEW on the command line: exit status and one-line errors", "[compare]") {
  TempDir dir;
  auto cli = [&](const std::string& args) {
    const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
    std::ostringstream command;  // (a stream: GCC 12 warns falsely on a chain of string +)
    command << "'" << WALBENCH_BINARY << "' " << args << " >'" << out << "' 2>'" << err << "'";
    const int status = std::system(command.str().c_str());
    auto slurp = [](const std::string& path) {
      std::ifstream in(path);
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    };
    return CompareRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  };
  auto one_line = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n') == 1; };
  const std::string base = dir.write("base.json", result_file2(json::array({cell2("a", 1, kFour)})));
  const std::string file_storage =
      dir.write("file.json", result_file2(json::array({cell2("a", 1, kFourUp, {{"wal", {{"storage", "file"}}}})})));

  CompareRun r = cli("compare '" + base + "' '" + base + "'");
  CHECK(r.rc == 0);
  CHECK(r.err.empty());

  r = cli("compare '" + base + "' '" + file_storage + "'");
  CHECK(r.rc == 1);
  CHECK(one_line(r.err));
  CHECK(r.err.rfind("walbench: compare: no cell of NEW pairs with a cell of BASE: the files differ in wal.storage", 0) == 0);

  r = cli("compare '" + base + "' '" + file_storage + "' --ignore wal.storage");
  CHECK(r.rc == 0);
  r = cli("compare '" + base + "' '" + file_storage + "' --pair-by clients");
  CHECK(r.rc == 0);

  r = cli("compare '" + base + "' '" + file_storage + "' --ignore wal.storag");
  CHECK(r.rc == 2);
  CHECK(one_line(r.err));
  CHECK(r.err.find("did you mean \"wal.storage\"?") != std::string::npos);

  const std::string dup = dir.write("dup.json", result_file2(json::array({cell2("a", 1, kFour), cell2("a", 1, kFour)})));
  r = cli("compare '" + dup + "' '" + base + "'");
  CHECK(r.rc == 2);
  CHECK(one_line(r.err));
  CHECK(r.err.find(dup + ": cells 0 and 1 have the same setup") != std::string::npos);

  r = cli("compare '" + base + "' --reference x.csv --ignore wal.storage");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--ignore pairs the cells of BASE NEW; it does not apply to --reference") != std::string::npos);

  const std::string json_out = dir.file("cmp.json");
  r = cli("compare '" + base + "' '" + file_storage + "' --ignore wal.storage --json '" + json_out + "'");
  CHECK(r.rc == 0);
  {
    std::ifstream in(json_out);
    const json doc = json::parse(in);
    CHECK(doc["compare_version"] == 1);
    CHECK(doc["ignore"] == json::array({"wal.storage"}));
    CHECK(doc["differences"] ==
          json::parse(R"([{"path": "wal.storage", "role": "ignored", "base": ["memory"], "new": ["file"]}])"));
    REQUIRE(doc["pairs"].size() == 1);
    const json& pair = doc["pairs"][0];
    CHECK(pair["change"].get<double>() == Approx(1202.5 / 1002.5 - 1));  // medians
    CHECK(pair["noise"] == "exceeds");
    CHECK(pair["p"].get<double>() == Approx(2.0 / 70));
    CHECK(pair["repetitions"] == json::array({4, 4}));
    CHECK(doc["geometric_mean_change"].get<double>() == Approx(1202.5 / 1002.5 - 1));
  }

  r = cli("compare --help");
  CHECK(r.rc == 0);
  for (const char* opt : {"--ignore", "--pair-by", "Mann-Whitney", "1 nothing paired"}) {
    INFO(opt);
    CHECK(r.out.find(opt) != std::string::npos);
  }
}

}  // namespace
}  // namespace walbench

namespace walbench {
namespace {

TEST_CASE("compare names the machines and builds of two files, and the preset is a label", "[compare]") {
  TempDir dir;
  auto file = [&](const std::string& name, const json& context, const json& patch) {
    json doc = {{"context", context},
                {"cells", json::array({cell2("a", 4, kFour, patch)})}};
    doc["context"]["schema_version"] = 2;
    return dir.write(name, doc.dump(1));
  };
  const json threads = {{"platform", {{"kind", "threads"}, {"sim", nullptr}}}};
  const std::string base = file("base.json",
                                {{"host", "vm"}, {"cpu_model", "AMD EPYC"}, {"git_sha", "aaaaaaaaaaaa"},
                                 {"build", {{"type", "Release"}, {"compiler", "GNU 12"}, {"flags", "-O3"}}}},
                                threads);
  const std::string next = file("next.json",
                                {{"host", "big"}, {"cpu_model", "AMD EPYC"}, {"git_sha", "bbbbbbbbbbbb"},
                                 {"git_dirty", true}, {"git_diff_hash", "12345678abcd"},
                                 {"build", {{"type", "Debug"}, {"compiler", "GNU 12"}, {"flags", "-O0"}}}},
                                threads);
  const CompareRun r = run_compare(base, next);
  INFO(r.out);
  CHECK(r.out.find("machine and build (BASE -> NEW):\n"
                   "  host: vm -> big\n"
                   "  build: Release GNU 12 -O3 -> Debug GNU 12 -O0\n"
                   "  code: aaaaaaaaaaaa -> bbbbbbbbbbbb+dirty(12345678)\n"
                   "  real-thread cells ran on another machine or build: their change includes it\n") !=
        std::string::npos);
  // The same simulated machine under another preset name pairs; its memory-storage wal.path
  // (unused) does not matter either.
  const std::string p1 = file("p1.json", json::object(), {{"platform", {{"preset", "x.json"}}}, {"wal", {{"path", "/a"}}}});
  const std::string p2 = file("p2.json", json::object(), {{"platform", {{"preset", "icelake_2s"}}}, {"wal", {{"path", "/b"}}}});
  const CompareRun q = run_compare(p1, p2);
  INFO(q.out);
  CHECK(q.rc == 0);
  CHECK(row_text(q.out, "a_4_clients") == "+0.0%");
}

}  // namespace
}  // namespace walbench

namespace walbench {
namespace {

// A cell of an override variant (matrix "variants") that sets wal.buffer_init.
nlohmann::json override_cell(const std::string& label, const std::string& buffer_init, int clients,
                             double tps, nlohmann::json extra_matrix = nlohmann::json::object()) {
  nlohmann::json c = cell(label, clients, "8192", tps, extra_matrix);
  c["matrix"].erase("strategy");
  c["matrix"]["variants"] = label;
  c["set"] = {{"wal.buffer_init", buffer_init}};
  c["wal"]["buffer_init"] = buffer_init;
  return c;
}

}  // namespace

TEST_CASE("report: override variants share one table, like strategy variants (golden)",
          "[report][variants]") {
  TempDir dir;
  const nlohmann::json cells = nlohmann::json::array({
      override_cell("buffer_mapping", "mapping_lock", 4, 1000),
      override_cell("buffer_mapping", "mapping_lock", 16, 3000),
      override_cell("buffer_lockfree", "lockfree", 4, 1100),
      override_cell("buffer_lockfree", "lockfree", 16, 3900),
      // Another swept key still opens a table of its own.
      override_cell("buffer_lockfree", "lockfree", 4, 1200, {{"wal.wal_buffers", 64}}),
  });
  const std::string path = dir.write("r.json", result_file(cells));
  std::ostringstream out, err;
  REQUIRE(report_command(path, out, err) == 0);
  CHECK(out.str() ==
        "                            8192\n"
        "buffer_mapping_4_clients    1000\n"
        "buffer_mapping_16_clients   3000\n"
        "buffer_lockfree_4_clients   1100\n"
        "buffer_lockfree_16_clients  3900\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps; variants set wal.buffer_init\n"
        "\n"
        "                           8192\n"
        "buffer_lockfree_4_clients  1200\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, wal.wal_buffers=64; variants set wal.buffer_init\n");

  // Crossed with strategy variants: "<strategy>+<variant>", either part names the label.
  CHECK(is_label_value("pg17", "pg17+native"));
  CHECK(is_label_value("native", "pg17+native"));
  CHECK_FALSE(is_label_value("pg1", "pg17+native"));
  CHECK_FALSE(is_label_value("nativ", "pg17+native"));

  // compare BASE NEW pairs them by label and setup, in one table.
  nlohmann::json faster = cells;
  for (auto& c : faster) c["summary"]["tps_median"] = c["summary"]["tps_median"].get<double>() * 1.1;
  const std::string next = dir.write("n.json", result_file(faster));
  std::ostringstream cout_, cerr_;
  REQUIRE(compare_command(path, next, cout_, cerr_) == 0);
  const std::string text = cout_.str();
  INFO(text);
  CHECK(text.find("buffer_lockfree_16_clients  +10.0%") != std::string::npos);
  CHECK(text.find("unpaired") == std::string::npos);
}

namespace {

// ---- report: layouts, ratios, metrics, wait events, formats ----

// A NUM_XLOGINSERT_LOCKS sweep: two variants, 4 and 16 clients, 1, 8 and 64 locks, 16-byte
// records (and one 4096-byte cell); tps = clients * 100 + locks for procno, 1.5x for
// random_stride.
json lock_sweep() {
  json cells = json::array();
  for (const std::string label : {"procno", "random_stride"})
    for (int clients : {16, 4})
      for (int locks : {64, 1, 8}) {
        const double tps = (clients * 100 + locks) * (label == "procno" ? 1.0 : 1.5);
        cells.push_back(cell(label, clients, "16", tps, {{"strategy.params.num_locks", locks}}));
      }
  cells.push_back(cell("procno", 4, "4096", 50, {{"strategy.params.num_locks", 8}}));
  return cells;
}

std::string report_text(const std::string& path, const ReportOptions& options) {
  std::ostringstream out, err;
  REQUIRE(report_command(path, out, err, options) == 0);
  CHECK(err.str().empty());
  return out.str();
}

std::string report_error(const std::string& path, const ReportOptions& options) {
  std::ostringstream out, err;
  try {
    report_command(path, out, err, options);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("report --columns puts a swept key in the columns (golden)", "[report]") {
  TempDir dir;
  const std::string path = dir.write("r.json", result_file(lock_sweep()));
  ReportOptions o;
  o.columns = "num_locks";
  CHECK(report_text(path, o) ==
        "                             1     8    64\n"
        "procno_4_clients           401   408   464\n"
        "procno_16_clients         1601  1608  1664\n"
        "random_stride_4_clients    602   612   696\n"
        "random_stride_16_clients  2402  2412  2496\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=16; columns: strategy.params.num_locks\n"
        "\n"
        "                   8\n"
        "procno_4_clients  50\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=4096; columns: strategy.params.num_locks\n");
}

TEST_CASE("report --ratio shows each cell in % of the baseline variant (golden)", "[report]") {
  TempDir dir;
  json cells = lock_sweep();
  cells[1]["ok"] = false;  // procno, 16 clients, 1 lock: failed, so random_stride has no baseline there
  cells[1]["summary"] = nullptr;
  cells[1]["error"] = "watchdog: no progress";
  const std::string path = dir.write("r.json", result_file(cells));
  ReportOptions o;
  o.columns = "strategy.params.num_locks";
  o.ratio = "procno";
  CHECK(report_text(path, o) ==
        "                               1       8      64\n"
        "procno_4_clients          100.0%  100.0%  100.0%\n"
        "procno_16_clients         FAILED  100.0%  100.0%\n"
        "random_stride_4_clients   150.0%  150.0%  150.0%\n"
        "random_stride_16_clients     n/a  150.0%  150.0%\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=16; columns: strategy.params.num_locks; "
        "in % of procno: 100% = procno's median tps with the same clients and num_locks; "
        "n/a: procno has no value there\n"
        "\n"
        "                       8\n"
        "procno_4_clients  100.0%\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=4096; columns: strategy.params.num_locks; "
        "in % of procno: 100% = procno's median tps with the same clients and num_locks\n"
        "\n"
        "failed cells (1):\n"
        "  procno_16_clients record_size=16 strategy.params.num_locks=1: watchdog: no progress\n");

  SECTION("variants in the columns, as % of the baseline column") {
    ReportOptions v;
    v.columns = "label";
    v.rows = "num_locks";
    v.ratio = "procno";
    CHECK(report_text(path, v) ==
          "              procno  random_stride\n"
          "1_num_locks   FAILED            n/a\n"
          "8_num_locks   100.0%         150.0%\n"
          "64_num_locks  100.0%         150.0%\n"
          "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
          "3 repetitions x 5 s, median tps, clients=16, record_size=16; columns: label; "
          "in % of procno: 100% = procno's median tps in the same row; "
          "n/a: procno has no value there\n"
          "\n"
          "              procno  random_stride\n"
          "1_num_locks   100.0%         150.0%\n"
          "8_num_locks   100.0%         150.0%\n"
          "64_num_locks  100.0%         150.0%\n"
          "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
          "3 repetitions x 5 s, median tps, clients=4, record_size=16; columns: label; "
          "in % of procno: 100% = procno's median tps in the same row\n"
          "\n"
          "             procno\n"
          "8_num_locks  100.0%\n"
          "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
          "3 repetitions x 5 s, median tps, clients=4, record_size=4096; columns: label; "
          "in % of procno: 100% = procno's median tps in the same row\n"
          "\n"
          "failed cells (1):\n"
          "  procno_16_clients record_size=16 strategy.params.num_locks=1: watchdog: no progress\n");
  }
}

TEST_CASE("report --rows puts a swept key beside the label in the rows (golden)", "[report]") {
  TempDir dir;
  const std::string path = dir.write("r.json", result_file(lock_sweep()));
  ReportOptions o;
  o.rows = "num_locks";
  o.columns = "clients";
  CHECK(report_text(path, o) ==
        "                              4    16\n"
        "procno_1_num_locks          401  1601\n"
        "procno_8_num_locks          408  1608\n"
        "procno_64_num_locks         464  1664\n"
        "random_stride_1_num_locks   602  2402\n"
        "random_stride_8_num_locks   612  2412\n"
        "random_stride_64_num_locks  696  2496\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=16; columns: clients\n"
        "\n"
        "                     4\n"
        "procno_8_num_locks  50\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps, record_size=4096; columns: clients\n");
}

// Repetitions with latency percentiles and wait-event samples.
json with_repetitions(json c, const std::vector<double>& p99, const std::vector<json>& waits) {
  c["repetitions"] = json::array();
  for (size_t r = 0; r < p99.size(); ++r)
    c["repetitions"].push_back({{"seed", 1 + r},
                                {"ok", true},
                                {"tps", c["summary"]["tps_median"]},
                                {"latency_ms", {{"mean", p99[r] / 4}, {"p50", p99[r] / 5}, {"p99", p99[r]}}},
                                {"wait_events", waits[r]}});
  return c;
}

TEST_CASE("report --metric prints another measure and names it with its unit (golden)", "[report]") {
  TempDir dir;
  const json waits = {{"CPU", 10}};
  const json cells = json::array({
      with_repetitions(cell("procno", 4, "16", 1000), {0.5, 0.7, 0.6}, {waits, waits, waits}),
      with_repetitions(cell("procno", 16, "16", 3000), {2.25, 2.0}, {waits, waits}),
      cell("procno", 64, "16", 4000),  // no repetitions recorded: no latency
  });
  const std::string path = dir.write("r.json", result_file(cells));
  ReportOptions o;
  o.metric = "p99";
  CHECK(report_text(path, o) ==
        "                      16\n"
        "procno_4_clients   0.600\n"
        "procno_16_clients  2.125\n"
        "procno_64_clients      -\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, p99 latency in ms (median over the repetitions)\n");
  o.metric = "bytes_per_s";
  CHECK(report_text(path, o) ==
        "                       16\n"
        "procno_4_clients   100000\n"
        "procno_16_clients  300000\n"
        "procno_64_clients  400000\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median WAL bytes per second\n");
}

TEST_CASE("report --wait-events: shares per cell, the largest as columns, the rest as other (golden)",
          "[report]") {
  TempDir dir;
  const json many = {{"CPU", 40}, {"LWLock:wal_insert", 30}, {"LWLock:WALWrite", 10}, {"IO:WALSync", 8},
                     {"LWLock:XidGenLock", 6}, {"LWLock:CLogControlLock", 4}, {"LWLock:ProcArray", 1},
                     {"?", 1}};
  const json few = {{"CPU", 90}, {"LWLock:wal_insert", 10}};
  const json cells = json::array({
      with_repetitions(cell("procno", 4, "16", 1000), {1, 1}, {few, few}),
      with_repetitions(cell("procno", 16, "16", 3000), {1, 1}, {many, few}),
      cell("procno", 64, "16", -1),
      cell("procno", 4, "4096", 900),  // no samples
  });
  const std::string path = dir.write("r.json", result_file(cells));
  ReportOptions o;
  o.wait_events = true;
  CHECK(report_text(path, o) ==
        "                      CPU  LWLock:wal_insert  LWLock:WALWrite  IO:WALSync  LWLock:XidGenLock  LWLock:CLogControlLock   other\n"
        "procno_4_clients    90.0%              10.0%             0.0%        0.0%               0.0%                    0.0%    0.0%\n"
        "procno_16_clients   65.0%              20.0%             5.0%        4.0%               3.0%                    2.0%    1.0%\n"
        "procno_64_clients  FAILED             FAILED           FAILED      FAILED             FAILED                  FAILED  FAILED\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, "
        "wait-event shares in % of the samples of the timed windows (all repetitions), "
        "record_size=16; the 6 events with the largest share in any row, "
        "other = the remaining 2 events\n"
        "\n"
        "                  samples\n"
        "procno_4_clients        -\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, "
        "wait-event shares in % of the samples of the timed windows (all repetitions), "
        "record_size=4096; no wait-event samples\n"
        "\n"
        "failed cells (1):\n"
        "  procno_64_clients record_size=16: verify failed: at 0/01A2B3C8: bad prev link\n");
  o.format = "csv";
  CHECK(report_text(path, o) ==
        "# workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, "
        "wait-event shares in % of the samples of the timed windows (all repetitions), "
        "record_size=16; the 6 events with the largest share in any row, "
        "other = the remaining 2 events\n"
        ",CPU,LWLock:wal_insert,LWLock:WALWrite,IO:WALSync,LWLock:XidGenLock,LWLock:CLogControlLock,other\n"
        "procno_4_clients,90.0,10.0,0.0,0.0,0.0,0.0,0.0\n"
        "procno_16_clients,65.0,20.0,5.0,4.0,3.0,2.0,1.0\n"
        "procno_64_clients,FAILED,FAILED,FAILED,FAILED,FAILED,FAILED,FAILED\n"
        "\n"
        "# workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, "
        "wait-event shares in % of the samples of the timed windows (all repetitions), "
        "record_size=4096; no wait-event samples\n"
        ",samples\n"
        "procno_4_clients,-\n"
        "\n"
        "# failed cells (1):\n"
        "# procno_64_clients record_size=16: verify failed: at 0/01A2B3C8: bad prev link\n");
}

TEST_CASE("report --format markdown and csv (golden)", "[report]") {
  TempDir dir;
  const json cells = json::array({
      cell("procno", 4, "16", 1000.4),
      cell("procno", 4, "uniform(16,1024)", 900),
      cell("random_stride", 4, "16", -1),
  });
  const std::string path = dir.write("r.json", result_file(cells));
  ReportOptions o;
  o.format = "markdown";
  CHECK(report_text(path, o) ==
        "|  | 16 | uniform(16,1024) |\n"
        "|:--|--:|--:|\n"
        "| procno_4_clients | 1000 | 900 |\n"
        "| random_stride_4_clients | FAILED | - |\n"
        "\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps\n"
        "\n"
        "failed cells (1):\n"
        "- random_stride_4_clients record_size=16: verify failed: at 0/01A2B3C8: bad prev link\n");
  o.format = "csv";
  o.ratio = "procno";
  CHECK(report_text(path, o) ==
        "# workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps; "
        "in % of procno: 100% = procno's median tps with the same clients and record_size\n"
        ",16,\"uniform(16,1024)\"\n"
        "procno_4_clients,100.0,100.0\n"
        "random_stride_4_clients,FAILED,-\n"
        "\n"
        "# failed cells (1):\n"
        "# random_stride_4_clients record_size=16: verify failed: at 0/01A2B3C8: bad prev link\n");
}

TEST_CASE("report options: one-line errors that name what exists", "[report]") {
  TempDir dir;
  const std::string path = dir.write("r.json", result_file(lock_sweep()));
  auto with = [](auto set) {
    ReportOptions o;
    set(o);
    return o;
  };
  CHECK(report_error(path, with([](ReportOptions& o) { o.columns = "num_lock"; })) ==
        "report: --columns num_lock: not a swept key of " + path +
            "; swept keys: label, clients, record_size, strategy.params.num_locks");
  CHECK(report_error(path, with([](ReportOptions& o) { o.rows = "wal_buffers"; })) ==
        "report: --rows wal_buffers: not a swept key of " + path +
            "; swept keys: label, clients, record_size, strategy.params.num_locks");
  CHECK(report_error(path, with([](ReportOptions& o) { o.ratio = "master"; })) ==
        "report: --ratio master: no such variant in " + path + "; variants: procno, random_stride");
  CHECK(report_error(path, with([](ReportOptions& o) { o.metric = "p95"; })) ==
        "report: --metric p95: unknown; expected one of tps, tps_min, tps_max, tps_rsd, "
        "bytes_per_s, lat_mean, lat_stddev, p50, p90, p99, p999");
  CHECK(report_error(path, with([](ReportOptions& o) { o.format = "html"; })) == "report: --format html: expected text, markdown or csv");
  CHECK(report_error(path, with([](ReportOptions& o) { o.rows = o.columns = "num_locks"; })) ==
        "report: --rows and --columns name the same key, strategy.params.num_locks");
  CHECK(report_error(path, with([](ReportOptions& o) {
          o.wait_events = true;
          o.ratio = "procno";
        })) == "report: --wait-events puts the wait events in the columns; --ratio does not apply to it");
}

TEST_CASE("walbench report options on the command line: exit status and one-line errors", "[report]") {
  TempDir dir;
  const std::string path = dir.write("r.json", result_file(lock_sweep()));
  auto cli = [&](const std::string& args) {
    const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
    std::ostringstream command;
    command << "'" << WALBENCH_BINARY << "' report '" << path << "' " << args << " >'" << out << "' 2>'" << err << "'";
    const int status = std::system(command.str().c_str());
    auto slurp = [](const std::string& p) {
      std::ifstream in(p);
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    };
    return CompareRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  };
  CompareRun r = cli("--columns num_locks --ratio procno --format markdown");
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("| random_stride_4_clients | 150.0% | 150.0% | 150.0% |") != std::string::npos);

  r = cli("--columns locks");
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "walbench: error: report: --columns locks: not a swept key of " + path +
                     "; swept keys: label, clients, record_size, strategy.params.num_locks\n");
}

}  // namespace
}  // namespace walbench
