// `walbench report` and `walbench compare`: result files (harness/RESULTS.md) back into the
// tables of the pgsql-hackers threads (shared/reference/README.md).
//
// Tables. Cells are grouped by everything but their variant label, client count and record
// size: same platform, wal, commit, workload (record size aside) and run blocks, and the same
// values of any other matrix key. What an override variant sets (the cells' "set", matrix
// "variants") belongs to the label: those paths leave the group key, for every cell of the file,
// so that override variants share one table as strategy variants do, and the line under the
// table ends in "; variants set PATH, ...". Each group is one table:
//
//                                        16      64    256
//   insert_locks_waitlist_4_clients    3026    2965   2846
//   insert_locks_waitlist_16_clients  12087   11287  11670
//   insert_locks_atomic_4_clients      3104  FAILED   2901
//   workload emit_message (synchronous_commit=on), storage memory, platform threads, 1 repetition x 5 s, median tps
//
// The header lists the record sizes (SizeSpec labels: fixed sizes ascending, then the others in
// file order); rows are `<label>_<clients>_clients`, labels in file order, clients ascending;
// a cell is the median tps rounded to an integer, right-aligned; "FAILED" for a failed cell,
// "-" for a combination the file does not hold. A line under the table names the workload,
// storage, repetitions and duration (and the other matrix values of the group).
//
// Other layouts (ReportOptions). Any swept key can form the columns (--columns) or take the
// clients' place in the rows (--rows): the label, clients, record_size, or a matrix key by its
// path or last component (strategy.params.num_locks, num_locks). Rows are the label and the row
// key, each part named like "16_clients" or "8_num_locks"; the keys in neither split the file
// into tables and are named in the line under each. Values sort as numbers where they are
// numbers, else in file order; labels keep file order. `--columns num_locks` on a
// NUM_XLOGINSERT_LOCKS sweep (README "Tables by any key"):
//
//                                1        8       64
//   procno_4_clients          668940  1010372  1011086
//   procno_16_clients         631300  1056690  1109406
//   random_stride_4_clients   662704  1011540  1013192
//   random_stride_16_clients  472590  1311800  1136898
//   workload ..., median tps, record_size=16; columns: strategy.params.num_locks
//
// --metric picks another measure of the cell (report_metric_names(); the line names it and
// its unit), --ratio BASELINE shows each cell in % of the BASELINE variant's cell with the same
// other row keys and column ("n/a" where BASELINE has none), --wait-events shows the share of
// each wait event in the cell's samples (summed over repetitions) for the 6 events with the
// largest share in any row of the table, the rest as "other". --format markdown writes GitHub
// tables with the line under each as a paragraph; csv writes "# <line>" then the table as
// RFC 4180 CSV (percent cells without "%"), tables separated by a blank line.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/pairing.h"

namespace walbench {

// Reads and checks a result file (schema_version 1 or 2). Throws UsageError (harness/config.h)
// naming the file and what is wrong: unreadable, not JSON (with line/column), not a walbench
// result, unsupported schema version, a cell without label/clients/ok.
nlohmann::json load_result_file(const std::string& path);

struct ReportOptions {
  std::string columns;           // a swept key; empty: the record size
  std::string rows;              // a swept key beside the label; empty: clients
  std::string ratio;             // a variant label; empty: absolute values
  std::string format = "text";   // text | markdown | csv
  std::string metric = "tps";    // one of report_metric_names()
  bool wait_events = false;      // the wait-event shares instead of a metric
};

// "tps, tps_min, ...": the measures --metric takes.
std::string report_metric_names();

// Prints one table per group, then the failed cells with their errors. Returns 0; throws
// UsageError for a bad file, an unknown key, metric, format or baseline (naming what exists),
// or options that do not go together (--wait-events with --columns, --ratio or --metric).
int report_command(const std::string& result_path, std::ostream& out, std::ostream& err,
                   const ReportOptions& options = {});

// `walbench compare BASE NEW`. Pairs the cells of the two files by their setup (pairing.h:
// every resolved setting but the run block, whatever was swept; --ignore / --pair-by narrow
// it) and prints:
//   - once, every setting in which the files differ ("  wal.storage: memory -> file"), and the
//     settings only one file records (not compared; a schema-1 file records less);
//   - the tables of NEW's paired cells (report layout) with NEW/BASE - 1 of the median tps
//     ("+12.3%"), marked "*" when the change exceeds the noise (exact two-sided Mann-Whitney U
//     over the repetitions' tps, p < 0.05, pairing_noise.h), "?" when the repetitions are too
//     few for any verdict, unmarked otherwise; "FAILED" when either side failed; a legend line;
//   - how many changes exceed the noise, and the geometric mean of NEW/BASE over the paired
//     cells that succeeded in both files;
//   - the cells left unpaired on each side, each with the settings in which it differs from
//     the closest cell of the other file.
// With `json_path`, also writes the comparison as JSON, atomically (write_file_atomically),
// keys in this order:
//   {"compare_version": 1, "base": FILE, "new": FILE, "metric": "summary.tps_median",
//    "noise_test": {"test", "over", "alpha"}, "ignore": [KEY], "pair_by": [KEY],
//    "differences": [{"path", "role": "pairs"|"measurement"|"ignored"|"not_paired_by",
//                     "base": [value texts], "new": [...]}],
//    "base_only_settings": [...], "new_only_settings": [...],      not compared
//    "pairs": [{"base_cell", "new_cell", "label", "clients", "record_size", "base_tps",
//               "new_tps", "change": NEW/BASE - 1 or null, "status": "ok"|"failed"|"no_tps",
//               "noise": "exceeds"|"within"|"n/a" or null, "p": exact p or null,
//               "repetitions": [n BASE, n NEW], "no_verdict": reason or null}],
//    "unpaired_base": [{"cell", "label", "clients", "record_size", "closest": cell or null,
//                       "differences": ["path: BASE -> NEW"], "note": reason or null}],
//    "unpaired_new": [...], "geometric_mean_change": x or null, "geometric_mean_cells": n}
// Cell numbers are positions in the files' "cells" arrays.
// Returns 0, or 1 with one line on `err` when nothing paired (the JSON is still written).
// Throws UsageError for a bad file, an unknown --ignore/--pair-by key, or two cells of one file
// with the same setup.
int compare_command(const std::string& base, const std::string& next, std::ostream& out,
                    std::ostream& err, const CompareOptions& options = {},
                    const std::string& json_path = "");

// Helpers shared with `walbench compare --reference` (harness/fidelity.cc).

// Whether the matrix value `v` names the variant `label` or a part of it (config_matrix.cc maps
// the "strategy" and "variants" matrix keys to labels: a string, or an object with "label"; a
// cell of a strategy variant crossed with an override variant is labelled "<strategy>+<variant>",
// and either part names it).
bool is_label_value(const nlohmann::json& v, const std::string& label);

// A matrix or config value as the tables print it: a string bare, anything else as JSON.
std::string value_text(const nlohmann::json& v);

// The line under a table: workload, storage, platform, repetitions x duration of `cell`, then
// ", key=value" for each member of `matrix_rest`.
std::string setup_line(const nlohmann::json& cell, const nlohmann::json& matrix_rest);

// The report layout: the first column left-aligned and padded, every other column
// right-aligned, two spaces between columns, no trailing spaces; `header` first (its first
// entry, usually empty, heads the row names), then one line per row.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

}  // namespace walbench
