// Provenance of a result file (harness/RESULTS.md "context"): which code, built how, run how,
// on which machine. The build's part is recorded at build time by cmake/build_info.cmake (every
// build, not at configure time); the rest is read when a run starts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

struct BuildInfo {
  std::string git_sha;        // full commit hash of HEAD when built, or "unknown" (no git)
  bool git_dirty;             // changed or untracked source files when built (cmake/build_info.cmake)
  std::string git_diff_hash;  // SHA-256 of those changes ("" when clean)
  std::string build_type;     // CMAKE_BUILD_TYPE
  std::string compiler;       // compiler id and version
  std::string flags;          // compile flags of the build type and the project's options
  std::string source_dir;     // where it was built from
  std::string cmake_command;  // the cmake that ran cmake/build_info.cmake
};
const BuildInfo& build_info();  // generated: build/<preset>/generated/build_info.cc

// "walbench 0.1.0 (git 459b95f953a2+dirty, Release build)"
std::string version_line();

// The sources now, by the build's own rule (cmake/build_info.cmake run again, against the
// build's commit), to catch a binary older than its sources, including further edits to a
// tree that was already dirty: {"git_sha" (HEAD now), "git_dirty", "git_diff_hash" (of the
// sources against the build's commit)}, or null where the source directory, git or cmake is
// gone. The sources are the same exactly when git_diff_hash equals the build's.
nlohmann::json source_tree_now();

// "walbench: warning: this binary was built from X but the source tree is now at Y ..." when
// source_tree_now() differs from the build, else "". The CLI prints it before a run.
std::string stale_binary_warning();

// Today's date in the local time zone, "2026-12-01" (result and preset file names).
std::string local_date();

// `s` as one shell word: as it is when it needs no quoting, else in single quotes.
std::string shell_quote(const std::string& s);

// The process's command line, as one shell-quoted string (set once by main()).
void set_command_line(int argc, char** argv);
const std::string& command_line();

// The context block's machine and build members, in order: schema_version, walbench_version,
// date (UTC ISO 8601), host, cpu_model, logical_cores, kernel, git_sha, git_dirty,
// git_diff_hash, source_tree_now (only when it differs from the build), build {type, compiler,
// flags}, command_line.
nlohmann::ordered_json run_context();
// The same, unordered (for preset files written by `walbench calibrate`).
nlohmann::json machine_context();

}  // namespace walbench
