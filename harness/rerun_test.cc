// Provenance end to end on the simulated platform: every counter of a cell covers its timed
// window (exact per-transaction figures), and a cell of a result file reruns, from the file
// alone, into the identical cell.
#include "harness/rerun.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "harness/cell_json.h"
#include "harness/config.h"
#include "harness/fidelity.h"
#include "harness/report.h"
#include "harness/runner.h"
#include "tests/temp_dir.h"

namespace walbench {
namespace {

using testing::TempDir;

// emit_message with synchronous commit on 16 simulated cores: per transaction one message
// record and one commit record, each inserted under one WALInsert acquisition; one XidGen
// acquisition; one CLOG status set under CLogControlLock.
nlohmann::ordered_json sim_config() {
  return nlohmann::ordered_json::parse(R"({
    "platform": {"kind": "sim", "preset": "icelake_2s", "cores": 16},
    "workload": {"name": "emit_message", "record_size": 100, "transactional": true},
    "commit": {"synchronous_commit": true},
    "run": {"duration_s": 0.01, "warmup_s": 0.002, "progress_interval_s": 0.002, "watchdog_s": 5},
    "matrix": {"strategy": [{"name": "insert_locks", "label": "waitlist", "params": {"insertingat": "waitlist"}},
                            {"name": "single_lock"}],
               "clients": [8]}
  })");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Runs sim_config() into `path` (the result file both tests start from).
void run_sim_config(const std::string& path) {
  RunOptions opts;
  opts.output_path = path;
  opts.config = nlohmann::json(sim_config());
  std::ostringstream out, err;
  REQUIRE(run_matrix(expand_matrix(sim_config(), "sim.json"), opts, out, err) == 0);
}

TEST_CASE("per-transaction lock acquisitions cover exactly the window's transactions",
          "[runner][rerun]") {
  TempDir dir;
  run_sim_config(dir.file("sim.json"));
  const nlohmann::json doc = read_json(dir.file("sim.json"));
  for (const auto& cell : doc["cells"]) {
    INFO(cell["label"]);
    const auto& rep = cell["repetitions"][0];
    const auto& locks = rep["per_txn"]["locks"];
    CHECK(locks["LWLock:wal_insert"]["acquisitions"] == 2.0);  // message + commit
    CHECK(locks["LWLock:XidGenLock"]["acquisitions"] == 1.0);
    CHECK(locks["LWLock:CLogControlLock"]["acquisitions"] == 1.0);
    CHECK(rep["per_txn"]["records"] == 2.0);
    CHECK(rep["per_txn"]["xids"] == 1.0);
    // The window is the timed window, not the whole run: the clients' transaction-aligned
    // count differs from the runner's two reads only by the transactions in flight at its two
    // edges (at most one per client at each), and the lock statistics are that window's.
    const int64_t window_txns = rep["window"]["txns"].get<int64_t>();
    const int64_t txns = rep["txns"].get<int64_t>();
    CHECK(std::llabs(window_txns - txns) <= 2 * 8);
    CHECK(rep["lock_stats"]["LWLock:wal_insert"]["acquisitions"].get<int64_t>() == 2 * window_txns);
    // A 100-byte message makes a 155-byte record (55 + N for N <= 226), 160 MAXALIGNed; the
    // commit record is 44 bytes (PG 15's 34 + the tag), 48 aligned.
    CHECK(rep["per_txn"]["wal_bytes"] == 208.0);
    // The simulator's counters are the window's too: fewer than over the whole run.
    CHECK(rep["platform"]["sim"]["storage_syncs"].get<uint64_t>() > 0);
    CHECK(rep["platform"]["sim"]["storage_syncs"].get<double>() <=
          rep["model"]["fsyncs"].get<double>() + 1);
    // The simulated progress lines carry real latencies (not Little's law).
    const auto& p = rep["progress"][1];
    CHECK(p["lat_ms"].get<double>() > 0);
    CHECK(p["stddev_ms"].get<double>() > 0);
  }
}

TEST_CASE("a simulated cell reruns from the result file alone into the identical cell",
          "[runner][rerun]") {
  TempDir dir;
  const std::string first_path = dir.file("first.json");
  run_sim_config(first_path);

  std::ostringstream out, err;
  RerunOptions ro;
  ro.result_path = first_path;
  ro.cells = {1};
  ro.output_path = dir.file("again.json");
  ro.quiet = true;
  REQUIRE(rerun_command(ro, out, err) == 0);
  const nlohmann::json first = read_json(first_path);
  const nlohmann::json again = read_json(ro.output_path);
  REQUIRE(again["cells"].size() == 1);
  nlohmann::json a = first["cells"][1], b = again["cells"][0];
  CHECK(b["index"] == 1);
  // Setup, repetitions (every counter), summary, warnings: all identical.
  const nlohmann::json diff = nlohmann::json::diff(a, b);
  INFO(diff.dump());
  CHECK(diff.empty());
  CHECK(again["context"]["rerun_of"]["file"] == first_path);
  CHECK(again["context"]["rerun_of"]["cells"] == nlohmann::json::array({1}));

  // The output file is not overwritten without --force; a missing cell is named.
  CHECK_THROWS_WITH(rerun_command(ro, out, err), Catch::Contains("pass --force"));
  ro.cells = {7};
  ro.force = true;
  CHECK_THROWS_WITH(rerun_command(ro, out, err), Catch::Contains("has no cell with index 7"));
}

TEST_CASE("a cell written before CLOG lookups existed reruns without them", "[runner][rerun]") {
  TempDir dir;
  const std::string path = dir.file("first.json");
  run_sim_config(path);
  nlohmann::json cell = read_json(path)["cells"][0];
  CHECK(config_of_cell(cell, path)["clog"]["hint_bit_miss"] == cell["clog"]["hint_bit_miss"]);
  cell["clog"].erase("hint_bit_miss");  // as schema-2 files written before issue 10's lookups
  CHECK(config_of_cell(cell, path)["clog"]["hint_bit_miss"] == 0);
}

TEST_CASE("a cell written before snapshots_per_statement existed reruns with one snapshot", "[runner][rerun]") {
  TempDir dir;
  const std::string path = dir.file("first.json");
  run_sim_config(path);
  nlohmann::json cell = read_json(path)["cells"][0];
  CHECK(cell["clog"]["snapshots_per_statement"] == 2);  // today's default is recorded
  CHECK(config_of_cell(cell, path)["clog"]["snapshots_per_statement"] == 2);
  cell["clog"].erase("snapshots_per_statement");  // as the files written before 2026-12-04
  CHECK(config_of_cell(cell, path)["clog"]["snapshots_per_statement"] == 1);
}

// Every file in results/ may have been made before a setup key existed (or before it was
// recorded at every value): rebuilding each cell from what it records must give back exactly the
// blocks it records, so a rerun runs what the file ran. A key the cell lacks must come back as
// the value such cells ran with (keys_older_cells_lack); today's echo records it, so it is
// checked and then set aside. Fails, for example, when a default changes without
// config_of_cell reading the absent key as the old default.
TEST_CASE("every cell of the shipped simulated results rebuilds to the setup it records", "[runner][rerun]") {
  const std::filesystem::path results = std::filesystem::path(WALBENCH_SOURCE_DIR) / "results";
  size_t files = 0, cells = 0;
  for (const auto& entry : std::filesystem::directory_iterator(results)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name.find("-sim-") == std::string::npos) continue;
    ++files;
    const nlohmann::json doc = read_json(entry.path().string());
    for (const nlohmann::json& cell : doc["cells"]) {
      const std::string where = name + " cell " + std::to_string(cell.value("index", 0));
      const std::vector<CellSpec> one = expand_matrix(config_of_cell(cell, where), where);
      REQUIRE(one.size() == 1);
      nlohmann::json rebuilt = nlohmann::json(cell_setup_json(one.front()));
      for (const KeyOlderCellsLack& k : keys_older_cells_lack()) {
        if (cell[k.block].contains(k.key)) continue;
        INFO(where << " /" << k.block << "/" << k.key << " (not recorded)");
        CHECK(rebuilt[k.block][k.key] == k.value);
        rebuilt[k.block].erase(k.key);
      }
      // platform is left out: a sim cell records the preset file's absolute path where it ran
      for (const char* block : {"strategy", "params", "clients", "workload", "wal", "commit", "clog", "run"}) {
        INFO(where << " /" << block);
        CHECK(rebuilt[block] == cell[block]);
      }
      ++cells;
    }
  }
  CHECK(files >= 5);
  CHECK(cells > 100);
}

TEST_CASE("rerun refuses a file that does not record a cell's setup", "[runner][rerun]") {
  TempDir dir;
  const std::string path = dir.file("old.json");
  std::ofstream(path) << R"({"context": {"schema_version": 1},
    "cells": [{"index": 0, "label": "a", "clients": 1, "ok": true, "strategy": "ideal"}]})";
  RerunOptions ro;
  ro.result_path = path;
  ro.output_path = dir.file("x.json");
  std::ostringstream out, err;
  CHECK_THROWS_WITH(rerun_command(ro, out, err),
                    Catch::Contains("before schema_version 2 do not record a cell's full setup"));
}

}  // namespace
}  // namespace walbench

