// Config loading, validation, matrix expansion and --set overrides (harness/config.h).
#include "harness/config.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "core/platform/sim.h"
#include "strategies/strategy.h"
#include "tests/config_text.h"

namespace walbench {
namespace {

using OJson = nlohmann::ordered_json;

// A scratch directory removed at scope exit.
using testing::TempDir;

std::vector<CellSpec> expand(const std::string& text) { return testing::expand_config(text); }
using testing::error_of;

ConfigError load_error(const std::string& path) {
  try {
    load_config_file(path);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError loading " << path);
  throw std::logic_error("unreachable");
}

void check_one_line(const ConfigError& e) {
  const std::string w = e.what();
  CHECK(w.find('\n') == std::string::npos);
  CHECK(w.rfind(e.file + ":", 0) == 0);
  CHECK(w.find("; expected " + e.expected) != std::string::npos);
}

}  // namespace

TEST_CASE("matrix: variants outermost, then clients, then other keys in file order",
          "[config]") {
  const auto cells = expand(R"({
    "matrix": {
      "strategy": [{"name": "single_lock"}, {"name": "insert_locks", "label": "il"}],
      "workload.record_size": [16, 1024],
      "clients": [1, 4],
      "wal.wal_buffers": [8, 16]
    }})");
  REQUIRE(cells.size() == 16);
  for (size_t i = 0; i < cells.size(); ++i) {
    CHECK(cells[i].index == i);
    CHECK(cells[i].total == 16);
  }
  // Odometer: the last key (wal.wal_buffers) turns fastest.
  const auto& c0 = cells[0];
  CHECK(c0.label == "single_lock");
  CHECK(c0.clients == 1);
  CHECK(c0.workload.record_size.value == 16);
  CHECK(c0.wal.wal_buffers == 8);
  CHECK(cells[1].wal.wal_buffers == 16);
  CHECK(cells[1].workload.record_size.value == 16);
  CHECK(cells[2].workload.record_size.value == 1024);
  CHECK(cells[2].wal.wal_buffers == 8);
  CHECK(cells[4].clients == 4);  // clients before the other keys although written after them
  CHECK(cells[4].workload.record_size.value == 16);
  CHECK(cells[8].label == "il");
  CHECK(cells[8].strategy == "insert_locks");
  CHECK(cells[8].clients == 1);
  CHECK(cells[15].label == "il");
  CHECK(cells[15].clients == 4);
  CHECK(cells[15].workload.record_size.value == 1024);
  CHECK(cells[15].wal.wal_buffers == 16);

  CHECK(cells[15].matrix_values == nlohmann::json::parse(
                                       R"({"strategy": "il", "clients": 4,
                                           "workload.record_size": 1024, "wal.wal_buffers": 16})"));

  // Swapping the two other keys in the file swaps which one turns fastest.
  const auto swapped = expand(R"({"strategy": "ideal", "matrix": {
      "wal.wal_buffers": [8, 16], "workload.record_size": [16, 1024]}})");
  REQUIRE(swapped.size() == 4);
  CHECK(swapped[1].workload.record_size.value == 1024);
  CHECK(swapped[1].wal.wal_buffers == 8);
}

TEST_CASE("matrix: counts, scalars and the shape summary", "[config]") {
  const OJson config = OJson::parse(R"({"matrix": {
      "strategy": ["single_lock", "insert_locks", "ideal"],
      "clients": [1, 2, 4, 8],
      "commit.synchronous_commit": [true, false],
      "workload.transactional": true}})");
  const auto cells = expand_matrix(config, "t.json");
  CHECK(cells.size() == 3 * 4 * 2);
  // A scalar is a one-element list: it sets the value but does not vary.
  for (const auto& c : cells) CHECK_FALSE(c.matrix_values.contains("workload.transactional"));
  const MatrixShape shape = matrix_shape(config, "t.json");
  CHECK(shape.cells == 24);
  CHECK(shape.describe() ==
        "3 strategies x 4 clients x 2 commit.synchronous_commit x 1 workload.transactional");

  // No matrix at all: one cell with one client.
  const auto one = expand(R"({"strategy": "single_lock"})");
  REQUIRE(one.size() == 1);
  CHECK(one[0].clients == 1);
  CHECK(one[0].matrix_values.empty());
  CHECK(matrix_shape(OJson::parse(R"({"strategy": "ideal"})"), "t").describe() ==
        "1 strategy x 1 client");
}

TEST_CASE("defaults from spec.h fill every field not set", "[config]") {
  const auto cells = expand(R"({"strategy": {"name": "insert_locks"}})");
  REQUIRE(cells.size() == 1);
  const CellSpec& c = cells[0];
  const CellSpec d;
  CHECK(c.strategy == "insert_locks");
  CHECK(c.label == "insert_locks");
  CHECK(c.strategy_params ==
        nlohmann::json::parse(
            R"({"num_locks": 8, "insertingat": "atomic", "lock_choice": "procno", "xlog": "auto"})"));
  CHECK(c.clients == 1);
  CHECK(c.platform.kind == d.platform.kind);
  CHECK(c.wal.page_size == d.wal.page_size);
  CHECK(c.wal.segment_size == d.wal.segment_size);
  CHECK(c.wal.wal_buffers == d.wal.wal_buffers);
  CHECK(c.wal.storage == d.wal.storage);
  CHECK(c.wal.path == d.wal.path);
  CHECK(c.wal.fsync == d.wal.fsync);
  CHECK(c.wal.buffer_init == d.wal.buffer_init);
  CHECK(c.commit.synchronous_commit == d.commit.synchronous_commit);
  CHECK(c.commit.wal_writer_delay_ms == d.commit.wal_writer_delay_ms);
  CHECK(c.commit.wal_writer_flush_after == d.commit.wal_writer_flush_after);
  CHECK(c.workload.name == d.workload.name);
  CHECK(c.workload.record_size.kind == SizeSpec::Kind::kFixed);
  CHECK(c.workload.record_size.value == d.workload.record_size.value);
  CHECK(c.workload.transactional == d.workload.transactional);
  CHECK(c.workload.client_overhead_us == d.workload.client_overhead_us);
  CHECK(c.run.duration_s == d.run.duration_s);
  CHECK(c.run.warmup_s == d.run.warmup_s);
  CHECK(c.run.repetitions == d.run.repetitions);
  CHECK(c.run.seed == d.run.seed);
  CHECK(c.run.progress_interval_s == d.run.progress_interval_s);
  CHECK(c.run.verify == d.run.verify);
  CHECK(c.run.watchdog_s == d.run.watchdog_s);
}

