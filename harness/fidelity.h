// `walbench compare RESULT --reference REF.csv`: how faithfully a result file reproduces a
// published table (../shared/reference/*.csv), judged on shapes, never on absolute numbers.
//
// Matching. A reference CSV has the columns `variant`, `clients` and `tps` (any order) and any
// number of others (`record_size`, `tables`, ...). A result cell is matched to a row by
//   variant   its `label` (or the CSV name given by `--variant LABEL=NAME`),
//   clients   its `clients`,
//   COLUMN    every other CSV column against the cell's `matrix` value whose key ends in that
//             name (`workload.record_size` -> `record_size`), numbers compared as numbers;
//             a column the matrix does not have must be pinned with `--fix COLUMN=VALUE`,
//             which keeps only the CSV rows with that value (one slice of the table).
// `--fix` may also name a matrix key the CSV lacks (`--fix wal_buffers=64`): it keeps the
// result cells with that value. A matrix key that is neither a CSV column nor fixed is an
// error (the comparison would be ambiguous), as is a CSV column that is neither a matrix key nor
// fixed. The tps of a cell is its `summary.tps_median`; failed cells are listed, not compared.
//
// What is compared. A series is one combination of the CSV's other columns (each record_size);
// a curve is one variant in one series. Only client counts present on both sides are compared
// (the curve's common grid); points on one side only are listed, not scored.
//
// Fitted points. A config names the reference rows it took values from in its top-level
// `fitted` list: objects with a "reason" and one or more reference columns (variant, clients or
// another CSV column) with a value; a row is fitted when it matches every column of some entry.
// The list is read from the result file's context.config (an object, or an array of configs:
// the union), or from `--fitted-from CONFIG` for result files written before configs had one.
// Fitted points are shown, marked "(fitted)", and left out of every score below; a ratio point
// is fitted when either of its two rows is. An entry that matches no row of the table is a
// warning in the output, not an error.
//
//   shape   tps / tps at the smallest common client count, reference and result side by side
//           (shown, not scored)
//   peak    per curve, the client count of the highest tps among the unfitted common points on
//           each side; the distance is the ratio of the two client counts, larger over smaller
//           (peaks at 64 and 32 -> 2.0x; 1.0x when they agree). Scored for curves with 3 or
//           more unfitted common points (on 2 points any curve peaks at one end or the other).
//           The grid steps between the two and each side's peak over all its own client counts
//           are shown for information.
//   ratio   with exactly two variants (or `--baseline NAME`), r = other tps / baseline tps at
//           each common client count, published r_pub and result r_res:
//           - ratio error |r_res / r_pub - 1| for every unfitted point: median, 90th percentile
//             (linear between the two nearest ranks), max, and how many are under 10%, 25% and
//             50%, per series and for the table;
//           - winner agreement only where the published difference is clear,
//             |r_pub - 1| > win_threshold (`--win-threshold-pct`, default 10%): the published
//             winner is the variant with r_pub > 1, else the baseline; the result agrees when it
//             picks the same variant by more than the tie band (`--tie-pct`, default 5%:
//             r_res > 1 + tie or r_res < 1 - tie). A point inside the threshold is a
//             "published tie": counted apart, with how often the result is within the tie band
//             too, as information and not as a score.
//
// Targets. The project's fidelity bar (issue 10; results/README.md "Simulated vs published"):
// a peak within 2x for at least 80% of scored curves (3 or more unfitted common points), the
// winner agreeing at 80% or more of the scored winner points, a ratio error of at most 35% at
// 70% or more of the ratio points. The summary gives each as count / of, share and met (null
// when nothing was scored); a table's counts add up with other tables' to the bar's totals
// (scripts/fidelity_totals.py).
//
// Repetitions. The result tps of a point is the cell's median over its repetitions, shown with
// their range (and each repetition's tps in the JSON); the summary gives their spread
// max / min - 1 over the points (median, 90th percentile, max). With 2 or more repetitions the
// table is also scored from each repetition's tps alone (`per_repetition`: the targets, peaks,
// winners and ratio errors of each). On the simulator a repetition is a seed (run.seed +
// repetition - 1; `repetitions_are_seeds`), elsewhere another run of the same cell. A single
// repetition's curve is noisier than the median (its peak is the argmax of one noisy curve), so
// its scores scatter around the median's, either way (it may miss a target the median meets, or
// meet one the median misses): the per-repetition rows show how far the scores move with the
// seed, not how the median verdict would move. Failed cells are left out of
// every scoring alike (the runner fails a cell at its first failed repetition).
//
// A summary gives, for the table: the peak distances (median, max, how many within 2x and at
// the same client count), winners agreeing / scored, published ties, the ratio errors, the
// fitted entries with their reasons, one line per winner disagreement and per peak more than
// 2x away, and the points on one side only and the failed cells.
//
// The same comparison is written as JSON with `--json FILE` (layout in harness/RESULTS.md,
// "Fidelity comparison files"); the text is rendered from that JSON.
//
// Wait-event tables. A reference CSV whose header has `wait_event` and `samples` (and
// `variant`, `clients`; no `tps`) is a table of pg_stat_activity samples, the top events of each
// published run (../shared/reference/clog-group-update-wait-events-128core.csv). It is compared
// per cell (variant, clients, and any other column such as `workload`):
//   matching   variant: the cell's label (after --variant renames), or else a string value of
//              the cell's matrix that names a CSV variant (so a config that sweeps
//              `clog.strategy` matches clog_exclusive / clog_group_update without labels);
//              `workload` against the cell's workload name; any other column against the
//              matrix key ending in its name.
//   shares     published: each listed event's samples / the cell's listed samples. Result: the
//              repetitions' `wait_events` summed, each listed event's samples / the result's
//              samples of the same listed events (so both shares sum to 1 over the same set;
//              CPU and unlisted events stay out). The result's samples in events the table
//              does not list, as a share of all its non-CPU samples, are shown ("unlisted").
//   score      per cell: the share error of each listed event (result - published), the total
//              variation distance TVD = 1/2 sum |error| (0 = same mix, 1 = disjoint), and
//              whether the top event agrees. Summary: mean and max TVD, top events agreeing.
//   tps claims with exactly two variants, the first in the CSV as baseline: the result's tps at
//              the table's smallest and largest common client counts; the published claim of
//              the CLOG thread (reference/README.md) is checked: the baseline falls from the
//              smallest to the largest count, the other variant holds (falls by less than
//              --tie-pct), and the other's advantage grows; for the CLOG table the published
//              advantages (+11% at 64, +64% at 128 clients) are shown beside the result's.
//   fitted     cells matching an entry of the config's `fitted` list (variant, clients, other
//              columns; from context.config or --fitted-from) are shown with the reason and
//              left out of the summary scores.
// --fix and --baseline do not apply to wait-event tables.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

