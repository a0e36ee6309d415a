// Which cells of two result files `walbench compare BASE NEW` holds against each other
// (README "Comparing two runs").
//
// Setup. A cell's setup is what it ran, flattened into dotted paths with leaf values:
// `label`, `strategy`, `params.*`, `clients`, `platform.*` (with `platform.sim.*`),
// `workload.*`, `wal.*`, `commit.*`, `clog.*` and `run.*`. `workload.record_size` is one leaf
// (a number or a distribution object); `workload.record_size_label` is left out (it is derived
// from record_size). `index` and `matrix` are not setup: a rerun of a subset has other indices
// and other swept keys. A schema-1 file records no `clog` block and only `platform.kind`; its
// swept matrix keys stand in where the blocks lack them (`platform.atomics`, `clog.strategy`).
//
// Compared paths. A path is compared only when both files record it: some cell of each file has
// that leaf, a leaf under it or a leaf above it. A path only one file records (the `clog` block
// against a schema-1 file, `platform.sim` against a file of threads cells) is reported as not
// compared, never guessed. One exception is not a guess: a key that schema-2 cells written before
// some commit leave out of a block they do record (harness/cell_json.h keys_older_cells_lack:
// clog.xid_locks before 8b3317e, clog.hint_bit_miss, clog.snapshots_per_statement,
// workload.full_page_writes) is read as the value those cells ran with, as rerun reads it; so
// a file made before the xid lock table was on by default shows `clog.xid_locks: false -> true`
// against one made after, and pairs with it only under `--ignore clog.xid_locks`. Where the
// table can never run (a PostgreSQL server cell, a non-transactional workload, `ideal`),
// `clog.xid_locks` is left out of the cell's setup: such cells pair whatever the key says.
//
// Identity. Two cells pair when they agree on every identity path. By default the identity is
// every compared path except `run.*`, which describes the measurement (duration, repetitions,
// seed): run paths differing between the files are reported but do not prevent pairing, unless
// a run path takes several values inside one file (it was swept, so it tells cells apart).
// `--ignore KEY` leaves KEY and everything under it out; `--pair-by KEY` (repeatable) makes the
// identity exactly `clients` plus the paths at or under the KEYs (minus any --ignore). A KEY
// neither file records is an error with a "did you mean".
//
// Two cells of one file with the same identity are an error naming both (compare would not
// know which to pair), unless what tells them apart is a setting the other file does not record
// (a schema-1 file against a newer one): then they are ambiguous and stay unpaired, with that
// reason. Every other cell pairs with at most one cell of the other file.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

struct CompareOptions {
  std::vector<std::string> ignore;   // --ignore KEY, dotted paths
  std::vector<std::string> pair_by;  // --pair-by KEY, dotted paths
};

// One setting (a compared path) whose values differ between the two files.
struct SettingDiff {
  enum class Role {
    kPairs,        // in the identity: cells that differ in it do not pair
    kMeasurement,  // a run.* path: reported, cells still pair
    kIgnored,      // left out by --ignore
    kNotPairedBy,  // outside the --pair-by keys
  };
  std::string path;
  Role role = Role::kPairs;
  // The values each file's cells hold, as value texts ("(absent)" for a cell without the
  // path), in order of first appearance.
  std::vector<std::string> base_values, next_values;
};

struct UnpairedCell {
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t cell = 0;          // position in its file's "cells"
  size_t closest = kNone;   // the other file's cell differing in the fewest identity paths
  std::vector<std::string> differences;  // "path: BASE value -> NEW value", identity paths
  std::string note;  // instead of closest/differences: why the cell cannot pair ("ambiguous: ...")
};

struct Pairing {
  std::vector<std::pair<size_t, size_t>> pairs;  // (BASE cell, NEW cell), in NEW's order
  std::vector<UnpairedCell> base_only, next_only;
  std::vector<SettingDiff> differences;          // in path order (label, ..., run)
  // Paths only one file records, collapsed to the shortest prefix the other file lacks
  // ("clog", "platform.sim"): not compared.
  std::vector<std::string> base_only_settings, next_only_settings;
  std::vector<std::string> identity_diff_paths;  // differences with role kPairs
};

// Pairs the cells of two loaded result files (load_result_file); the paths name the files in
// errors. Throws UsageError for an unknown --ignore/--pair-by KEY and for two cells of one
// file with the same identity.
Pairing pair_cells(const nlohmann::json& base, const std::string& base_path,
                   const nlohmann::json& next, const std::string& next_path,
                   const CompareOptions& options);

}  // namespace walbench