TEST_CASE("sections override defaults, the matrix overrides sections", "[config]") {
  const auto cells = expand(R"({
    "description": "override order",
    "platform": {"kind": "threads"},
    "wal": {"page_size": 4096, "segment_size": 1048576, "wal_buffers": 64, "storage": "file",
            "path": "/tmp/x", "fsync": false, "buffer_init": "mapping_lock"},
    "commit": {"synchronous_commit": false, "wal_writer_delay_ms": 10,
               "wal_writer_flush_after": 0},
    "workload": {"name": "emit_message", "record_size": 100, "transactional": false,
                 "client_overhead_us": 2.5},
    "run": {"duration_s": 0.5, "warmup_s": 0, "repetitions": 3, "seed": 18446744073709551615,
            "progress_interval_s": 0, "verify": false, "watchdog_s": 0},
    "strategy": {"name": "insert_locks", "params": {"num_locks": 4, "lock_choice": "random_stride"}},
    "matrix": {"wal.wal_buffers": [128], "strategy.params.num_locks": [16, 64]}})");
  REQUIRE(cells.size() == 2);
  const CellSpec& c = cells[1];
  CHECK(c.wal.page_size == 4096);
  CHECK(c.wal.segment_size == 1048576);
  CHECK(c.wal.wal_buffers == 128);  // matrix over section
  CHECK(c.wal.storage == "file");
  CHECK(c.wal.path == "/tmp/x");
  CHECK_FALSE(c.wal.fsync);
  CHECK_FALSE(c.commit.synchronous_commit);
  CHECK(c.commit.wal_writer_delay_ms == 10);
  CHECK(c.commit.wal_writer_flush_after == 0);
  CHECK(c.workload.record_size.value == 100);
  CHECK_FALSE(c.workload.transactional);
  CHECK(c.workload.client_overhead_us == 2.5);
  CHECK(c.run.duration_s == 0.5);
  CHECK(c.run.warmup_s == 0);
  CHECK(c.run.repetitions == 3);
  CHECK(c.run.seed == 18446744073709551615ull);
  CHECK_FALSE(c.run.verify);
  CHECK(c.strategy_params["num_locks"] == 64);  // matrix over the top-level strategy's params
  CHECK(c.strategy_params["lock_choice"] == "random_stride");
  CHECK(c.strategy_params["insertingat"] == "atomic");  // default filled in
  CHECK(c.matrix_values == nlohmann::json::parse(R"({"strategy.params.num_locks": 64})"));
}

TEST_CASE("record sizes: fixed, uniform, exponential", "[config]") {
  const auto cells = expand(R"({"strategy": "ideal", "matrix": {"workload.record_size": [
      64, {"dist": "uniform", "min": 16, "max": 1024}, {"dist": "exponential", "mean": 256},
      {"dist": "exponential", "mean": 100.5, "min": 8, "max": 4096}]}})");
  REQUIRE(cells.size() == 4);
  CHECK(cells[0].workload.record_size.label() == "64");
  CHECK(cells[1].workload.record_size.kind == SizeSpec::Kind::kUniform);
  CHECK(cells[1].workload.record_size.label() == "uniform(16,1024)");
  CHECK(cells[2].workload.record_size.kind == SizeSpec::Kind::kExponential);
  CHECK(cells[2].workload.record_size.min == 1);
  CHECK(cells[2].workload.record_size.max == 1u << 30);
  CHECK(cells[2].workload.record_size.label() == "exp(256)");
  CHECK(cells[3].workload.record_size.label() == "exp(100.5,8..4096)");
  // to_json() is accepted back by the parser and gives the same size.
  for (const auto& c : cells) {
    OJson config = {{"strategy", "ideal"},
                    {"workload", {{"record_size", OJson(c.workload.record_size.to_json())}}}};
    const auto again = expand_matrix(config, "roundtrip");
    CHECK(again[0].workload.record_size.label() == c.workload.record_size.label());
  }
  const ConfigError e = error_of(
      R"({"strategy": "ideal", "workload": {"record_size": {"dist": "uniform", "min": 9, "max": 2}}})");
  CHECK(e.json_path == "/workload/record_size/max");
  CHECK(error_of(R"({"strategy": "ideal", "workload": {"record_size": 0}})").json_path ==
        "/workload/record_size");
  CHECK(error_of(R"({"strategy": "ideal", "workload": {"record_size": 1073741825}})").expected.find(
            "1..1073741824") != std::string::npos);
  CHECK(error_of(R"({"strategy": "ideal", "workload": {"record_size": {"dist": "normal"}}})")
            .json_path == "/workload/record_size/dist");
}

TEST_CASE("workload.driver_us: simulated platform only, and a part of client_overhead_us",
          "[config]") {
  const auto cells = expand_matrix(
      OJson::parse(R"({"strategy": "ideal", "platform": {"kind": "sim"},
                       "workload": {"client_overhead_us": 30, "driver_us": 5}})"),
      "driver");
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].workload.driver_us == 5);
  const ConfigError threads = error_of(
      R"({"strategy": "ideal", "workload": {"client_overhead_us": 30, "driver_us": 5}})");
  CHECK(threads.json_path == "/workload/driver_us");
  CHECK(threads.problem.find("platform.kind is \"threads\"") != std::string::npos);
  const ConfigError more = error_of(
      R"({"strategy": "ideal", "platform": {"kind": "sim"},
          "workload": {"client_overhead_us": 4, "driver_us": 5}})");
  CHECK(more.json_path == "/workload/driver_us");
  CHECK(more.expected == "driver_us <= client_overhead_us x (1 - client_overhead_jitter)");
  // The jitter is the backend's part: the shortest statement drawn must hold the driver's.
  CHECK(error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"},
                     "workload": {"client_overhead_us": 30, "client_overhead_jitter": 0.9,
                                  "driver_us": 5}})")
            .problem.find("= 3") != std::string::npos);
  CHECK(error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"},
                     "workload": {"client_overhead_us": 30, "driver_us": 0.0001}})")
            .problem.find("under 1 ns") != std::string::npos);
  CHECK(error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"},
                     "workload": {"driver_us": -1}})")
            .json_path == "/workload/driver_us");
}

