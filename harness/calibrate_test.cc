// `walbench calibrate` and sim preset files: a quick calibration writes a file that loads as a
// preset with plausible values; the shipped builtin preset files equal the builtins; preset-file
// errors are one line naming the file, the key and what was expected; inline keys win.
// No timing assertions beyond plausibility ranges: the machine is shared and noisy.
#include "harness/calibrate.h"

#include <stdlib.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "tests/temp_dir.h"
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/platform/sim.h"
#include "harness/config.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What SimConfig::from_json throws for `j` (fails the test if nothing).
std::string sim_error(const nlohmann::json& j, const std::string& path = "/platform") {
  try {
    (void)SimConfig::from_json(j, path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  FAIL("no error for " << j.dump());
  return "";
}

struct Result {
  int rc = -1;
  std::string out, err;
};

Result walbench(const std::string& args, const TempDir& dir) {
  const auto out = dir.path / "stdout.txt";
  const auto err = dir.path / "stderr.txt";
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + WALBENCH_BINARY + "' " + args +
                          " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

void check_bad_input(const Result& r) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.rfind("walbench: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

bool memory_backed(const fs::path& dir) {
  struct statfs s {};
  return statfs(dir.c_str(), &s) == 0 &&
         (s.f_type == 0x01021994 /* TMPFS_MAGIC */ || s.f_type == 0x858458f6 /* RAMFS_MAGIC */);
}

// The keys of a preset file: exactly SimConfig's JSON keys plus "description" and "sources".
void check_preset_keys(const nlohmann::json& file) {
  nlohmann::json keys = SimConfig{}.to_json();
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    INFO(it.key());
    CHECK(file.contains(it.key()));
  }
  for (auto it = file.begin(); it != file.end(); ++it) {
    INFO(it.key());
    CHECK((keys.contains(it.key()) || it.key() == "description" || it.key() == "sources"));
  }
  REQUIRE(file.contains("description"));
  CHECK(file["description"].is_string());
  REQUIRE(file.contains("sources"));
  REQUIRE(file["sources"].is_object());
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    INFO("sources/" << it.key());
    CHECK(file["sources"].contains(it.key()));
  }
}

}  // namespace

TEST_CASE("calibrate --quick writes a preset file that loads with plausible values",
          "[calibrate]") {
  TempDir dir;
  CalibrateOptions opts;
  opts.quick = true;
  opts.fsync_dir = dir.path.string();
  opts.name = "test-machine";
  std::ostringstream log, out;
  const std::string file = (dir.path / "measured.json").string();
  REQUIRE(calibrate_command(opts, file, out, log) == 0);
  INFO(log.str());
  // The temporary file of the storage measurements is gone; only the preset (no .tmp) is left.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path))
    names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{"measured.json"});
  // Each figure was printed with its spread as it came.
  CHECK(log.str().find("IQR") != std::string::npos);
  CHECK(log.str().find("same-socket line transfer") != std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(slurp(file));
  check_preset_keys(j);
  CHECK(j["description"].get<std::string>().find("test-machine") != std::string::npos);
  CHECK(j["description"].get<std::string>().find("measured by walbench calibrate") !=
        std::string::npos);

  const SimConfig c =
      SimConfig::from_json(nlohmann::json{{"kind", "sim"}, {"preset", file}}, "/platform");
  CHECK(c.to_json() == SimConfig::from_json(c.to_json(), "x").to_json());
  CHECK(c.cores >= 1);
  CHECK(c.sockets >= 1);
  CHECK(c.smt >= 1);
  CHECK(c.cores * c.smt <= std::max(1u, std::thread::hardware_concurrency()) * 8);
  // Latencies (ns): positive and within wide, physically plausible ranges.
  CHECK(c.line_hit_ns >= 1);
  CHECK(c.line_hit_ns <= 100);
  CHECK(c.same_socket_transfer_ns >= 1);
  CHECK(c.same_socket_transfer_ns <= 1000000);
  CHECK(c.cross_socket_transfer_ns >= 1);
  CHECK(c.cross_socket_transfer_ns <= 1000000);
  CHECK(c.memory_ns >= 1);
  CHECK(c.memory_ns <= 100000);
  CHECK(c.rmw_extra_ns <= 100000);
  CHECK(c.fence_ns <= 100000);
  CHECK(c.pause_ns >= 1);
  CHECK(c.pause_ns <= 1000000);
  CHECK(c.context_switch_ns >= 10);
  CHECK(c.context_switch_ns <= 100000000);
  // Derived by subtraction (calibrate.h): may be 0 when the other terms explain the whole figure.
  CHECK(c.semaphore_wake_ns <= 100000000);
  CHECK(c.semaphore_post_ns <= 100000000);
  CHECK(c.sleep_slack_ns <= 100000000);
  // Bandwidths (bytes/ns = GB/s).
  CHECK(c.copy_bytes_per_ns >= 0.1);
  CHECK(c.copy_bytes_per_ns <= 1000);
  CHECK(c.memory_bandwidth_bytes_per_ns >= 0.1);
  CHECK(c.memory_bandwidth_bytes_per_ns <= 100000);
  CHECK(c.crc_bytes_per_ns >= 0.1);
  CHECK(c.crc_bytes_per_ns <= 1000);
  // Storage: a memory-backed directory is "instant" (0, the sim's tmpfs model).
  CHECK(c.syscall_ns >= 1);
  CHECK(c.syscall_ns <= 10000000);
  CHECK(c.fsync_ns <= 10000000000ull);
  if (memory_backed(dir.path)) {
    CHECK(c.storage_write_bytes_per_ns >= 0);
  } else {
    CHECK(c.storage_write_bytes_per_ns > 0);
    CHECK(c.fsync_ns >= 1);
  }
  CHECK(c.storage_write_bytes_per_ns <= 1000);
  // What was not measured keeps SimConfig's default.
  const SimConfig d;
  CHECK(c.time_slice_ns == d.time_slice_ns);
  CHECK(c.stack_kib == d.stack_kib);
  CHECK(j["sources"]["time_slice_ns"].get<std::string>().find("default") != std::string::npos);
}

TEST_CASE("calibrate: --fsync-path none keeps the storage defaults and prints to stdout",
          "[calibrate]") {
  TempDir dir;
  const Result r = walbench("calibrate --quick --fsync-path none --name cli", dir);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  check_preset_keys(j);
  const SimConfig d;
  CHECK(j["fsync_ns"] == d.fsync_ns);
  CHECK(j["syscall_ns"] == d.syscall_ns);
  CHECK(j["sources"]["fsync_ns"].get<std::string>().find("--fsync-path none") != std::string::npos);
  CHECK(r.err.find("IQR") != std::string::npos);
}

TEST_CASE("calibrate: a bad -o or --fsync-path is one line and exit status 2", "[calibrate][cli]") {
  TempDir dir;
  const Result missing_dir = walbench("calibrate --quick -o no/such/dir/x.json", dir);
  check_bad_input(missing_dir);
  CHECK(missing_dir.err.find(
            "calibrate: -o no/such/dir/x.json: directory no/such/dir does not exist") !=
        std::string::npos);
  fs::create_directory(dir.path / "sub");
  const Result is_dir = walbench("calibrate --quick -o sub", dir);
  check_bad_input(is_dir);
  CHECK(is_dir.err.find("is a directory") != std::string::npos);
  const Result bad_fsync = walbench("calibrate --quick --fsync-path no/such/dir", dir);
  check_bad_input(bad_fsync);
  CHECK(bad_fsync.err.find("--fsync-path no/such/dir: not a directory") != std::string::npos);
}

TEST_CASE("presets: each shipped builtin preset file equals the builtin", "[presets]") {
  const fs::path presets = fs::path(WALBENCH_SOURCE_DIR) / "presets";
  for (const std::string& name : SimConfig::preset_names()) {
    INFO(name);
    const fs::path file = presets / (name + ".json");
    REQUIRE(fs::exists(file));
    check_preset_keys(nlohmann::json::parse(slurp(file)));
    const SimConfig from_file =
        SimConfig::from_json(nlohmann::json{{"preset", file.string()}}, "/platform");
    CHECK(from_file.to_json() == SimConfig::preset(name).to_json());
  }
  // A relative name not found in the current directory comes from the repository's presets/.
  CHECK(SimConfig::from_json(nlohmann::json{{"preset", "milan_2s.json"}}, "/platform").to_json() ==
        SimConfig::preset("milan_2s").to_json());
  // The measured machine ships too, and loads.
  const fs::path vm = presets / "vm-2core.json";
  REQUIRE(fs::exists(vm));
  const nlohmann::json j = nlohmann::json::parse(slurp(vm));
  check_preset_keys(j);
  CHECK(j["description"].get<std::string>().find("measured by walbench calibrate") !=
        std::string::npos);
  CHECK_NOTHROW(SimConfig::from_json(nlohmann::json{{"preset", "vm-2core.json"}}, "/platform"));
}

TEST_CASE("presets: inline keys override the file and a file may name a builtin base", "[presets]") {
  TempDir dir;
  const std::string f = dir.write("m.json", R"({"description": "test", "preset": "milan_2s",
    "cores": 32, "fsync_ns": 7, "sources": {"cores": "made up"}})");
  const SimConfig a = SimConfig::from_json(nlohmann::json{{"preset", f}}, "/platform");
  CHECK(a.cores == 32);
  CHECK(a.fsync_ns == 7);
  CHECK(a.cores_per_cluster == 8);  // from milan_2s
  const SimConfig b = SimConfig::from_json(
      nlohmann::json{{"preset", f}, {"cores", 16}, {"kind", "sim"}}, "/platform");
  CHECK(b.cores == 16);
  CHECK(b.fsync_ns == 7);
  // The same through a config, with the file next to it (relative to the current directory).
  dir.write(
      "cfg.json",
      R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "m.json", "cores": 16}})");
  const Result r = walbench("validate cfg.json", dir);
  INFO(r.err);
  CHECK(r.rc == 0);
}