// The fidelity bar (see "Targets" above).
inline constexpr double kTargetPeakDistance = 2;    // a peak's client count within 2x
inline constexpr double kTargetPeakShare = 0.8;     // of scored curves
inline constexpr double kTargetWinnerShare = 0.8;   // of scored winner points
inline constexpr double kTargetRatioError = 0.35;   // |r_res / r_pub - 1| at most this
inline constexpr double kTargetRatioShare = 0.7;    // of ratio points

struct FidelityOptions {
  std::string result_path;
  std::string reference_path;
  std::vector<std::string> fixes;    // "COLUMN=VALUE", repeatable
  std::vector<std::string> renames;  // "RESULT_LABEL=CSV_VARIANT", repeatable
  std::string baseline;              // ratio denominator; empty: the first of exactly two variants
  double tie_pct = 5;                // the result's ratio is a tie within 1 +- tie_pct percent
  double win_threshold_pct = 10;     // winners are scored where |r_pub - 1| exceeds this percentage
  std::string fitted_from;           // a config file whose `fitted` list replaces the result's
  std::string json_path;             // empty: no JSON file
};

// A published table as read from its CSV.
struct ReferenceTable {
  struct Row {
    size_t line = 0;  // 1-based line in the file
    std::string variant;
    uint64_t clients = 0;
    double tps = 0;
    std::vector<std::string> values;  // one per series column, in series_columns order
  };
  std::string path;
  std::vector<std::string> series_columns;  // the columns other than variant, clients and tps
  std::vector<Row> rows;                    // in file order
};

// Reads a reference CSV (a header line, then one row per line; fields may be double-quoted;
// blank lines are skipped). Throws UsageError naming the file and line for an unreadable file,
// a header without variant/clients/tps, a row with the wrong number of fields, a client count
// that is not a positive integer, a tps that is not a non-negative number, a duplicate row.
ReferenceTable load_reference_csv(const std::string& path);

// The comparison of `result` (a loaded result file, load_result_file) with `ref`, as the JSON
// that --json writes. Throws UsageError for bad options (--fix, --variant, --baseline,
// --tie-pct, --win-threshold-pct, --fitted-from), a malformed fitted list (naming the file and
// its JSON path) and when no cell overlaps.
nlohmann::ordered_json fidelity_compare(const nlohmann::json& result, const ReferenceTable& ref,
                                        const FidelityOptions& opts);

// The text report of a comparison made by fidelity_compare().
std::string render_fidelity(const nlohmann::ordered_json& cmp);

// A published wait-event table (see "Wait-event tables" above).
struct WaitEventTable {
  struct Row {
    size_t line = 0;
    std::string variant;
    uint64_t clients = 0;
    std::string wait_event;
    double samples = 0;
    std::vector<std::string> values;  // one per other column, in other_columns order
  };
  std::string path;
  std::vector<std::string> other_columns;  // e.g. "workload"
  std::vector<Row> rows;
};

// True when the CSV's header names wait_event and samples (a wait-event table).
bool is_wait_event_csv(const std::string& path);
// Throws UsageError naming file and line: missing columns, wrong field count, a client count
// or sample count that is not a positive integer / non-negative number, a duplicate event.
WaitEventTable load_wait_event_csv(const std::string& path);
nlohmann::ordered_json wait_event_compare(const nlohmann::json& result, const WaitEventTable& ref,
                                          const FidelityOptions& opts);
std::string render_wait_event_compare(const nlohmann::ordered_json& cmp);

// `walbench compare RESULT --reference REF.csv`: loads both, prints the report to `out`, writes
// opts.json_path atomically when set. Returns 0 (mismatches are findings); throws UsageError for
// bad input.
int fidelity_command(const FidelityOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace walbench