TEST_CASE("errors name the file, the JSON path and what was expected", "[config]") {
  SECTION("misspelled key, with a suggestion") {
    const ConfigError e = error_of(R"({"strategy": "ideal", "wal": {"page_sise": 8192}})");
    CHECK(e.file == "test.json");
    CHECK(e.json_path == "/wal/page_sise");
    CHECK(e.suggestion == "page_size");
    CHECK(e.expected.find("page_size") != std::string::npos);
    CHECK(std::string(e.what()) ==
          "test.json: /wal/page_sise: unknown key \"page_sise\"; expected one of page_size, "
          "segment_size, wal_buffers, storage, memory_mb, path, fsync, buffer_init (did you mean "
          "\"page_size\"?)");
    check_one_line(e);
  }
  SECTION("misspelled top-level key and matrix key") {
    CHECK(error_of(R"({"strategy": "ideal", "matirx": {}})").suggestion == "matrix");
    const ConfigError e = error_of(R"({"strategy": "ideal", "matrix": {"record_size": [1, 2]}})");
    CHECK(e.json_path == "/matrix/record_size");
    CHECK(e.suggestion == "workload.record_size");
    CHECK(error_of(R"({"strategy": "ideal", "matrix": {"clinets": [1]}})").suggestion ==
          "clients");
  }
  SECTION("negative client count") {
    const ConfigError e = error_of(R"({"strategy": "ideal", "matrix": {"clients": [1, -4]}})");
    CHECK(e.json_path == "/matrix/clients/1");
    CHECK(e.problem == "-4 is out of range");
    CHECK(e.expected == "an integer in 1..65535");
    check_one_line(e);
    CHECK(error_of(R"({"strategy": "ideal", "matrix": {"clients": 100001}})").json_path ==
          "/matrix/clients");
  }
  SECTION("wrong type") {
    const ConfigError e = error_of(R"({"strategy": "ideal", "wal": {"page_size": "8192"}})");
    CHECK(e.json_path == "/wal/page_size");
    CHECK(e.problem == "found a string \"8192\"");
    CHECK(e.expected == "a power of two in 1024..65536");
    CHECK(error_of(R"({"strategy": "ideal", "run": {"verify": 1}})").expected == "true or false");
    CHECK(error_of(R"({"strategy": "ideal", "run": {"repetitions": 2.5}})").problem ==
          "found a fractional number 2.5");
    CHECK(error_of(R"({"strategy": "ideal", "wal": []})").json_path == "/wal");
    CHECK(error_of(R"({"strategy": "ideal", "matrix": []})").json_path == "/matrix");
  }
  SECTION("ranges") {
    CHECK(error_of(R"({"strategy": "ideal", "wal": {"page_size": 3000}})").problem ==
          "3000 is not a power of two");
    CHECK(error_of(R"({"strategy": "ideal", "wal": {"wal_buffers": 3}})").json_path ==
          "/wal/wal_buffers");
    CHECK(error_of(R"({"strategy": "ideal", "run": {"duration_s": 0}})").expected ==
          "a number > 0 and <= 1000000");
    CHECK(error_of(R"({"strategy": "ideal", "run": {"repetitions": 1001}})").json_path ==
          "/run/repetitions");
    CHECK(error_of(R"({"strategy": "ideal", "run": {"seed": -1}})").json_path == "/run/seed");
  }
  SECTION("bad choice for insertingat") {
    const ConfigError e = error_of(R"({"matrix": {"strategy": [
        {"name": "insert_locks", "params": {"insertingat": "atomc"}}]}})");
    CHECK(e.json_path == "/matrix/strategy/0/params/insertingat");
    CHECK(e.expected == "one of \"waitlist\", \"atomic\", \"atomic_fastpath\"");
    CHECK(e.suggestion == "atomic");
    check_one_line(e);
  }
  SECTION("num_locks not a power of two, in a variant and in the matrix") {
    ConfigError e = error_of(
        R"({"strategy": {"name": "insert_locks", "params": {"num_locks": 12}}})");
    CHECK(e.json_path == "/strategy/params/num_locks");
    CHECK(e.problem == "12 is not a power of two");
    CHECK(e.expected == "a power of two in 1..1024");
    e = error_of(R"({"strategy": "insert_locks",
                     "matrix": {"strategy.params.num_locks": [8, 2048]}})");
    CHECK(e.json_path == "/matrix/strategy.params.num_locks/1");
    CHECK(e.problem == "2048 is out of range");
  }
  SECTION("unknown parameter") {
    const ConfigError e = error_of(
        R"({"strategy": {"name": "insert_locks", "params": {"numlocks": 16}}})");
    CHECK(e.json_path == "/strategy/params/numlocks");
    CHECK(e.suggestion == "num_locks");
    CHECK(error_of(R"({"strategy": {"name": "single_lock", "params": {"x": 1}}})").expected ==
          "no parameters (single_lock takes none)");
    const ConfigError m = error_of(R"({"matrix": {"strategy": ["single_lock", "insert_locks"],
                                      "strategy.params.num_locks": [1, 2]}})");
    CHECK(m.json_path == "/matrix/strategy.params.num_locks");
    CHECK(m.problem.find("single_lock") != std::string::npos);
  }
  SECTION("unknown strategy") {
    const ConfigError e =
        error_of(R"({"matrix": {"strategy": ["ideal", {"name": "insert_lock"}]}})");
    CHECK(e.json_path == "/matrix/strategy/1/name");
    CHECK(e.suggestion == "insert_locks");
    for (const auto& s : strategies()) CHECK(e.expected.find(s.name) != std::string::npos);
    CHECK(error_of(R"({"strategy": "sinlge_lock"})").json_path == "/strategy");
    CHECK(error_of(R"({"strategy": "sinlge_lock"})").suggestion == "single_lock");
  }
  SECTION("no strategy, or two places for it") {
    CHECK(error_of(R"({})").problem == "no strategy given");
    CHECK(error_of(R"({"strategy": "ideal", "matrix": {"strategy": ["ideal"]}})").json_path ==
          "/strategy");
  }
  SECTION("duplicate labels and values") {
    ConfigError e = error_of(R"({"matrix": {"strategy": [
        {"name": "insert_locks"}, {"name": "insert_locks", "params": {"num_locks": 4}}]}})");
    CHECK(e.json_path == "/matrix/strategy/1");
    CHECK(e.problem.find("duplicate label \"insert_locks\"") != std::string::npos);
    e = error_of(R"({"matrix": {"strategy": [
        {"name": "ideal", "label": "x"}, {"name": "single_lock", "label": "x"}]}})");
    CHECK(e.json_path == "/matrix/strategy/1/label");
    CHECK(error_of(R"({"strategy": "ideal", "matrix": {"clients": [1, 2, 1]}})").json_path ==
          "/matrix/clients/2");
    CHECK(error_of(R"({"strategy": "ideal", "matrix": {"clients": []}})").json_path ==
          "/matrix/clients");
  }
  SECTION("a parameter set by a variant and by the matrix") {
    const ConfigError e = error_of(R"({"matrix": {
        "strategy": [{"name": "insert_locks", "params": {"num_locks": 2}}],
        "strategy.params.num_locks": [4, 8]}})");
    CHECK(e.json_path == "/matrix/strategy/0/params/num_locks");
  }
  SECTION("cross-field checks name the path that set the value") {
    ConfigError e = error_of(R"({"strategy": "ideal", "wal": {"page_size": 65536},
                                 "matrix": {"wal.segment_size": [1048576, 65536]}})");
    CHECK(e.json_path == "/matrix/wal.segment_size/1");
    CHECK(e.expected == "segment_size >= 2 x page_size");
    e = error_of(R"({"strategy": "ideal", "wal": {"page_size": 65536, "wal_buffers": 40000}})");
    CHECK(e.json_path == "/wal/wal_buffers");
    CHECK(error_of(R"({"strategy": "ideal", "wal": {"storage": "file"}})").json_path ==
          "/wal/storage");
  }
}

TEST_CASE("load_config_file: syntax errors with line:column, duplicates, unreadable files",
          "[config]") {
  TempDir dir;
  SECTION("syntax error") {
    const std::string path = dir.write("bad.json", "{\n  \"strategy\": \"ideal\",\n  \"run\": {\"duration_s\": 2,}\n}\n");
    const ConfigError e = load_error(path);
    CHECK(e.line == 3);
    CHECK(e.column == 27);
    CHECK(e.json_path.empty());
    const std::string w = e.what();
    CHECK(w.rfind(path + ":3:27: syntax error", 0) == 0);
    CHECK(w.find('\n') == std::string::npos);
  }
  SECTION("truncated file") {
    const ConfigError e = load_error(dir.write("cut.json", "{\"strategy\": \"ideal\",\n"));
    CHECK(e.line == 2);
  }
  SECTION("duplicate key") {
    const ConfigError e = load_error(
        dir.write("dup.json", R"({"strategy": "ideal", "matrix": {"clients": [1], "clients": [2]}})"));
    CHECK(e.json_path == "/matrix/clients");
    CHECK(e.problem == "duplicate key \"clients\"");
    // Duplicates inside arrays of objects get their index.
    CHECK(load_error(dir.write("dup2.json", R"({"matrix": {"strategy": [
        {"name": "ideal"}, {"name": "ideal", "name": "single_lock"}]}})"))
              .json_path == "/matrix/strategy/1/name");
  }
  SECTION("unreadable, empty, not an object") {
    const ConfigError e = load_error((dir.path / "missing.json").string());
    CHECK(e.problem.find("cannot read") != std::string::npos);
    CHECK(load_error(dir.path.string()).problem == "is a directory");
    CHECK(load_error(dir.write("empty.json", "\n")).problem == "the file is empty");
    CHECK(load_error(dir.write("list.json", "[1]")).problem == "the config is a list");
  }
  SECTION("file order is kept") {
    const OJson c = load_config_file(dir.write(
        "order.json", R"({"strategy": "ideal", "matrix": {"wal.wal_buffers": [8, 16],
                         "workload.record_size": [16, 32]}})"));
    const auto cells = expand_matrix(c, "order.json");
    CHECK(cells[1].workload.record_size.value == 32);
  }
}

