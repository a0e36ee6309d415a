// Config files, the matrix and `--set` overrides: JSON in, fully resolved CellSpecs out.
//
// A config (configs/README.md is the reference for every key) holds the top-level sections
// `platform`, `wal`, `commit`, `workload`, `run`, a default `strategy`, and a `matrix` whose
// list-valued entries expand as a cartesian product. Resolution of one cell, lowest priority
// first: the defaults in core/cell/spec.h, the top-level sections, the matrix values.
//
// Matrix keys: `strategy` (strategy variants), `variants` (override variants), `clients`,
// SECTION.KEY, platform.<simulator parameter> (a sim platform's machine, resolved again per
// cell with the value over the platform's own keys) and strategy.params.<name>.
// An override variant is {"label": NAME, "set": {PATH: VALUE, ...}}: PATH is any of the matrix
// keys above but strategy, variants and clients, VALUE checked as there; a PATH also swept by
// its own matrix key is an error. The cell's label is the variant's label with one strategy
// variant, "<strategy label>+<variant label>" with several (the two lists cross); the cell
// records the set in CellSpec::variant_set.
//
// Errors. Everything a user can get wrong in a config or on the command line is a ConfigError
// (config contents) or a UsageError (CLI misuse, unreadable result files). Both carry one line
// of text; the CLI prints it as `walbench: error: <what()>` and exits with 2.
//
// JSON paths in messages are JSON Pointers (RFC 6901): "/matrix/clients/2",
// "/matrix/workload.record_size/0/dist", "/strategy/params/num_locks". Pointers, not dotted
// paths, because matrix keys themselves contain dots. `--set` takes dotted paths
// (run.duration_s); the error for a bad --set value names the --set argument and the pointer.
//
// Key order. Matrix keys other than `strategy` and `clients` expand in the order they appear in
// the file, so load_config_file() returns nlohmann::ordered_json. The nlohmann::json overloads
// exist for callers that built their config in code; they see keys in sorted order.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/spec.h"

namespace walbench {

// A problem in a config file (or a --set override). what() is one line:
//   <file>: <json path>: <problem>; expected <expected>[ (did you mean "<suggestion>"?)]
//   <file>:<line>:<column>: <problem>; expected <expected>        (JSON syntax errors)
//   <file>: <problem>; expected <expected>                        (whole-file problems)
struct ConfigError : std::runtime_error {
  ConfigError(std::string file, std::string json_path, std::string problem, std::string expected,
              std::string suggestion = "");
  // A JSON syntax error at a 1-based line and column.
  static ConfigError syntax(std::string file, int line, int column, std::string problem,
                            std::string expected);
  // The same error reported against another source (used to name a --set argument).
  ConfigError with_file(std::string new_file) const;

