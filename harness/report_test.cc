// `walbench report` / `compare` on hand-written result files: exact (golden) layout, matching,
// and the errors for files that are not results.
#include "harness/report.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "harness/config.h"

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

TEST_CASE("compare prints NEW/BASE - 1 per cell, the geometric mean and unmatched cells",
          "[report]") {
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
  CHECK(out.str() ==
        "compare: NEW " + next + " vs BASE " + base + " (median tps, NEW/BASE - 1)\n"
        "\n"
        "                                      16   1024\n"
        "insert_locks_waitlist_4_clients   +10.0%  -5.0%\n"
        "insert_locks_waitlist_16_clients       -      -\n"
        "insert_locks_atomic_4_clients     FAILED      -\n"
        "workload emit_message (synchronous_commit=on), storage memory, platform threads, "
        "3 repetitions x 5 s, median tps\n"
        "\n"
        "geometric mean change: +2.2% over 2 cells\n"
        "only in BASE (1):\n"
        "  insert_locks_waitlist_8_clients record_size=16\n"
        "only in NEW (1):\n"
        "  insert_locks_waitlist_16_clients record_size=16\n");
}

TEST_CASE("compare matches on matrix values, not on position", "[report]") {
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
  CHECK(o.find("w_4_clients  +10.0%\n") != std::string::npos);
  CHECK(o.find("w_4_clients  +50.0%\n") != std::string::npos);
  CHECK(o.find("wal.wal_buffers=128") != std::string::npos);
  CHECK(o.find("geometric mean change: +28.5% over 2 cells\n") != std::string::npos);  // sqrt(1.1*1.5)
  CHECK(o.find("only in") == std::string::npos);
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

  const std::string v2 = dir.write("v2.json", R"({"context": {"schema_version": 2}, "cells": []})");
  CHECK_THROWS_WITH(report_command(v2, out, err),
                    v2 + ": result schema_version 2 is not supported (this walbench reads 1)");

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

}  // namespace
}  // namespace walbench