TEST_CASE("apply_override: --set PATH=VALUE", "[config]") {
  OJson c = OJson::parse(R"({"strategy": "insert_locks", "run": {"duration_s": 5}})");
  apply_override(c, "run.duration_s=2");
  apply_override(c, "wal.storage=file");  // not JSON: a string
  apply_override(c, "wal.path=/tmp/wal");
  apply_override(c, "matrix.clients=[1,2]");
  apply_override(c, "matrix.workload.record_size=[16,64]");
  apply_override(c, "strategy.params.num_locks=16");  // creates the params object
  apply_override(c, "workload.record_size.dist=uniform");
  CHECK(c["run"]["duration_s"] == 2);
  CHECK(c["wal"]["storage"] == "file");
  CHECK(c["matrix"]["clients"] == OJson::parse("[1,2]"));
  CHECK(c["matrix"]["workload.record_size"] == OJson::parse("[16,64]"));
  CHECK(c["strategy"]["params"]["num_locks"] == 16);
  c["workload"].erase("record_size");
  const auto cells = expand_matrix(c, "t.json");
  REQUIRE(cells.size() == 4);
  CHECK(cells[0].run.duration_s == 2);
  CHECK(cells[3].clients == 2);
  CHECK(cells[3].workload.record_size.value == 64);

  nlohmann::json plain = {{"strategy", "ideal"}};
  apply_override(plain, "run.seed=7");
  CHECK(plain["run"]["seed"] == 7);

  auto set_error = [](const std::string& assignment) {
    OJson cfg = OJson::parse(R"({"strategy": "ideal", "run": 3})");
    try {
      apply_override(cfg, assignment);
    } catch (const ConfigError& e) {
      return e;
    }
    FAIL("no error for --set " << assignment);
    throw std::logic_error("unreachable");
  };
  ConfigError e = set_error("run.duraton_s=2");
  CHECK(e.file == "--set run.duraton_s=2");
  CHECK(e.json_path == "/run/duraton_s");
  CHECK(e.suggestion == "duration_s");
  CHECK(std::string(e.what()).rfind("--set run.duraton_s=2: /run/duraton_s: unknown key", 0) == 0);
  CHECK(set_error("matrix.workload.recordsize=[1]").suggestion == "workload.record_size");
  CHECK(set_error("wall.page_size=1").suggestion == "wal");
  CHECK(set_error("run.duration_s").problem == "not an assignment");
  CHECK(set_error("=3").problem == "not an assignment");
  CHECK(set_error("run..seed=3").file == "--set run..seed=3");
  CHECK(set_error("wal.page_size.x=1").problem.find("too deep") != std::string::npos);
}

TEST_CASE("load_configs: several files, overrides, and errors naming the --set", "[config]") {
  TempDir dir;
  const std::string a = dir.write("a.json", R"({"strategy": "ideal", "matrix": {"clients": [1, 2]}})");
  const std::string b = dir.write(
      "b.json", R"({"matrix": {"strategy": ["single_lock", "insert_locks"], "clients": [4]}})");

  const LoadedConfigs both = load_configs({a, b}, {"run.duration_s=0.5"});
  REQUIRE(both.cells.size() == 4);
  CHECK(both.cells[0].strategy == "ideal");
  CHECK(both.cells[1].clients == 2);
  CHECK(both.cells[2].strategy == "single_lock");
  CHECK(both.cells[3].strategy == "insert_locks");
  for (size_t i = 0; i < 4; ++i) {
    CHECK(both.cells[i].index == i);
    CHECK(both.cells[i].total == 4);
    CHECK(both.cells[i].run.duration_s == 0.5);
  }
  CHECK(both.paths == std::vector<std::string>{a, b});
  const nlohmann::json combined = both.combined();
  REQUIRE(combined.is_array());
  CHECK(combined.size() == 2);
  CHECK(combined[1]["run"]["duration_s"] == 0.5);

  const LoadedConfigs one = load_configs({a}, {});
  CHECK(one.combined().is_object());
  CHECK(one.cells[1].total == 2);

  // A bad value that came from a --set names the --set; a bad value in the file names the file.
  try {
    load_configs({a}, {"matrix.clients=[1,-2]"});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.file == "--set matrix.clients=[1,-2]");
    CHECK(e.json_path == "/matrix/clients/1");
  }
  try {
    load_configs({a}, {"run.seed=1"});
    load_configs({dir.write("c.json", R"({"strategy": "ideal", "run": {"seed": "x"}})")},
                 {"run.duration_s=1"});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.file.find("c.json") != std::string::npos);
    CHECK(e.json_path == "/run/seed");
  }
}

