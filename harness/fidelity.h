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
//   shape   tps / tps at the smallest common client count, reference and result side by side
//   peak    the client count of the highest tps on the common grid; it matches when the two
//           peaks are at most one step apart on that grid (scored only for grids of 3 or more
//           points: on 2 points any two peaks are within one step)
//   winner  with exactly two variants (or `--baseline NAME`), other/baseline tps at each common
//           client count: the other variant wins above 1 + tie, the baseline below 1 - tie, a
//           tie in between (`--tie-pct`, default 5%); it matches when both sides name the same
// A summary counts the peaks and winners matched and lists every mismatch on one line.
//
// The same comparison is written as JSON with `--json FILE` (layout in harness/RESULTS.md,
// "Fidelity comparison files"); the text is rendered from that JSON.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

struct FidelityOptions {
  std::string result_path;
  std::string reference_path;
  std::vector<std::string> fixes;    // "COLUMN=VALUE", repeatable
  std::vector<std::string> renames;  // "RESULT_LABEL=CSV_VARIANT", repeatable
  std::string baseline;              // ratio denominator; empty: the first of exactly two variants
  double tie_pct = 5;                // winner: "tie" within +-tie_pct percent
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
// that --json writes. Throws UsageError for bad options (--fix, --variant, --baseline) and when
// no cell overlaps.
nlohmann::ordered_json fidelity_compare(const nlohmann::json& result, const ReferenceTable& ref,
                                        const FidelityOptions& opts);

// The text report of a comparison made by fidelity_compare().
std::string render_fidelity(const nlohmann::ordered_json& cmp);

// `walbench compare RESULT --reference REF.csv`: loads both, prints the report to `out`, writes
// opts.json_path atomically when set. Returns 0 (mismatches are findings); throws UsageError for
// bad input.
int fidelity_command(const FidelityOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace walbench
