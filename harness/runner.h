// The matrix runner: runs every cell of a resolved matrix on real threads, measures it and saves
// the result file after each cell. The result JSON layout is specified in harness/RESULTS.md
// (keep the two in step; NB: report.cc reads what this file writes).
//
// One repetition of one cell, in order (runner.cc, run_repetition):
//   1. factory(cell, seed) builds a fresh model (seed = run.seed + repetition number, so the same
//      repetition of every cell sees the same seed: common random numbers across cells).
//   2. `clients` std::threads wait on a std::latch and are released together with the runner.
//   3. The runner thread is the monitor: it switches warm-up -> timed window -> stop, prints a
//      progress line per progress_interval_s, samples every client's wait event every 10 ms
//      inside the timed window, and runs the watchdog. One thread does all four so that no lock
//      or extra thread is needed; it sleeps until the earliest of its deadlines.
//   4. After the window: stop, join, run->finish(), then run->verify() when run.verify.
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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/proc.h"
#include "harness/cell.h"
#include "harness/spec.h"

namespace walbench {

inline constexpr int kResultSchemaVersion = 1;
inline constexpr const char* kWalbenchVersion = "0.1.0";

struct RunOptions {
  std::string output_path;                // result file; empty = do not write one
  std::vector<std::string> config_paths;  // as given on the command line
  nlohmann::json config;                  // the merged config (after --set overrides)
  std::string config_hash;
  std::vector<std::string> overrides;     // the --set PATH=VALUE strings
  bool quiet = false;                     // no progress lines
  // Simulated-platform cells run this many at a time, each on its own OS thread (their results
  // do not depend on it: virtual time). Cells on real threads always run one at a time.
  unsigned jobs = 1;
};

// How the runner finds a cell's model factory. The default looks the strategy up in the
// registry; tests pass their own.
using FactoryLookup = std::function<CellFactory(const CellSpec&)>;

// Registry lookup for platform "threads". Throws std::runtime_error with a message fit for the
// result file: unknown strategy, unsupported platform, or "strategy X has no threads
// implementation yet" while a strategy is being written.
CellFactory registry_factory_lookup(const CellSpec& cell);

// Runs all cells (in order), prints progress lines to `err` (like pgbench, unless opts.quiet)
// and one summary line per cell to `out`, rewrites opts.output_path atomically after each cell.
// Returns 0 when every cell succeeded, 1 when some cell failed. Throws std::runtime_error when the
// result file cannot be written. May end the process with exit code 1 (watchdog, see above).
int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err);
int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err, const FactoryLookup& lookup);

// schema_version, date (UTC ISO 8601), host, cpu_model, logical_cores, kernel, compiler,
// build_type, git_sha.
nlohmann::json machine_context();

// ---- Spec serialisation (the cell blocks of the result file) ----
nlohmann::json to_json(const PlatformSpec& p);
nlohmann::json to_json(const WalSpec& w);
nlohmann::json to_json(const CommitSpec& c);
nlohmann::json to_json(const WorkloadSpec& w);  // record_size + record_size_label
nlohmann::json to_json(const RunSpec& r);

// ---- Measurement math (exposed for tests) ----
double median(std::vector<double> v);  // 0 for an empty vector
// Relative sample standard deviation (n-1) in percent of the mean; 0 when n < 2 or mean == 0.
double rsd_pct(const std::vector<double>& v);
// Quantile q in [0,1] of a latency histogram, in the histogram's unit (ns). Finds the bin where
// the cumulative count crosses q*N and interpolates geometrically inside it (the bins are
// log-spaced). Underflow counts as the lowest edge, overflow as the highest. 0 when empty.
double histogram_quantile(const LatencyHistogram& h, double q);

struct LatencySummaryMs {
  double mean = 0, stddev = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0;
  uint64_t count = 0;
  nlohmann::json to_json() const;
};
// Merges the clients' histograms and sums: mean and population stddev (as pgbench) from the
// sums, percentiles from the merged histogram.
LatencySummaryMs summarize_latency(const std::vector<ClientCounters>& counters);

// "progress: 5.0 s, 103575.2 tps, lat 0.309 ms stddev 0.071"
std::string format_progress_line(double t_s, double tps, double lat_ms, double stddev_ms);
// "0m42s", "12m05s", "1h02m03s".
std::string format_eta(double seconds);
// "6 x LWLock:WALInsert [0,1,2,4,5,7], 2 x CPU [3,6]": groups by name, largest group first
// (ties by name), client ids ascending.
std::string group_wait_events(const std::vector<std::string>& name_per_client);

// Writes `<path>.tmp`, fsyncs it, renames it over `path` and fsyncs the directory. Throws
// std::runtime_error naming the path on any failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace walbench