TEST_CASE("config_hash is canonical", "[config]") {
  const auto h1 = config_hash(nlohmann::json::parse(R"({"a": 1, "b": [1, 2], "c": {"x": true}})"));
  const auto h2 = config_hash(OJson::parse(R"({ "c": {"x": true}, "b": [1,2],   "a": 1 })"));
  const auto h3 = config_hash(nlohmann::json::parse(R"({"a": 2, "b": [1, 2], "c": {"x": true}})"));
  CHECK(h1 == h2);
  CHECK(h1 != h3);
  CHECK(h1.size() == 16);
  CHECK(h1.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(config_hash(nlohmann::json::object()) == "08f44b07b5901a25");  // FNV-1a 64 of "{}"
}

TEST_CASE("closest_match", "[config]") {
  const std::vector<std::string> keys = {"duration_s", "warmup_s", "repetitions", "seed"};
  CHECK(closest_match("duraton_s", keys) == "duration_s");
  CHECK(closest_match("Seed", keys) == "seed");
  CHECK(closest_match("repetitoins", keys) == "repetitions");  // transposition
  CHECK(closest_match("colour", keys).empty());
  CHECK(closest_match("", keys).empty());
  CHECK(closest_match("record_size", {"clients", "workload.record_size"}) ==
        "workload.record_size");
}

TEST_CASE("every shipped config in configs/ validates", "[config]") {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(WALBENCH_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    const LoadedConfigs loaded = load_configs({entry.path().string()}, {});
    CHECK(loaded.cells.size() == loaded.shapes.at(0).cells);
    CHECK(config_errors(entry.path().string(), {}).empty());
    ++n;
  }
  CHECK(n > 0);
}

// ---------------------------------------------------------------------------------------------
// Preset files and the resolved machine of a sim cell

namespace {

// Changes the working directory for the scope of a test.
struct InDirectory {
  std::filesystem::path previous = std::filesystem::current_path();
  explicit InDirectory(const std::filesystem::path& dir) { std::filesystem::current_path(dir); }
  ~InDirectory() { std::filesystem::current_path(previous); }
};

const nlohmann::json& sim_of(const CellSpec& c) { return c.platform.sim; }

}  // namespace

TEST_CASE("preset files: relative to the config's directory; a --set one to the current one",
          "[config]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "configs");
  std::filesystem::create_directories(dir.path / "elsewhere");
  // The same name in three places, each with another core count.
  dir.write("configs/m.json", R"({"preset": "milan_1s", "cores": 16})");
  dir.write("elsewhere/m.json", R"({"cores": 24, "sockets": 1})");
  const std::string cfg = dir.write(
      "configs/c.json",
      R"({"platform": {"kind": "sim", "preset": "m.json", "smt": 2}, "strategy": "ideal"})");
  InDirectory cwd(dir.path / "elsewhere");

  const LoadedConfigs loaded = load_configs({cfg}, {});
  REQUIRE(loaded.cells.size() == 1);
  const nlohmann::json& sim = sim_of(loaded.cells[0]);
  CHECK(sim["cores"] == 16);  // configs/m.json, not elsewhere/m.json
  CHECK(sim["same_cluster_transfer_ns"] == 23);  // its base, milan_1s
  CHECK(sim["smt"] == 2);                        // the config's own key over the file
  CHECK(sim["preset"] == "m.json");              // the name as given
  CHECK(sim["preset_file"] ==
        (std::filesystem::absolute(dir.path) / "configs" / "m.json").lexically_normal().string());
  // Every machine parameter is there, with no other key.
  const nlohmann::json every_key = SimConfig().to_json();
  for (auto it = every_key.begin(); it != every_key.end(); ++it) CHECK(sim.contains(it.key()));
  CHECK(sim.size() == SimConfig().to_json().size() + 2);

  // A --set value is the user's, typed relative to where they are.
  const LoadedConfigs set = load_configs({cfg}, {"platform.preset=m.json"});
  CHECK(sim_of(set.cells[0])["cores"] == 24);
  CHECK(sim_of(set.cells[0])["preset_file"] ==
        (std::filesystem::absolute(dir.path) / "elsewhere" / "m.json").lexically_normal().string());

  // Not next to the config, nor in presets/: the error names both places and the --set.
  std::filesystem::remove(dir.path / "elsewhere" / "m.json");
  try {
    load_configs({cfg}, {"platform.preset=m.json"});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.file == "--set platform.preset=m.json");
    CHECK(e.json_path == "/platform/preset");
    CHECK(e.problem.find("preset file \"m.json\" not found") != std::string::npos);
  }

  // An error inside the file names the config's pointer, the file read and the key in it.
  dir.write("configs/m.json", R"({"cores": "many"})");
  try {
    load_configs({cfg}, {});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.file == cfg);
    CHECK(e.json_path == "/platform/preset");
    CHECK(std::string(e.what()).find("/platform/preset: " + (dir.path / "configs" / "m.json").string() +
                                     ": /cores: expected a non-negative integer") !=
          std::string::npos);
  }

  // A builtin preset has a name and no file; no preset at all, neither.
  const auto builtin = expand(R"({"platform": {"kind": "sim", "preset": "milan_2s"}, "strategy": "ideal"})");
  CHECK(sim_of(builtin[0])["preset"] == "milan_2s");
  CHECK(!sim_of(builtin[0]).contains("preset_file"));
  const auto bare = expand(R"({"platform": {"kind": "sim", "cores": 8}, "strategy": "ideal"})");
  CHECK(!sim_of(bare[0]).contains("preset"));
  CHECK(sim_of(bare[0])["cores"] == 8);
  CHECK(sim_of(bare[0])["cross_socket_transfer_ns"] == SimConfig().cross_socket_transfer_ns);
  // platform.kind swept to sim from threads: the default machine, every key.
  const auto swept = expand(R"({"strategy": "ideal", "matrix": {"platform.kind": ["threads", "sim"]}})");
  CHECK(sim_of(swept[1]) == SimConfig().to_json());
}

TEST_CASE("the resolved machine round-trips through SimConfig::from_json without its file",
          "[config]") {
  TempDir dir;
  std::vector<std::string> presets = SimConfig::preset_names();
  const std::string file =
      dir.write("calibrated.json", R"({"description": "a measured machine", "preset": "cascadelake_2s",
                                       "cores": 12, "sockets": 1, "fsync_ns": 1234, "placement": "compact",
                                       "wake_jitter": 0.05, "copy_bytes_per_ns": 7.5})");
  presets.push_back(file);
  for (const std::string& name : presets) {
    INFO(name);
    const nlohmann::json given = {{"kind", "sim"}, {"preset", name}, {"smt", 2}};
    const SimConfig machine = SimConfig::from_json(given, "/platform");
    const nlohmann::json resolved = SimConfig::resolved_json(given, "/platform");
    CHECK(resolved["preset"] == name);
    CHECK(resolved.contains("preset_file") == (name == file));
    // Feeding the resolved form back gives the identical machine, every field...
    CHECK(SimConfig::from_json(resolved, "/platform").to_json() == machine.to_json());
    // ... and the same resolved form (what a re-run of a result cell records).
    CHECK(SimConfig::resolved_json(resolved, "/platform") == resolved);
  }
  // Where the file no longer exists: the resolved form does not need it.
  const nlohmann::json resolved =
      SimConfig::resolved_json({{"preset", file}, {"cores", 6}}, "/platform");
  const SimConfig before = SimConfig::from_json(resolved, "/platform");
  std::filesystem::remove(file);
  CHECK_THROWS_WITH(SimConfig::from_json({{"preset", file}, {"cores", 6}}, "/platform"),
                    Catch::Contains("not found"));
  const SimConfig after = SimConfig::from_json(resolved, "/platform");
  CHECK(after.to_json() == before.to_json());
  CHECK(after.cores == 6);
  CHECK(after.fsync_ns == 1234);
  CHECK(after.copy_bytes_per_ns == 7.5);
  CHECK(after.placement == SimPlacement::kCompact);

  // preset_file belongs to the resolved form only: next to a partial object it is refused,
  // so that nobody takes it for a way to name a file.
  CHECK_THROWS_WITH(SimConfig::from_json({{"preset_file", file}, {"cores", 6}}, "/platform"),
                    Catch::Contains("/platform/preset_file: walbench writes this key") &&
                        Catch::Contains("name the file in \"preset\" instead"));
  nlohmann::json no_file = resolved;
  no_file["preset_file"] = 3;
  CHECK_THROWS_WITH(SimConfig::from_json(no_file, "/platform"), Catch::Contains("expected a string"));
  // A resolved cell's values are still validated.
  nlohmann::json bad = resolved;
  bad["cores"] = 0;
  CHECK_THROWS_WITH(SimConfig::from_json(bad, "/platform"), Catch::Contains("/platform/cores"));
}

// ---------------------------------------------------------------------------------------------
// Every error of a config (walbench validate)