namespace walbench {

// End to end on the simulator: override variants run, report in one table, match a reference
// CSV by their labels, and rerun from the result file alone into the identical cell.
TEST_CASE("override variants: run, report, compare --reference by label, rerun", "[runner][rerun][variants]") {
  TempDir dir;
  const auto config = nlohmann::ordered_json::parse(R"({
    "platform": {"kind": "sim", "preset": "icelake_2s", "cores": 16},
    "workload": {"name": "emit_message", "record_size": 100, "transactional": true},
    "run": {"duration_s": 0.005, "warmup_s": 0.001, "progress_interval_s": 0, "watchdog_s": 5},
    "strategy": {"name": "insert_locks", "label": "pg17"},
    "matrix": {
      "variants": [{"label": "buffer_mapping", "set": {"wal.buffer_init": "mapping_lock"}},
                   {"label": "buffer_lockfree", "set": {"wal.buffer_init": "lockfree",
                                                        "platform.cross_socket_transfer_ns": 300}}],
      "clients": [2, 8],
      "platform.cores": [4, 16]
    }
  })");
  const std::string path = dir.file("v.json");
  RunOptions opts;
  opts.output_path = path;
  opts.config = nlohmann::json(config);
  std::ostringstream out, err;
  REQUIRE(run_matrix(expand_matrix(config, "v.json"), opts, out, err) == 0);
  const nlohmann::json doc = read_json(path);
  REQUIRE(doc["cells"].size() == 8);
  // Cells: variants, then clients, then platform.cores; each records its resolved setup.
  const nlohmann::json& lf = doc["cells"][7];
  CHECK(lf["label"] == "buffer_lockfree");
  CHECK(lf["set"] == nlohmann::json{{"wal.buffer_init", "lockfree"}, {"platform.cross_socket_transfer_ns", 300}});
  CHECK(lf["wal"]["buffer_init"] == "lockfree");
  CHECK(lf["platform"]["sim"]["cross_socket_transfer_ns"] == 300);
  CHECK(lf["platform"]["sim"]["cores"] == 16);
  CHECK(doc["cells"][6]["platform"]["sim"]["cores"] == 4);
  CHECK(doc["cells"][0]["platform"]["sim"]["cross_socket_transfer_ns"] == 108);
  // The simulator parameter made different cells: 8 clients on 4 cores against 16 cores.
  CHECK(doc["cells"][6]["summary"]["tps_median"] != lf["summary"]["tps_median"]);

