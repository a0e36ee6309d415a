// What the [postgres] tests share: the skip where PostgreSQL is not installed, which fails
// instead when WALBENCH_REQUIRE_POSTGRES=1 (CI, .ci/run, installs postgresql-15: a skip there
// would hide a broken setup), and the search for processes a run must not leave behind.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "harness/postgres_config.h"
#include "harness/postgres_server.h"

namespace walbench::testing {

// PostgreSQL's programs, or "" after a warning that the test is skipped; a failure instead
// when WALBENCH_REQUIRE_POSTGRES=1.
inline std::string postgres_bindir_or_skip() {
  try {
    check_server_binaries(default_bindir(), false);
    return default_bindir();
  } catch (const PostgresError& e) {
    const char* required = std::getenv("WALBENCH_REQUIRE_POSTGRES");
    if (required != nullptr && std::string(required) == "1")
      FAIL("WALBENCH_REQUIRE_POSTGRES=1 but " << e.what());
    WARN("skipped: " << e.what());
    return "";
  }
}

// Processes whose environment holds `entry` ("TMPDIR=/tmp/x"): everything a walbench run with
// that environment started, pgbench included, wherever its working directory is.
inline std::vector<pid_t> processes_with_environment(const std::string& entry) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = p.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (!process_alive(pid)) continue;
    std::ifstream in(p.path() / "environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = 0; at < env.size();) {
      const size_t end = env.find('\0', at);
      if (env.compare(at, (end == std::string::npos ? env.size() : end) - at, entry) == 0) {
        found.push_back(pid);
        break;
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return found;
}

}  // namespace walbench::testing