TEST_CASE("config_errors reports every independent error, each as load_configs would",
          "[config]") {
  TempDir dir;
  // Three errors in three places: a misspelled section key, a bad matrix item, a cross-field
  // rule; the good values around them must not be reported.
  const std::string three = dir.write("three.json", R"({
    "strategy": "insert_locks",
    "wal": {"page_sise": 8192, "wal_buffers": 64},
    "commit": {"wal_writer_delay_ms": 10},
    "workload": {"name": "tpcb_like", "transactional": false},
    "matrix": {"clients": [1, -4, 8], "workload.record_size": [16, 64]}
  })");
  const std::vector<ConfigError> errors = config_errors(three, {});
  std::vector<std::string> paths;
  for (const auto& e : errors) paths.push_back(e.json_path);
  CHECK(paths == std::vector<std::string>{"/wal/page_sise", "/matrix/clients/1",
                                          "/workload/transactional"});
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].suggestion == "page_size");
  CHECK(errors[1].problem == "-4 is out of range");
  CHECK(errors[2].problem.find("tpcb_like is always transactional") != std::string::npos);
  for (const auto& e : errors) {
    check_one_line(e);
    CHECK(e.file == three);
  }
  // The first of them is what a run stops at.
  try {
    load_configs({three}, {});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == errors[0].what());
  }

  // Bad --set arguments, and values that came from a --set, are reported against the --set.
  const std::string ok = dir.write("ok.json", R"({"strategy": "ideal", "run": {"seed": "x"}})");
  const auto with_sets = config_errors(ok, {"run.duraton_s=1", "run.repetitions=0"});
  REQUIRE(with_sets.size() == 3);
  CHECK(with_sets[0].file == "--set run.duraton_s=1");
  CHECK(with_sets[1].json_path == "/run/seed");  // in the order of the keys in the config
  CHECK(with_sets[1].file == ok);
  CHECK(with_sets[2].json_path == "/run/repetitions");
  CHECK(with_sets[2].file == "--set run.repetitions=0");

  // A failed variant is one error, not also "no strategy given"; a cross-field error repeated
  // in every cell is reported once.
  const auto variant = config_errors(
      dir.write("v.json", R"({"strategy": "insert_lock", "wal": {"segment_size": 8192},
                              "matrix": {"clients": [1, 2, 4]}})"),
      {});
  REQUIRE(variant.size() == 1);
  CHECK(variant[0].suggestion == "insert_locks");
  const auto per_cell = config_errors(
      dir.write("p.json", R"({"strategy": "ideal", "wal": {"segment_size": 8192},
                              "matrix": {"clients": [1, 2, 4]}})"),
      {});
  REQUIRE(per_cell.size() == 1);
  CHECK(per_cell[0].json_path == "/wal/segment_size");
  // A syntax error is the only one: nothing past it can be read.
  const auto syntax = config_errors(dir.write("s.json", "{\"strategy\": \"ideal\",}"), {});
  REQUIRE(syntax.size() == 1);
  CHECK(syntax[0].line == 1);
  // A good config has none.
  CHECK(config_errors(dir.write("g.json", R"({"strategy": "ideal"})"), {}).empty());
}

namespace {

struct CommandResult {
  int rc = -1;
  std::string out, err;
};

CommandResult run_walbench(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + WALBENCH_BINARY + "' " + args +
                          " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace

TEST_CASE("walbench validate prints every error, one line each, and exits 2", "[config]") {
  TempDir dir;
  dir.write("three.json", R"({"strategy": "ideal", "run": {"duraton_s": 2, "seed": -1},
                             "matrix": {"clients": [0, 2]}})");
  dir.write("good.json", R"({"strategy": "ideal"})");
  const CommandResult r = run_walbench(dir, "validate three.json good.json");
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 3);
  CHECK(r.err.find("walbench: error: three.json: /run/duraton_s: unknown key") == 0);
  CHECK(r.err.find("\nwalbench: error: three.json: /run/seed: -1 is out of range") !=
        std::string::npos);
  CHECK(r.err.find("\nwalbench: error: three.json: /matrix/clients/0: 0 is out of range") !=
        std::string::npos);
  CHECK(r.out == "good.json: ok, 1 cell (1 strategy x 1 client), at least 6 s of timed runs "
                 "(wall clock)\n");
}

// ---------------------------------------------------------------------------------------------
// Time a run takes, as validate says it

TEST_CASE("run_time_summary: wall clock for threads cells, virtual time for sim cells",
          "[config]") {
  const auto threads = expand(R"({"strategy": "ideal", "run": {"duration_s": 50, "warmup_s": 10,
                                  "repetitions": 2}, "matrix": {"clients": [1, 2]}})");
  CHECK(run_time_summary(threads) == "at least 4 min of timed runs (wall clock)");
  // 168 sim cells of 0.12 virtual seconds: no wall-clock figure at all.
  const auto sim = expand(R"({"strategy": "ideal", "platform": {"kind": "sim"},
                              "run": {"duration_s": 0.1, "warmup_s": 0.02},
                              "matrix": {"clients": [1, 2, 4], "workload.record_size": [16, 64]}})");
  const std::string s = run_time_summary(sim);
  CHECK(s == "virtual time per cell 0.12 s (0.72 s in all); real time depends on clients x "
             "duration, not estimated");
  CHECK(s.find("at least") == std::string::npos);
  const auto both = expand(R"({"strategy": "ideal", "run": {"duration_s": 1, "warmup_s": 0},
                               "matrix": {"platform.kind": ["threads", "sim"], "run.duration_s": [1, 2]}})");
  CHECK(run_time_summary(both) ==
        "2 threads cells: at least 3 s of timed runs (wall clock); 2 sim cells: virtual time per "
        "cell 1 s to 2 s (3 s in all); real time depends on clients x duration, not estimated");
}

// ---------------------------------------------------------------------------------------------
// Host limits of sim cells

TEST_CASE("sim cells past vm.max_map_count or memory fail at validation, naming the limit",
          "[config]") {
  // Fake limits: 3000 mappings allow (3000 - 1024) / 2 - 1 = 987 clients (two mappings per
  // fiber: clients + the WAL writer).
  HostLimits small;
  small.max_map_count = 3000;
  set_host_limits_for_testing(&small);
  struct Restore {
    ~Restore() { set_host_limits_for_testing(nullptr); }
  } restore;

  const std::string sim = R"({"strategy": "ideal", "platform": {"kind": "sim"}, "matrix": {"clients": [1, 987, 988]}})";
  const ConfigError e = error_of(sim);
  CHECK(e.json_path == "/matrix/clients/2");
  CHECK(e.problem.find("988 simulated clients need about 3002 memory mappings") != std::string::npos);
  CHECK(e.problem.find("vm.max_map_count of 3000") != std::string::npos);
  CHECK(e.expected.find("at most 987 clients") != std::string::npos);
  CHECK(e.expected.find("sudo sysctl -w vm.max_map_count=65536") != std::string::npos);
  check_one_line(e);
  CHECK(expand(R"({"strategy": "ideal", "platform": {"kind": "sim"}, "matrix": {"clients": [1, 987]}})")
            .size() == 2);
  // validate reports it beside a cross-field error of the same cell.
  TempDir dir;
  const auto both = config_errors(
      dir.write("both.json", R"({"strategy": "ideal", "platform": {"kind": "sim"},
                                 "wal": {"segment_size": 8192}, "matrix": {"clients": [988]}})"),
      {});
  REQUIRE(both.size() == 2);
  CHECK(both[0].json_path == "/wal/segment_size");
  CHECK(both[1].json_path == "/matrix/clients/0");
  // Threads cells have no fibers.
  CHECK(expand(R"({"strategy": "ideal", "matrix": {"clients": [1, 988]}})").size() == 2);
  // The top-level clients default (1) has no path to name: the error names the file.
  small.max_map_count = 1000;
  CHECK(error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"}})").json_path.empty());

  // Memory: 16 KiB resident per fiber; under strict overcommit, the whole stacks.
  small.max_map_count = 0;  // unknown: not checked
  small.memory_bytes = 100 * 16 * 1024;
  CHECK(expand(R"({"strategy": "ideal", "platform": {"kind": "sim"}, "matrix": {"clients": [99]}})").size() == 1);
  const ConfigError m = error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"}, "matrix": {"clients": [100]}})");
  CHECK(m.problem.find("100 simulated clients need about 1 MiB") != std::string::npos);
  CHECK(m.problem.find("memory of 1 MiB") != std::string::npos);
  small.strict_overcommit = true;
  small.memory_bytes = uint64_t{1} << 30;  // 1 GiB of commit: 4000 stacks of 256 KiB + 4 KiB
  const ConfigError strict = error_of(R"({"strategy": "ideal", "platform": {"kind": "sim"}, "matrix": {"clients": [4200]}})");
  CHECK(strict.problem.find("vm.overcommit_memory is 2") != std::string::npos);
  CHECK(strict.problem.find("CommitLimit of 1024 MiB") != std::string::npos);
  CHECK(expand(R"({"strategy": "ideal", "platform": {"kind": "sim", "stack_kib": 64}, "matrix": {"clients": [4200]}})").size() == 1);
}

}  // namespace walbench

