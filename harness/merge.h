// Sharded runs: `walbench run --shard K/N` runs a deterministic 1/N of a matrix's cells, and
// `walbench merge A.json B.json ... -o OUT.json` puts the shards' result files back together.
//
// Which cells a shard runs: cell index i (0-based, over every config of the run, as
// load_configs numbers them) belongs to shard (i mod N) + 1. Round-robin rather than blocks,
// because the matrix's last key varies fastest: neighbouring cells differ in the cheapest
// dimension while the outer ones (clients, strategies) set the cost, so every shard gets a
// similar mix. No time estimate is used (walbench validate does not estimate sim cells'
// real time), so the split is by count: shard sizes differ by at most one cell.
//
// What a merge checks (each failure is one UsageError line naming the files): every input is a
// schema 2 result with a context.shard block of the same N and cell count; all come from the same
// config after overrides (config_hash, config, config_files, overrides) and the same build
// (walbench_version, git_sha, git_dirty, git_diff_hash, build); every cell index 0..total-1 is
// held by exactly one file, and a file holds only its own shard's cells. The merged file is an
// ordinary result file (cells in index order, no context.shard) plus context.merge, which names
// the files merged and keeps what legitimately differs between shards (host, start, wall time,
// command line) per shard. harness/RESULTS.md "Sharded runs" documents the fields.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

struct Shard {
  size_t k = 1;  // 1-based
  size_t n = 1;
};

// "K/N" with 1 <= K <= N, both decimal integers. Throws UsageError naming --shard and what was
// expected otherwise.
Shard parse_shard(const std::string& text);

// The cell indices of `shard` among `total` cells, ascending.
std::vector<size_t> shard_cell_indices(const Shard& shard, size_t total);

// The context.shard block a sharded run records: {"k", "n", "cells", "total_cells"}.
nlohmann::json shard_context(const Shard& shard, size_t total);

// One input of a merge: its path (for messages) and its parsed content.
struct MergeInput {
  std::string path;
  nlohmann::ordered_json doc;
};

// Checks the inputs (see the top of this file) and returns the merged document; throws
// UsageError on the first problem. `command_line` and `date` go into context.merge.
nlohmann::ordered_json merge_results(const std::vector<MergeInput>& inputs,
                                     const std::string& command_line, const std::string& date);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output_path;
  bool force = false;
};

// `walbench merge`: reads the files, merges them, writes output_path atomically and prints one
// line to `err`. Returns 0; throws UsageError for bad input.
int merge_command(const MergeOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace walbench
