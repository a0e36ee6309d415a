// The cell entries of a result file (harness/RESULTS.md "Layout"): a cell's fully resolved
// setup (every value that influenced it after defaults, presets and --set), the per-transaction
// figures of a repetition, the summary over repetitions and the trust warnings; and the way
// back from a cell entry to a runnable CellSpec (`walbench rerun`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/spec.h"

namespace walbench {

// ---- The setup blocks of a cell ----
// platform: kind, atomics, spinlocks; for "sim" also "preset" (the name as given, or null) and
// "sim": every simulated-machine parameter resolved (SimConfig::to_json()).
nlohmann::json to_json(const PlatformSpec& p);
nlohmann::json to_json(const WalSpec& w);
nlohmann::json to_json(const CommitSpec& c);
nlohmann::json to_json(const ClogSpec& c);
nlohmann::json to_json(const WorkloadSpec& w);  // record_size + record_size_label
nlohmann::json to_json(const RunSpec& r);

// index, label, strategy, params, clients, matrix, set (the override variant's paths and values,
// {} for none: harness/RESULTS.md), platform, workload, wal, commit, clog, run.
nlohmann::ordered_json cell_setup_json(const CellSpec& cell);

// The single-cell config that reproduces a cell entry of a result file: its setup blocks as
// config sections, its variant as `strategy` (with the cell's label, an override variant's
// included: its values are in the blocks already), its client count as the matrix. Feeding it to
// expand_matrix() gives the cell back (rerun). Throws UsageError naming `where` (file and
// cell) when the entry lacks a setup block (schema_version 1 files record too little).
nlohmann::ordered_json config_of_cell(const nlohmann::json& cell, const std::string& where);

// A setup key that cells written before some commit do not record, and the value those cells
// ran with (not today's default): config_of_cell (rerun) and `walbench compare`'s pairing
// (harness/pairing.h) read an absent key of a schema-2 cell's block as that value.
struct KeyOlderCellsLack {
  const char* block;  // "workload", "clog"
  const char* key;
  nlohmann::json value;
};
const std::vector<KeyOlderCellsLack>& keys_older_cells_lack();

// ---- Numbers derived from a repetition ----
struct RepetitionNumbers {
  bool measured = false;
  double tps = 0;
  double bytes_per_s = 0;
  double lat_mean_ms = 0;
  nlohmann::json per_txn;  // null when the window saw no transaction
};

// Per-transaction figures of one repetition (harness/RESULTS.md "per_txn"): from the clients'
// transaction-aligned window totals and lock statistics (exact ratios), and from the model's
// counters over the window divided by the window's transactions.
//   {"wal_bytes", "records", "xids", "locks": {NAME: {"acquisitions", "contended", "sleeps",
//    "wait_us"}}, "model": {"writes", "fsyncs", "flushes", "wal_buffers_full", ...}}
nlohmann::json per_txn_json(const nlohmann::json& window_totals, const nlohmann::json& lock_stats,
                            const nlohmann::json& model_window, uint64_t window_txns_monitor);

// The summary over the repetitions whose window completed; null when none did.
//   {"repetitions", "tps_median", "tps_min", "tps_max", "tps_rsd_pct" (null under 2),
//    "tps_ci" ({"lo", "hi", "level"}, null under 3), "bytes_per_s_median", "lat_ms_median",
//    "per_txn" (median of each repetition figure)}
nlohmann::ordered_json summarize_cell(const std::vector<RepetitionNumbers>& reps);

// Trust warnings of a cell (harness/RESULTS.md "Warnings") from its repetition entries.
std::vector<std::string> cell_warnings(const CellSpec& cell, const nlohmann::json& repetitions);

}  // namespace walbench