namespace walbench {

// ---- matrix "variants": override variants ---------------------------------------------------

TEST_CASE("override variants: label, set paths applied, order and the crossing with strategies",
          "[config][variants]") {
  SECTION("one strategy: the cell's label is the variant's") {
    auto cells = expand(R"({
      "strategy": {"name": "insert_locks", "label": "pg17"},
      "wal": {"wal_buffers": 64},
      "matrix": {
        "clients": [1, 4],
        "variants": [
          {"label": "buffer_mapping", "set": {"wal.buffer_init": "mapping_lock"}},
          {"label": "buffer_lockfree", "set": {"wal.buffer_init": "lockfree", "wal.wal_buffers": 128,
                                               "clog.strategy": "clog_group_update",
                                               "platform.atomics": "emulated",
                                               "workload.name": "simple_update",
                                               "strategy.params.num_locks": 16}}
        ]
      }
    })");
    // Variants come right after the strategy variants, before clients, wherever they are written.
    REQUIRE(cells.size() == 4);
    CHECK(cells[0].label == "buffer_mapping");
    CHECK(cells[0].clients == 1);
    CHECK(cells[1].label == "buffer_mapping");
    CHECK(cells[1].clients == 4);
    CHECK(cells[2].label == "buffer_lockfree");
    const CellSpec& a = cells[0];
    const CellSpec& b = cells[3];
    CHECK(a.strategy == "insert_locks");
    CHECK(a.wal.buffer_init == "mapping_lock");
    CHECK(a.wal.wal_buffers == 64);
    CHECK(a.clog.strategy == "clog_exclusive");
    CHECK(a.platform.atomics == "native");
    CHECK(a.strategy_params["num_locks"] == 8);
    CHECK(b.wal.buffer_init == "lockfree");
    CHECK(b.wal.wal_buffers == 128);
    CHECK(b.clog.strategy == "clog_group_update");
    CHECK(b.platform.atomics == "emulated");
    CHECK(b.workload.name == "simple_update");
    CHECK(b.strategy_params["num_locks"] == 16);
    // The matrix records the variant like a strategy variant; the cell records what it set.
    CHECK(b.matrix_values == nlohmann::json{{"variants", "buffer_lockfree"}, {"clients", 4}});
    CHECK(a.variant_set == nlohmann::json{{"wal.buffer_init", "mapping_lock"}});
    CHECK(b.variant_set.size() == 6);
    CHECK(b.variant_set["strategy.params.num_locks"] == 16);
  }

  SECTION("several strategies: the lists cross, labels <strategy>+<variant>, strategies outermost") {
    auto cells = expand(R"({
      "matrix": {
        "strategy": [{"name": "insert_locks", "label": "pg17"}, "single_lock"],
        "variants": [{"label": "native", "set": {}},
                     {"label": "no_spinlocks", "set": {"platform.spinlocks": "semaphore"}}],
        "clients": [2]
      }
    })");
    REQUIRE(cells.size() == 4);
    std::vector<std::string> labels;
    for (const auto& c : cells) labels.push_back(c.label);
    CHECK(labels == std::vector<std::string>{"pg17+native", "pg17+no_spinlocks",
                                             "single_lock+native", "single_lock+no_spinlocks"});
    CHECK(cells[1].platform.spinlocks == "semaphore");
    CHECK(cells[2].platform.spinlocks == "native");
    CHECK(cells[2].strategy == "single_lock");
    CHECK(cells[3].matrix_values ==
          nlohmann::json{{"strategy", "single_lock"}, {"variants", "no_spinlocks"}});
    CHECK(cells[0].variant_set == nlohmann::json::object());
  }

  SECTION("the shape counts variants; a single variant is no matrix value") {
    const auto shape = matrix_shape(OJson::parse(R"({"strategy": "ideal", "matrix": {
        "variants": [{"label": "a", "set": {}}, {"label": "b", "set": {"wal.fsync": false}},
                     {"label": "c", "set": {"commit.synchronous_commit": false}}],
        "clients": [1, 2]}})"),
                                   "t.json");
    CHECK(shape.cells == 6);
    CHECK(shape.describe() == "1 strategy x 3 variants x 2 clients");
    auto one = expand(R"({"strategy": "ideal", "matrix": {"variants": {"label": "only", "set": {"wal.fsync": false}}}})");
    REQUIRE(one.size() == 1);
    CHECK(one[0].label == "only");
    CHECK_FALSE(one[0].wal.fsync);
    CHECK(one[0].matrix_values == nlohmann::json::object());
  }

  SECTION("--set reaches matrix.variants") {
    OJson config = OJson::parse(R"({"strategy": "ideal"})");
    apply_override(config, R"(matrix.variants=[{"label": "x", "set": {"wal.fsync": false}}])");
    auto cells = expand_matrix(config, "t.json");
    REQUIRE(cells.size() == 1);
    CHECK(cells[0].label == "x");
  }
}