TEST_CASE("presets: preset-file errors are one line naming the file and key and what was expected",
          "[presets]") {
  TempDir dir;
  const std::string missing = sim_error({{"preset", "no-such-preset.json"}});
  CHECK_THAT(missing,
             Catch::Matchers::StartsWith("/platform/preset: preset file \"no-such-preset.json\" "
                                         "not found (looked for no-such-preset.json, "));
  CHECK_THAT(missing, Catch::Matchers::Contains("presets/no-such-preset.json)"));

  const std::string typo = dir.write("typo.json", R"({"cros_socket_transfer_ns": 100})");
  CHECK(sim_error({{"preset", typo}}) ==
        "/platform/preset: " + typo +
            ": /cros_socket_transfer_ns: unknown key (did you mean 'cross_socket_transfer_ns'?)");

  const std::string type = dir.write("type.json", R"({"copy_bytes_per_ns": "fast"})");
  CHECK(sim_error({{"preset", type}}) ==
        "/platform/preset: " + type + ": /copy_bytes_per_ns: expected a number, got \"fast\"");

  const std::string range = dir.write("range.json", R"({"cores": 10, "sockets": 3})");
  CHECK(sim_error({{"preset", range}}) ==
        "/platform/preset: " + range + ": /sockets: must be >= 1 and divide cores");

  const std::string nested = dir.write("nested.json", R"({"preset": "other.json"})");
  CHECK_THAT(sim_error({{"preset", nested}}),
             Catch::Matchers::Contains(
                 nested + ": /preset: a preset file may name a builtin preset, not another file"));

  const std::string source = dir.write("source.json", R"({"sources": {"fsync": "pg_test_fsync"}})");
  CHECK(sim_error({{"preset", source}}) ==
        "/platform/preset: " + source +
            ": /sources/fsync: not a machine parameter (did you mean 'fsync_ns'?)");

  const std::string syntax = dir.write("syntax.json", "{\"cores\": 4,}");
  CHECK_THAT(sim_error({{"preset", syntax}}),
             Catch::Matchers::StartsWith("/platform/preset: " + syntax +
                                         ": invalid JSON: parse error at line 1"));

  const std::string dup = dir.write("dup.json", R"({"cores": 4, "cores": 8})");
  CHECK(sim_error({{"preset", dup}}) == "/platform/preset: " + dup + ": /cores: duplicate key");

  // "description" and "sources" belong to preset files only.
  CHECK_THAT(sim_error({{"description", "x"}}),
             Catch::Matchers::StartsWith("/platform/description: unknown key"));

  // Through a config and the CLI: one line, exit status 2, the config's pointer then the file's.
  dir.write("cfg.json",
            R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "type.json"}})");
  const Result r = walbench("validate cfg.json", dir);
  check_bad_input(r);
  CHECK_THAT(r.err,
             Catch::Matchers::Contains("cfg.json: /platform/preset: type.json: /copy_bytes_per_ns: "
                                       "expected a number, got \"fast\""));
  dir.write("cfg2.json",
            R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "nope.json"}})");
  const Result r2 = walbench("validate cfg2.json", dir);
  check_bad_input(r2);
  CHECK_THAT(r2.err, Catch::Matchers::Contains(
                         "cfg2.json: /platform/preset: preset file \"nope.json\" not found"));
  // An inline error names the key's pointer.
  dir.write("cfg3.json", R"({"strategy": "ideal", "platform": {"kind": "sim", "cores": 0}})");
  const Result r3 = walbench("validate cfg3.json", dir);
  check_bad_input(r3);
  CHECK_THAT(r3.err, Catch::Matchers::Contains("cfg3.json: /platform/cores: must be in [1, 4096]"));
}

}  // namespace walbench
