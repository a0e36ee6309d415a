// The matrix runner: runs every cell of a resolved matrix on real threads, measures it and saves
// the result file after each cell. The result JSON layout is specified in harness/RESULTS.md
// (keep the two in step; NB: report.cc reads what this file writes).
//
// Files: runner.cc (the matrix: order, interleaving, parallel sim cells, the result file),
// repetition.cc (one repetition: model, window, numbers, verify), threads_monitor.cc (the
// monitor thread of a real-thread repetition), cell_json.cc (a cell's entry), measure.cc (the
// statistics), provenance.cc (the context block).
//
// One repetition of one cell, in order (repetition.cc, run_repetition):
//   1. factory(cell, seed) builds a fresh model (seed = run.seed + repetition number, so the same
//      repetition of every cell sees the same seed: common random numbers across cells).
//   2. `clients` std::threads wait on a std::latch and are released together with the runner.
//   3. The runner thread is the monitor: it switches warm-up -> timed window -> stop, prints a
//      progress line per progress_interval_s, samples every client's wait event every 10 ms
//      inside the timed window, and runs the watchdog. One thread does all four so that no lock
//      or extra thread is needed; it sleeps until the earliest of its deadlines.
//   4. At the window's edges the runner snapshots the model's counters (CellRun::model_stats());
//      the clients count their own window at their transaction boundaries (WindowTotals).
//   5. After the window: stop, join, run->finish(), then run->verify() when run.verify.
//
// Cells of platform "postgres" have no model: run_matrix keeps one PostgresRuns
// (harness/postgres_run.h), which starts the server, runs pgbench for each repetition and
// returns the same RepResult; it stops the server before run_matrix returns or throws.
//
// Failure handling: a factory/client/finish/verify exception or a failed verify marks the cell
// failed (ok=false, error=message), its remaining repetitions are skipped and the sweep goes on.
// The watchdog (run.watchdog_s > 0) fails a cell whose total transaction count has not moved for
// watchdog_s: it sets stop and gives the clients a short grace period to return; if they do, the
// sweep goes on; if they do not, their threads cannot be joined, so the runner writes the result
// file (this cell failed), flushes both streams and ends the process with std::_Exit(1).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/proc.h"
#include "harness/atomic_file.h"
#include "core/cell/cell.h"
#include "harness/cell_json.h"
#include "harness/measure.h"
#include "harness/provenance.h"
#include "core/cell/spec.h"
#include "harness/trace.h"

namespace walbench {

// 2: full resolved setup per cell (platform with every sim parameter, clog, run keys), git
// dirty state and build flags in the context, per-window counters, per_txn, tps_ci, warnings.
inline constexpr int kResultSchemaVersion = 2;
inline constexpr const char* kWalbenchVersion = "0.1.0";

struct RunOptions {
  std::string output_path;                // result file; empty = do not write one
  std::vector<std::string> config_paths;  // as given on the command line
  nlohmann::json config;                  // the merged config (after --set overrides)
  std::string config_hash;
  std::vector<std::string> overrides;     // the --set PATH=VALUE strings
  nlohmann::json rerun_of;                // `walbench rerun`: {"file", "cells"}; null otherwise
  // `walbench run --resume`: {"file", "date", "cells"} (harness/resume.h); null otherwise.
  nlohmann::json resumed_from;
  // `walbench run --resume`: cell entries kept as they are, by position in `cells`; those cells
  // do not run again.
  std::map<size_t, nlohmann::ordered_json> finished_cells;
  nlohmann::json shard;                   // `run --shard`: harness/merge.h shard_context(); null otherwise
  bool quiet = false;                     // no progress lines
  // Simulated-platform cells run this many at a time, each on its own OS thread (their results
  // do not depend on it: virtual time). Cells on real threads always run alone: no simulated
  // cell runs while one does.
  unsigned jobs = 1;
  // `run --trace`: the lock-wait trace of the first repetition of the first cell (main.cc
  // leaves one cell); nullopt: no trace.
  std::optional<TraceOptions> trace;
  // `run --top-lines N` (0: off): recorded as context.top_lines, so that --resume applies it
  // to the cells it runs (the cells carry it in CellSpec::top_lines).
  uint32_t top_lines = 0;
};

// How the runner finds a cell's model factory. The default looks the strategy up in the
// registry; tests pass their own.
using FactoryLookup = std::function<CellFactory(const CellSpec&)>;

// Registry lookup. Throws std::runtime_error with a message fit for the result file: unknown
// strategy, or "strategy X has no implementation yet" while a strategy is being written.
CellFactory registry_factory_lookup(const CellSpec& cell);

// Runs all cells, prints progress lines to `err` (like pgbench, unless opts.quiet) and one
// summary line per cell to `out`, rewrites opts.output_path atomically after each cell (with
// run.interleave, after each round of repetitions). Returns 0 when every cell succeeded, 1 when
// some cell failed. Throws std::runtime_error when the result file cannot be written. May end
// the process with exit code 1 (watchdog, see above).
// SIGINT/SIGTERM (harness/interrupt.h): the running cells stop at once; they and the cells not
// started are recorded as interrupted, the file is written, one line on `err` says how to
// resume, and the return value is 128 + the signal (130, 143).
int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err);
int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err, const FactoryLookup& lookup);

// The context block of a result file: provenance (harness/provenance.h), then config_files,
// config_hash, overrides, seed, rerun_of (when set), resumed_from (when set), shard (when set),
// config. A sharded run's shard block also gets "wall_s", the real seconds from the start to the
// last save.
nlohmann::ordered_json result_context(const std::vector<CellSpec>& cells, const RunOptions& opts);

// "0m42s", "12m05s", "1h02m03s".
std::string format_eta(double seconds);
// "6 x LWLock:WALInsert [0,1,2,4,5,7], 2 x CPU [3,6]": groups by name, largest group first
// (ties by name), client ids ascending.
std::string group_wait_events(const std::vector<std::string>& name_per_client);

}  // namespace walbench