TEST_CASE("override variants: every error names the file, the set entry's JSON path and what was expected",
          "[config][variants]") {
  SECTION("one at a time, as run reports them") {
    auto e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [
        {"label": "a", "set": {}}, {"label": "b", "set": {"wal.buffer_init": "lockfre"}}]}})");
    CHECK(e.file == "test.json");
    CHECK(e.json_path == "/matrix/variants/1/set/wal.buffer_init");
    CHECK(e.suggestion == "lockfree");
    CHECK(std::string(e.what()).rfind("test.json: /matrix/variants/1/set/wal.buffer_init: ", 0) == 0);
    check_one_line(e);

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a", "set": {"wal.bufer_init": 1}}]}})");
    CHECK(e.json_path == "/matrix/variants/0/set/wal.bufer_init");
    CHECK(e.problem == "unknown config path \"wal.bufer_init\"");
    CHECK(e.suggestion == "wal.buffer_init");

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"set": {}}]}})");
    CHECK(e.json_path == "/matrix/variants/0");
    CHECK(e.problem == "the variant has no \"label\"");

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a"}]}})");
    CHECK(e.problem == "the variant \"a\" has no \"set\"");

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a b", "set": {}}]}})");
    CHECK(e.json_path == "/matrix/variants/0/label");

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [
        {"label": "a", "set": {}}, {"label": "a", "set": {"wal.fsync": false}}]}})");
    CHECK(e.json_path == "/matrix/variants/1/label");
    CHECK(e.problem == "duplicate label \"a\" (variant 0 has it too)");

    e = error_of(R"({"strategy": "ideal", "matrix": {"wal.buffer_init": ["mapping_lock", "lockfree"],
        "variants": [{"label": "a", "set": {"wal.buffer_init": "lockfree"}}]}})");
    CHECK(e.json_path == "/matrix/variants/0/set/wal.buffer_init");
    CHECK(e.problem == "\"wal.buffer_init\" is set here and swept by /matrix/wal.buffer_init");

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a", "set": {"strategy.name": "x"}}]}})");
    CHECK(e.problem.find("cannot choose the strategy") != std::string::npos);
    CHECK(e.expected.find("matrix.strategy") != std::string::npos);

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a", "set": {"strategy.params.num_locks": 8}}]}})");
    CHECK(e.json_path == "/matrix/variants/0/set/strategy.params.num_locks");
    CHECK(e.problem.find("has no parameter \"num_locks\"") != std::string::npos);

    e = error_of(R"({"strategy": "ideal", "matrix": {"variants": [{"label": "a", "set": []}]}})");
    CHECK(e.json_path == "/matrix/variants/0/set");
  }

  SECTION("validate collects them all") {
    TempDir dir;
    const std::string path = dir.write("v.json", R"({
      "strategy": {"name": "insert_locks"},
      "matrix": {
        "variants": [
          {"label": "a", "set": {"wal.buffer_init": "lockfre", "wal.fsync": false}},
          {"label": "b", "set": {"wal.bufer_init": "lockfree", "strategy.params.num_locks": 3}},
          {"set": {}},
          {"label": "a", "set": {"workload.record_size": 64}},
          {"label": "c", "set": {"wal": {}, "clients": 3}}
        ],
        "workload.record_size": [16, 32]
      }
    })");
    const std::vector<ConfigError> errors = config_errors(path, {});
    std::vector<std::string> paths;
    for (const auto& e : errors) paths.push_back(e.json_path);
    CHECK(paths == std::vector<std::string>{
                       "/matrix/variants/0/set/wal.buffer_init",
                       "/matrix/variants/1/set/wal.bufer_init",
                       "/matrix/variants/2",
                       "/matrix/variants/4/set/wal",
                       "/matrix/variants/4/set/clients",
                       "/matrix/variants/3/label",
                       "/matrix/variants/1/set/strategy.params.num_locks",
                       "/matrix/variants/3/set/workload.record_size",
                   });
    for (const auto& e : errors) {
      CHECK(e.file == path);
      check_one_line(e);
    }
    // A --set that put the variants there is named.
    const std::string ok = dir.write("ok.json", R"({"strategy": "ideal"})");
    const auto blamed = config_errors(ok, {R"(matrix.variants=[{"label": "x", "set": {"wal.fsync": 3}}])"});
    REQUIRE(blamed.size() == 1);
    CHECK(blamed[0].file.rfind("--set matrix.variants=", 0) == 0);
    CHECK(blamed[0].json_path == "/matrix/variants/0/set/wal.fsync");
  }
}

TEST_CASE("simulator parameters are matrix keys and variant paths: each cell resolves its machine",
          "[config][variants]") {
  SECTION("platform.cores swept: different machines, the rest from the base and its preset") {
    auto cells = expand(R"({
      "platform": {"kind": "sim", "preset": "milan_2s", "fsync_ns": 1234},
      "strategy": "single_lock",
      "matrix": {"platform.cores": [32, 64], "clients": [8]}
    })");
    REQUIRE(cells.size() == 2);
    const SimConfig milan = SimConfig::preset("milan_2s");
    for (size_t i = 0; i < 2; ++i) {
      const auto& sim = cells[i].platform.sim;
      CHECK(sim["cores"] == (i == 0 ? 32 : 64));
      CHECK(sim["fsync_ns"] == 1234);
      CHECK(sim["preset"] == "milan_2s");
      CHECK(sim["cross_socket_transfer_ns"] == milan.cross_socket_transfer_ns);
      CHECK(cells[i].matrix_values["platform.cores"] == (i == 0 ? 32 : 64));
      // The resolved machine stands on its own (a cell of a result file reruns from it).
      CHECK(SimConfig::from_json(sim, "/platform").cores == (i == 0 ? 32u : 64u));
    }
  }

  SECTION("a preset from the matrix applies under the platform's own keys") {
    auto cells = expand(R"({
      "platform": {"kind": "sim", "cores": 16},
      "strategy": "single_lock",
      "matrix": {"platform.preset": ["icelake_2s", "milan_2s"]}
    })");
    REQUIRE(cells.size() == 2);
    CHECK(cells[0].platform.sim["cores"] == 16);
    CHECK(cells[1].platform.sim["cores"] == 16);
    CHECK(cells[0].platform.sim["cross_socket_transfer_ns"] ==
          SimConfig::preset("icelake_2s").cross_socket_transfer_ns);
    CHECK(cells[1].platform.sim["cross_socket_transfer_ns"] ==
          SimConfig::preset("milan_2s").cross_socket_transfer_ns);
  }

  SECTION("an override variant sets them") {
    auto cells = expand(R"({
      "platform": {"kind": "sim", "cores": 16},
      "strategy": "single_lock",
      "matrix": {"variants": [{"label": "near", "set": {"platform.cross_socket_transfer_ns": 60}},
                              {"label": "far", "set": {"platform.cross_socket_transfer_ns": 300}}]}
    })");
    REQUIRE(cells.size() == 2);
    CHECK(cells[0].platform.sim["cross_socket_transfer_ns"] == 60);
    CHECK(cells[1].platform.sim["cross_socket_transfer_ns"] == 300);
    CHECK(cells[1].platform.sim["cores"] == 16);
  }

  SECTION("errors name the matrix item or set entry") {
    auto e = error_of(R"({"platform": {"kind": "sim"}, "strategy": "single_lock",
                          "matrix": {"platform.cores": [64, 0]}})");
    CHECK(e.json_path == "/matrix/platform.cores/1");
    CHECK(e.problem == "must be in [1, 4096]");
    e = error_of(R"({"strategy": "single_lock", "matrix": {"platform.cores": [64]}})");
    CHECK(e.json_path == "/matrix/platform.cores/0");
    CHECK(e.problem.find("parameter of the simulated machine") != std::string::npos);
    e = error_of(R"({"platform": {"kind": "sim"}, "strategy": "single_lock",
                     "matrix": {"platform.corse": [64]}})");
    CHECK(e.json_path == "/matrix/platform.corse");
    CHECK(e.suggestion == "platform.cores");
    e = error_of(R"({"platform": {"kind": "sim"}, "strategy": "single_lock",
                     "matrix": {"variants": [{"label": "x", "set": {"platform.preset": "nosuch"}}]}})");
    CHECK(e.json_path == "/matrix/variants/0/set/platform.preset");
  }

  SECTION("--set matrix.platform.cores") {
    OJson config = OJson::parse(R"({"platform": {"kind": "sim"}, "strategy": "single_lock"})");
    apply_override(config, "matrix.platform.cores=[8,16]");
    auto cells = expand_matrix(config, "t.json");
    REQUIRE(cells.size() == 2);
    CHECK(cells[1].platform.sim["cores"] == 16);
  }
}

}  // namespace walbench