  std::string file;        // config path, or "--set PATH=VALUE"
  std::string json_path;   // JSON Pointer; empty for whole-file and syntax errors
  std::string problem;     // what is wrong, with the offending value
  std::string expected;    // what would have been accepted
  std::string suggestion;  // closest allowed key/choice for a misspelling; may be empty
  int line = 0;            // syntax errors only (1-based), else 0
  int column = 0;
};

// CLI misuse (bad subcommand arguments, unwritable output) and unreadable or invalid result
// files given to `report` / `compare`. what() is one line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads and parses one config file. Throws ConfigError for an unreadable file, a syntax error
// (with line:column), a duplicate key (with its JSON path) or a top level that is not an object.
// Does not validate the schema; expand_matrix() does.
nlohmann::ordered_json load_config_file(const std::string& path);

// Applies one `--set PATH=VALUE`: PATH is dotted (`run.duration_s`, `wal.wal_buffers`,
// `strategy.params.num_locks`); under `matrix.` the rest of PATH is one matrix key
// (`matrix.workload.record_size=[16,1024]`). VALUE is parsed as JSON when it parses, else taken
// as a string (`wal.storage=file`). Missing objects on the way are created. Throws ConfigError
// naming the --set argument for a malformed assignment or an unknown key (with "did you mean").
void apply_override(nlohmann::ordered_json& config, const std::string& assignment);
void apply_override(nlohmann::json& config, const std::string& assignment);

// Validates a config and expands its matrix. Order: strategy variants outermost, then override
// variants, then clients, then the other matrix keys in file order (the last one varies
// fastest). Each cell carries index/total within this config, its label, its matrix_values
// (every matrix key with more than one value; "strategy" and "variants" map to the variants'
// labels), its variant_set and the resolved spec. `file` is
// used in error messages only; relative preset files (platform "sim") are looked up in
// `preset_dir` ("" = the current directory), then in the repository's presets/. A sim cell's
// platform.sim is the resolved machine (SimConfig::resolved_json): every parameter, "preset" as
// given and "preset_file", the absolute path read, so that the cell stands on its own.
// Sim cells are also checked against this machine's limits (HostLimits).
std::vector<CellSpec> expand_matrix(const nlohmann::ordered_json& config, const std::string& file,
                                    const std::string& preset_dir = "");
std::vector<CellSpec> expand_matrix(const nlohmann::json& config, const std::string& file,
                                    const std::string& preset_dir = "");

// The shape of a config's matrix, for `walbench validate`: ("strategies", 3), ("variants", 2)
// (only with matrix "variants"), ("clients", 4), ("workload.record_size", 2) ... in expansion
// order, and the cell count (their product).
struct MatrixShape {
  std::vector<std::pair<std::string, size_t>> dims;
  size_t cells = 0;
  // "3 strategies x 2 variants x 4 clients x 2 workload.record_size"
  std::string describe() const;
};
MatrixShape matrix_shape(const nlohmann::ordered_json& config, const std::string& file,
                         const std::string& preset_dir = "");

// What this machine allows a simulated cell. Each fiber of a sim cell (every client and the WAL
// writer) gets an mmap'ed stack with a guard page: two memory mappings, counted against the
// kernel's vm.max_map_count (65530 by default: about 32,000 clients), and resident memory.
// A cell past a limit is a ConfigError naming it, the value and how to raise it, instead of a
// std::bad_alloc in the middle of the run.
struct HostLimits {
  uint64_t max_map_count = 0;  // /proc/sys/vm/max_map_count; 0 = unknown, not checked
  uint64_t memory_bytes = 0;   // MemTotal, or CommitLimit under strict overcommit; 0 = unknown
  bool strict_overcommit = false;  // vm.overcommit_memory = 2: whole stacks count
  static HostLimits of_this_machine();  // from /proc
};
// Tests: check against `limits` instead of this machine's (nullptr: this machine again).
void set_host_limits_for_testing(const HostLimits* limits);

// Several config files, as `walbench run a.json b.json` takes them: each is loaded, gets every
// override (in order), and is expanded; the cells are concatenated in file order and
// renumbered 0..N-1 of N. An error in a value that came from a --set names that --set argument.
// A relative preset file is looked up next to the config that names it; one named by a --set
// (platform.preset=..., or a whole platform={...}) in the current directory.
struct LoadedConfigs {
  std::vector<std::string> paths;
  std::vector<nlohmann::ordered_json> configs;  // after overrides
  std::vector<MatrixShape> shapes;              // one per config
  std::vector<CellSpec> cells;
  // What the result file records: the config itself for one file, an array of them for several.
  nlohmann::json combined() const;
};
LoadedConfigs load_configs(const std::vector<std::string>& paths,
                           const std::vector<std::string>& overrides);

// Every error of one config file with the overrides, each as load_configs() would report it
// (for `walbench validate`); empty when it is valid. A file that does not parse gives its one
// syntax error. Otherwise each bad override, and each independent part of the config that fails
// (a top-level key, a section key, a matrix key or list item, a variant, a cross-field rule),
// gives one error; a part that failed is left out, so that its consequences are not reported
// as errors of their own.
std::vector<ConfigError> config_errors(const std::string& path,
                                       const std::vector<std::string>& overrides);

// What `walbench validate` says about the time a run takes: threads cells add up to a lower
// bound on wall-clock time (repetitions x (warm-up + duration)); sim cells run in virtual time,
// whose wall-clock cost depends on clients x duration and is not estimated:
//   "at least 6 min of timed runs (wall clock)"
//   "virtual time per cell 0.12 s (20.2 s in all); real time depends on clients x duration, not
//    estimated"
// and both, each prefixed with its cell count, for a config that has both kinds.
std::string run_time_summary(const std::vector<CellSpec>& cells);

// Hex of a 64-bit FNV-1a over the canonical dump (keys sorted, no whitespace): equal configs
// hash equal whatever their key order or formatting in the file.
std::string config_hash(const nlohmann::json& config);

// "did you mean": the candidate closest to `word` by edit distance (case-insensitive), or ""
// when none is close enough to be a plausible misspelling.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace walbench