  // report: one table per platform.cores value, the variants as rows.
  std::ostringstream rep, rep_err;
  REQUIRE(report_command(path, rep, rep_err) == 0);
  const std::string text = rep.str();
  INFO(text);
  CHECK(text.find("buffer_mapping_2_clients") != std::string::npos);
  CHECK(text.find("buffer_lockfree_8_clients") != std::string::npos);
  size_t tables = 0;
  for (size_t at = text.find("median tps"); at != std::string::npos; at = text.find("median tps", at + 1)) ++tables;
  CHECK(tables == 2);
  CHECK(text.find("platform.cores=4; variants set wal.buffer_init, platform.cross_socket_transfer_ns") !=
        std::string::npos);

  // compare --reference: the CSV's variant names are the labels, unchanged.
  const std::string csv = dir.write("ref.csv",
                                    "variant,clients,tps\n"
                                    "buffer_mapping,2,1000\nbuffer_lockfree,2,1100\n"
                                    "buffer_mapping,8,3000\nbuffer_lockfree,8,3600\n");
  FidelityOptions fo;
  fo.result_path = path;
  fo.reference_path = csv;
  fo.fixes = {"cores=16"};
  const nlohmann::ordered_json cmp = fidelity_compare(doc, load_reference_csv(csv), fo);
  CHECK(cmp["variants"] == nlohmann::ordered_json::array({"buffer_mapping", "buffer_lockfree"}));
  CHECK(cmp["baseline"] == "buffer_mapping");
  REQUIRE(cmp["series"].size() == 1);
  REQUIRE(cmp["series"][0]["curves"].size() == 2);
  CHECK(cmp["series"][0]["curves"][1]["result_label"] == "buffer_lockfree");

  // rerun of an override-variant cell: the identical cell, "set" included.
  RerunOptions ro;
  ro.result_path = path;
  ro.cells = {7};
  ro.output_path = dir.file("again.json");
  ro.quiet = true;
  std::ostringstream rout, rerr;
  REQUIRE(rerun_command(ro, rout, rerr) == 0);
  const nlohmann::json again = read_json(ro.output_path);
  REQUIRE(again["cells"].size() == 1);
  const nlohmann::json diff = nlohmann::json::diff(lf, again["cells"][0]);
  INFO(diff.dump());
  CHECK(diff.empty());
}

}  // namespace walbench
