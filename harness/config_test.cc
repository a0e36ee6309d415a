// Config loading, validation, matrix expansion and --set overrides (harness/config.h).
#include "harness/config.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/temp_dir.h"

#include "strategies/strategy.h"

namespace walbench {
namespace {

using OJson = nlohmann::ordered_json;

// A scratch directory removed at scope exit.
using testing::TempDir;

std::vector<CellSpec> expand(const std::string& text) {
  return expand_matrix(OJson::parse(text), "test.json");
}

// The ConfigError that expanding `text` throws (fails the test if none).
ConfigError error_of(const std::string& text) {
  try {
    expand(text);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for " << text);
  throw std::logic_error("unreachable");
}

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
            R"({"num_locks": 8, "insertingat": "atomic", "lock_choice": "procno"})"));
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

TEST_CASE("errors name the file, the JSON path and what was expected", "[config]") {
  SECTION("misspelled key, with a suggestion") {
    const ConfigError e = error_of(R"({"strategy": "ideal", "wal": {"page_sise": 8192}})");
    CHECK(e.file == "test.json");
    CHECK(e.json_path == "/wal/page_sise");
    CHECK(e.suggestion == "page_size");
    CHECK(e.expected.find("page_size") != std::string::npos);
    CHECK(std::string(e.what()) ==
          "test.json: /wal/page_sise: unknown key \"page_sise\"; expected one of page_size, "
          "segment_size, wal_buffers, storage, path, fsync, buffer_init (did you mean "
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
    const OJson config = load_config_file(entry.path().string());
    const auto cells = expand_matrix(config, entry.path().string());
    CHECK(cells.size() == matrix_shape(config, entry.path().string()).cells);
    ++n;
  }
  CHECK(n > 0);
}

}  // namespace walbench
