// The walbench CLI (CLI11): run, rerun, merge, list, validate, report, compare, plot, calibrate.
//
// Exit status contract (NB: must match the --help footer and configs/README.md):
//   0  everything ran (and verified)
//   1  `run`: some cell failed (verification, watchdog, an error inside the model); the sweep
//      went on and the result file records which and why. `compare BASE NEW`: no cell paired
//      (one line on stderr says why)
//   2  bad input: a config or --set error (ConfigError), CLI misuse or a bad result file
//      (UsageError), a CLI11 parse error, or any other exception. Always exactly one line on
//      stderr: "walbench: error: <message>".
//   130, 143  `run`: interrupted by SIGINT, SIGTERM (harness/interrupt.h); the result file
//      records the finished cells and one line says how to resume.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/platform/line_names.h"
#include "harness/calibrate.h"
#include "harness/calibrate_hot_path.h"
#include "harness/config.h"
#include "harness/fidelity.h"
#include "harness/list.h"
#include "harness/merge.h"
#include "harness/postgres_config.h"
#include "harness/provenance.h"
#include "harness/python_script.h"
#include "harness/report.h"
#include "harness/rerun.h"
#include "harness/resume.h"
#include "harness/runner.h"

namespace walbench {
namespace {

constexpr const char* kDescription =
    "walbench: a research framework for the locks that guard PostgreSQL's write-ahead log.\n"
    "It models the WAL buffer and the locks around it (insertion locks, WALBufMappingLock,\n"
    "WALWriteLock, the CLOG), runs any locking strategy against a matrix of workloads and\n"
    "client counts, on real threads or on a deterministic simulated many-core machine\n"
    "(platform \"sim\"), verifies that the WAL each run produced is intact, and writes result\n"
    "JSON that `walbench report` turns into pgsql-hackers-style tables and `walbench compare\n"
    "--reference` holds against a published table. The WAL is PostgreSQL 15's format: with\n"
    "wal.storage \"file\", PG 15's pg_waldump reads it (README \"pg_waldump reads walbench's\n"
    "WAL\").\n";

constexpr const char* kFooter =
    "Examples:\n"
    "  walbench list strategies                  strategies and their parameters\n"
    "  walbench list platforms                   threads, sim, postgres (a real PostgreSQL:\n"
    "                                            throwaway cluster run as user walbench or\n"
    "                                            nobody when root, or dsn) and their keys\n"
    "  walbench validate configs/quick.json      check a config and count its cells\n"
    "  walbench run configs/postgres-quick.json  the quick workload on a throwaway PostgreSQL\n"
    "                                            (pgbench drives it; nothing left behind);\n"
    "                                            compare it with configs/model-vs-postgres.json's\n"
    "                                            run: compare M.json P.json --pair-by\n"
    "                                            workload.record_size\n"
    "  walbench run configs/quick.json           run it; writes results/<date>-<host>-quick.json\n"
    "  walbench run configs/insert-locks.json --set run.duration_s=120 -o long.json\n"
    "  walbench report results/2025-01-01-myhost-quick.json\n"
    "  walbench rerun r.json --cell 3            rerun a cell from what the file records\n"
    "  walbench run c.json --shard 2/3 -o s2.json\n"
    "                                            shard 2 of 3: every 3rd cell, from the 2nd\n"
    "  walbench merge s1.json s2.json s3.json -o all.json\n"
    "                                            the shards' files as one result file\n"
    "  walbench compare base.json new.json       per-cell tps change, NEW/BASE - 1\n"
    "  walbench compare r.json --reference ../shared/reference/insert-locks-fsync-off.csv\n"
    "                                            shapes, peaks, winners vs a published table\n"
    "  walbench calibrate -o presets/myhost.json measure this machine as a sim preset file\n"
    "  walbench plot r.json --usl                tps against clients with USL fits: r.png\n"
    "  walbench report r.json --usl              Universal Scalability Law fit of each curve\n"
    "\n"
    "Configs live in configs/*.json; every key, its default and the matrix rules are in\n"
    "configs/README.md. `walbench SUBCOMMAND --help` shows a subcommand's options.\n"
    "\n"
    "Exit status: 0 ok; 1 a cell failed (verification, watchdog), or compare paired no cell; 2\n"
    "bad input (config, command line, result file), reported as one line on stderr; 130/143 a\n"
    "run interrupted by SIGINT/SIGTERM (resume it with walbench run --resume RESULT).";

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int fail(const std::string& message) {
  std::cout.flush();
  std::cerr << "walbench: error: " << one_line(message) << std::endl;
  return 2;
}


std::string short_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  std::string h = buf;
  h = h.substr(0, h.find('.'));
  for (char& c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return h.empty() ? "unknown-host" : h;
}

// results/<YYYY-MM-DD>-<host>-<config basename>.json (basenames joined by '+' for several
// configs), relative to the current directory; "-2", "-3", ... when that file already exists,
// so a second run on the same day never overwrites the first.
std::string default_output_path(const std::vector<std::string>& configs,
                                const std::string& suffix = "") {
  std::vector<std::string> stems;
  for (const auto& c : configs) stems.push_back(std::filesystem::path(c).stem().string());
  const std::string base = "results/" + local_date() + "-" + short_hostname() + "-" +
                           absl::StrJoin(stems, "+") + suffix;
  std::error_code ec;
  std::filesystem::create_directories("results", ec);
  if (ec) throw UsageError("run: cannot create results/ (" + ec.message() + "); use -o FILE");
  std::string path = base + ".json";
  for (int n = 2; std::filesystem::exists(path); ++n) path = base + "-" + std::to_string(n) + ".json";
  return path;
}

// Every error of every config is reported, one line each; the summary of a good one says what
// its time is (run_time_summary: wall clock for threads cells, virtual for sim cells).
int validate_command(const std::vector<std::string>& paths, const std::vector<std::string>& sets) {
  int rc = 0;
  for (const auto& path : paths) {
    const std::vector<ConfigError> errors = config_errors(path, sets);
    for (const ConfigError& e : errors) rc = fail(e.what());
    if (!errors.empty()) continue;
    try {
      const LoadedConfigs loaded = load_configs({path}, sets);
      const MatrixShape& shape = loaded.shapes[0];
      std::cout << absl::StrFormat("%s: ok, %d cell%s (%s), %s\n", path, shape.cells,
                                   shape.cells == 1 ? "" : "s", shape.describe(),
                                   run_time_summary(loaded.cells));
    } catch (const ConfigError& e) {  // config_errors found none: not expected
      rc = fail(e.what());
    }
  }
  return rc;
}

// run --trace: keep only the traced cell (the matrix's only one, or --trace-cell INDEX).
void select_traced_cell(LoadedConfigs& loaded, const std::optional<TraceOptions>& trace,
                        const std::optional<size_t>& trace_cell) {
  if (!trace) {
    if (trace_cell) throw UsageError("run: --trace-cell needs --trace FILE.json");
    return;
  }
  if (!(trace->window_s > 0))
    throw UsageError(absl::StrFormat("run: --trace-window must be > 0 seconds (got %g)", trace->window_s));
  const size_t n = loaded.cells.size();
  if (!trace_cell) {
    if (n != 1)
      throw UsageError(absl::StrFormat(
          "run: --trace records one cell and the matrix has %d; pick one with --trace-cell "
          "INDEX (0-%d, the index `walbench validate` counts and the result file records)", n, n - 1));
    return;
  }
  if (*trace_cell >= n)
    throw UsageError(absl::StrFormat("run: --trace-cell %d: the matrix has %d cell%s (0-%d)",
                                     *trace_cell, n, n == 1 ? "" : "s", n - 1));
  loaded.cells = {loaded.cells[*trace_cell]};
}

int run_command(const std::vector<std::string>& paths, const std::vector<std::string>& sets,
                std::string output, bool force, bool quiet, unsigned jobs,
                const std::optional<std::string>& shard_text,
                const std::optional<TraceOptions>& trace = std::nullopt,
                const std::optional<size_t>& trace_cell = std::nullopt, uint32_t top_lines = 0) {
  const std::optional<Shard> sharded =
      shard_text ? std::optional<Shard>(parse_shard(*shard_text)) : std::nullopt;
  if (sharded && trace) throw UsageError("run: --trace and --shard do not go together");
  LoadedConfigs loaded = load_configs(paths, sets);  // everything validated up front
  select_traced_cell(loaded, trace, trace_cell);
  if (top_lines > 0) {
    const bool any_sim = std::any_of(loaded.cells.begin(), loaded.cells.end(),
                                     [](const CellSpec& c) { return c.platform.kind == "sim"; });
    if (!any_sim)
      throw UsageError("run: --top-lines reports the simulator's cache lines, and no cell of this "
                       "matrix runs on the simulated platform (platform.kind \"sim\")");
    line_names::enable();  // the locks built from now on name their lines
    for (CellSpec& c : loaded.cells) c.top_lines = top_lines;
  }
  nlohmann::json shard;
  if (sharded) {
    const Shard& s = *sharded;
    shard = shard_context(s, loaded.cells.size());
    std::vector<CellSpec> mine;
    for (size_t i : shard_cell_indices(s, loaded.cells.size())) mine.push_back(loaded.cells[i]);
    loaded.cells = std::move(mine);
    if (output.empty())
      output = default_output_path(paths, absl::StrFormat("-shard%dof%d", s.k, s.n));
  }
  if (output.empty())
    output = default_output_path(paths);
  else
    check_output_path(output, force, "run");
  RunOptions opts;
  opts.output_path = output;
  opts.config_paths = paths;
  opts.config = config_without_passwords(loaded.combined());  // as recorded
  opts.config_hash = config_hash(opts.config);
  opts.overrides = overrides_without_passwords(sets);
  opts.quiet = quiet;
  opts.jobs = jobs;
  opts.shard = shard;
  opts.trace = trace;
  opts.top_lines = top_lines;
  std::cerr << stale_binary_warning();
  if (!quiet)
    std::cerr << absl::StrFormat("walbench: %d cell%s%s from %s -> %s\n", loaded.cells.size(),
                                 loaded.cells.size() == 1 ? "" : "s",
                                 sharded ? absl::StrFormat(" (shard %d/%d of %d cells)", sharded->k,
                                                           sharded->n, shard["total_cells"].get<size_t>())
                                         : "",
                                 absl::StrJoin(paths, ", "), output);
  return run_matrix(loaded.cells, opts, std::cout, std::cerr);
}

int real_main(int argc, char** argv) {
  CLI::App app{kDescription, "walbench"};
  app.footer(kFooter);
  app.set_version_flag("--version", version_string(), "print the version and build, then exit");
  app.require_subcommand(1);
  app.fallthrough(false);

  // run
  std::vector<std::string> run_configs, run_sets;
  std::string run_output, run_shard;
  bool run_quiet = false, run_force = false;
  unsigned run_jobs = std::max(1u, std::thread::hardware_concurrency());
  CLI::App* run = app.add_subcommand(
      "run", "run the matrix of one or more configs, verify every cell, write a result file");
  run->add_option("CONFIG", run_configs,
                  "config file(s); several run one after the other, cells concatenated")
      ->type_name("FILE");
  run->add_option("-o,--output", run_output,
                  "result file (default: results/<YYYY-MM-DD>-<host>-<config>.json)")
      ->type_name("FILE");
  run->add_option("--set", run_sets,
                  "override a config value, PATH=VALUE with a dotted PATH (run.duration_s=2, "
                  "matrix.clients=[1,2]); VALUE is JSON if it parses, else a string; repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("PATH=VALUE");
  run->add_flag("--force", run_force, "overwrite the -o file if it exists (refused otherwise)");
  run->add_flag("-q,--quiet", run_quiet, "no progress lines (the per-cell lines stay)");
  std::string run_resume;
  run->add_option("--resume", run_resume,
                  "finish an interrupted (or failed) run: rebuild the matrix from the config "
                  "RESULT records, keep its finished cells, run the missing, failed and "
                  "interrupted ones, and write the complete file over RESULT (or to -o); refused "
                  "when this binary or the config differ from the run's")
      ->type_name("RESULT");
  run->add_option("-j,--jobs", run_jobs,
                  "simulated-platform cells run this many at a time, one per core (default: "
                  "the number of cores); a cell on real threads always runs alone, with no "
                  "simulated cell beside it")
      ->check(CLI::Range(1u, 1024u))
      ->type_name("N");
  CLI::Option* run_shard_option = run->add_option("--shard", run_shard,
                  "run only shard K of N: the cells whose index i has i mod N = K-1; the result "
                  "file records the shard, for `walbench merge` (default file name gets "
                  "-shardKofN)")
      ->type_name("K/N");
  TraceOptions run_trace;
  size_t run_trace_cell = 0;
  CLI::Option* run_trace_option = run->add_option("--trace", run_trace.path,
                  "write the lock-wait trace of one cell (its first repetition) to FILE.json, a "
                  "Chrome trace event file for ui.perfetto.dev: a track per client with its lock "
                  "waits, holds, sleeps and I/O, a track and a holders/queue counter per lock; "
                  "runs only that cell (see --trace-cell)")
      ->type_name("FILE.json");
  run->add_option("--trace-window", run_trace.window_s,
                  "seconds of the timed window the trace records, from its start (default 0.1; "
                  "virtual seconds on the simulator); a window past the run's end records to "
                  "the last client's return")
      ->type_name("S");
  CLI::Option* run_trace_cell_option = run->add_option("--trace-cell", run_trace_cell,
                  "with --trace: the cell to run and trace, by index (0-based, as `walbench "
                  "validate` counts and the result file records); required when the matrix has "
                  "more than one cell")
      ->type_name("INDEX");
  uint32_t run_top_lines = 0;
  CLI::Option* run_top_lines_option = run->add_option("--top-lines", run_top_lines,
                  "simulated cells: record in each repetition's platform.top_lines the N cache "
                  "lines whose accesses waited longest in the timed window, named by the locks "
                  "on them (LWLock:ProcArrayLock, Spinlock:insertpos_lck, ...), with their wait "
                  "(ms, us per transaction), loads, load misses, RMWs and stores; every number "
                  "the cell measures stays the same (harness/RESULTS.md \"Hot lines\")")
      ->check(CLI::Range(1u, 1000u))
      ->type_name("N");
  run->footer(
      "Example: walbench run configs/quick.json --set run.repetitions=3 -o quick3.json\n"
      "Trace: walbench run configs/sim-insert-locks-fsync-off.json --trace-cell 40 --trace-window 0.01\n"
      "  --trace t.json   (cell 40: 64 clients, waitlist insertingAt, 4 KiB records)\n"
      "SIGINT/SIGTERM stops the running cells at once, records them as interrupted, writes the\n"
      "file and prints the command that resumes it: walbench run --resume RESULT. A second\n"
      "signal exits at once (the file keeps its last complete version).\n"
      "Exit status: 0 all cells ok; 1 some cell failed (recorded in the result file); 2 bad "
      "input; 130/143 interrupted by SIGINT/SIGTERM.");

  // rerun
  RerunOptions rr;
  rr.jobs = std::max(1u, std::thread::hardware_concurrency());
  CLI::App* rerun = app.add_subcommand(
      "rerun", "run cells of a result file again, from the setup the file records");
  rerun->add_option("RESULT", rr.result_path, "result JSON written by walbench run (schema 2)")
      ->required()
      ->type_name("FILE");
  rerun->add_option("--cell", rr.cells, "the cell with this index (its \"index\"); repeatable; "
                    "default every cell")
      ->type_name("N");
  rerun->add_option("-o,--output", rr.output_path,
                    "result file (default: results/<RESULT stem>-rerun.json)")
      ->type_name("FILE");
  rerun->add_flag("--force", rr.force, "overwrite the -o file if it exists");
  rerun->add_flag("-q,--quiet", rr.quiet, "no progress lines");
  rerun->add_option("-j,--jobs", rr.jobs, "simulated cells at a time, as for run")
      ->check(CLI::Range(1u, 1024u))
      ->type_name("N");
  rerun->footer(
      "Example: walbench rerun results/2026-12-01-vm-quick.json --cell 3 -o cell3.json\n"
      "Every value a cell used (platform with every simulator parameter, wal, commit, clog,\n"
      "workload, strategy parameters, run) is in the file; a simulated cell rerun by the same\n"
      "build is identical. The new file's context names the file and cells under \"rerun_of\";\n"
      "a rerun by a binary built from other code says so on stderr.");

  // merge
  MergeOptions mo;
  CLI::App* merge = app.add_subcommand(
      "merge", "combine the result files of a sharded run (run --shard K/N) into one");
  merge->add_option("RESULT", mo.inputs, "the shards' result files, in any order")
      ->required()
      ->type_name("FILE");
  merge->add_option("-o,--output", mo.output_path, "the merged result file")->required()->type_name("FILE");
  merge->add_flag("--force", mo.force, "overwrite the -o file if it exists");
  merge->footer(
      "Example: walbench merge q-1.json q-2.json q-3.json -o q.json\n"
      "Refuses (one line, exit status 2) files of different configs (after --set) or builds (git\n"
      "sha, uncommitted changes, build flags), and a missing or duplicated cell. The merged file\n"
      "holds the cells in index order, reads like an unsharded run's (report, compare, rerun),\n"
      "and names the files merged in context.merge with each shard's host, start and wall time.");

  // list
  std::string list_what = "all";
  CLI::App* list = app.add_subcommand(
      "list",
      "list strategies, CLOG strategies, workloads and platforms with their parameters and "
      "defaults");
  list->add_option("WHAT", list_what,
                   "strategies | clog | workloads | platforms | all (default all)")
      ->type_name("");
  list->footer("Example: walbench list strategies");

  // validate
  std::vector<std::string> val_configs, val_sets;
  CLI::App* validate = app.add_subcommand(
      "validate", "check config files without running them and count their cells");
  validate->add_option("CONFIG", val_configs, "config file(s)")->required()->type_name("FILE");
  validate
      ->add_option("--set", val_sets, "override a config value as for run (PATH=VALUE)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("PATH=VALUE");
  validate->footer(
      "Example: walbench validate configs/*.json\n"
      "Prints \"<file>: ok, N cells (...)\" and the time the run takes per good file (a lower "
      "bound on wall-clock time for threads cells; for sim cells the virtual time, not an "
      "estimate of real time), and every error of a bad one, one line each; exit status 2 if "
      "any is bad.");

  // report
  std::string report_path;
  CLI::App* report = app.add_subcommand(
      "report",
      "print a result file as tables (pgsql-hackers format): median tps or another measure, "
      "absolute or in % of a variant, or the wait-event shares, with any swept key in the "
      "columns or rows");
  report->add_option("RESULT", report_path, "result JSON written by walbench run")
      ->required()
      ->type_name("FILE");
  ReportOptions rep;
  report->add_option("--columns", rep.columns,
                     "put this swept key in the columns instead of the record size: label, "
                     "clients, record_size or a matrix key (strategy.params.num_locks, or "
                     "num_locks when unique)")
      ->type_name("KEY");
  report->add_option("--rows", rep.rows,
                     "rows are <label>_<value>_<KEY> instead of <label>_<clients>_clients")
      ->type_name("KEY");
  report->add_option("--ratio", rep.ratio,
                     "each cell in % of this variant's cell with the same other row keys and "
                     "column (100% = BASELINE)")
      ->type_name("BASELINE");
  report->add_option("--metric", rep.metric, "the measure in the cells (default tps): " + report_metric_names())
      ->type_name("NAME");
  report->add_flag("--wait-events", rep.wait_events,
                   "the wait-event shares per cell in % of the samples: the 6 events with the "
                   "largest share in any row, the rest as \"other\"");
  report->add_option("--format", rep.format, "text (pgsql-hackers layout, default), markdown or csv")
      ->type_name("FORMAT");
  report->footer(
      "Examples:\n"
      "  walbench report results/2025-01-01-myhost-quick.json\n"
      "  walbench report r.json --columns num_locks --ratio procno     % of procno per lock count\n"
      "  walbench report r.json --metric p99 --format markdown\n"
      "  walbench report r.json --wait-events --format csv\n"
      "  walbench report r.json --usl                                   USL fit per curve");
  bool report_usl = false;
  report->add_flag("--usl", report_usl,
                   "instead of the tables, fit the Universal Scalability Law to each curve (tps "
                   "against clients, per variant and swept key) and print lambda, sigma, kappa, "
                   "the peak N* and R^2 (scripts/usl_fit.py, SciPy)");

  // plot
  std::string plot_result, plot_output, plot_ratio, plot_reference;
  bool plot_usl = false;
  CLI::App* plot = app.add_subcommand(
      "plot", "draw a result file: tps against clients, one line per variant, one panel per "
              "record size or other swept key (scripts/plot_result.py, matplotlib)");
  plot->add_option("RESULT", plot_result, "result JSON written by walbench run")
      ->required()
      ->type_name("FILE");
  plot->add_option("-o,--output", plot_output, "image to write, .png or .svg (default: RESULT "
                   "with .json replaced by .png)")
      ->type_name("FILE");
  plot->add_option("--ratio", plot_ratio, "each variant in % of this variant's tps at the same "
                   "clients (the threads' relative curves)")
      ->type_name("BASELINE");
  plot->add_option("--reference", plot_reference, "overlay a published table (dashed; "
                   "../shared/reference/*.csv: variant, clients, tps, series columns)")
      ->type_name("CSV");
  plot->add_flag("--usl", plot_usl, "draw each curve's Universal Scalability Law fit (the fit "
                 "report --usl prints)");
  plot->footer(
      "Example: walbench plot results/2025-01-01-myhost-insert-locks.json --ratio "
      "insert_locks_waitlist\n"
      "Points are median tps; error bars the confidence interval of the median the summary "
      "records (3+ repetitions) or min-max (2); the caption says which. Needs python3-matplotlib "
      "(and python3-scipy for --usl): scripts/setup.sh.");

  // compare
  std::string cmp_base, cmp_new;
  CompareOptions cmp_opts;
  FidelityOptions fid;
  CLI::App* compare = app.add_subcommand(
      "compare",
      "compare two result files cell by cell (NEW/BASE - 1 of the median tps, pairing only "
      "cells with the same setup, each change tested against the noise), or one result file "
      "with a published table (--reference)");
  compare->add_option("BASE", cmp_base, "baseline result file (with --reference: the result file)")
      ->required()
      ->type_name("FILE");
  compare->add_option("NEW", cmp_new, "result file to compare against BASE (not with --reference)")
      ->type_name("FILE");
  CLI::Option* cmp_ignore =
      compare
          ->add_option("--ignore", cmp_opts.ignore,
                       "BASE NEW: pair cells even when they differ in KEY, a dotted setting path "
                       "(wal.storage, platform.sim, run, label); repeatable")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->type_name("KEY");
  CLI::Option* cmp_pair_by =
      compare
          ->add_option("--pair-by", cmp_opts.pair_by,
                       "BASE NEW: pair cells by clients and these settings only (dotted paths, "
                       "as for --ignore); repeatable")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->type_name("KEY");
  CLI::Option* cmp_ref =
      compare
          ->add_option("--reference", fid.reference_path,
                       "published table (variant,clients,...,tps CSV, ../shared/reference/) to "
                       "hold the result's shapes, peaks and winners against")
          ->type_name("CSV");
  CLI::Option* cmp_fix =
      compare
          ->add_option("--fix", fid.fixes,
                       "compare one slice: keep the CSV rows (and result cells) with COLUMN=VALUE, "
                       "for a column the result's matrix lacks (tables=permanent); repeatable")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->type_name("COLUMN=VALUE");
  CLI::Option* cmp_variant =
      compare
          ->add_option("--variant", fid.renames,
                       "compare the result's LABEL as the CSV's VARIANT; repeatable")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->type_name("LABEL=VARIANT");
  CLI::Option* cmp_baseline =
      compare
          ->add_option("--baseline", fid.baseline,
                       "the variant the others are divided by (default: the first of exactly two)")
          ->type_name("VARIANT");
  CLI::Option* cmp_tie =
      compare
          ->add_option("--tie-pct", fid.tie_pct,
                       "the result's tie band: a result ratio within 1 +- PCT% names no winner, so it "
                       "cannot agree with a published winner (default 5)")
          ->check(CLI::Range(0.0, 99.999))
          ->type_name("PCT");
  CLI::Option* cmp_win_threshold =
      compare
          ->add_option("--win-threshold-pct", fid.win_threshold_pct,
                       "score winner agreement only where the published ratio is off 1 by more than "
                       "PCT%; closer points are reported as published ties, not scored (default 10)")
          ->check(CLI::Range(0.0, 99.999))
          ->type_name("PCT");
  CLI::Option* cmp_fitted_from =
      compare
          ->add_option("--fitted-from", fid.fitted_from,
                       "take the fitted list (reference rows the config was set up from, shown but not "
                       "scored) from CONFIG instead of the result's context.config, for result files "
                       "written before configs had one")
          ->type_name("CONFIG");
  compare->add_option("--json", fid.json_path, "also write the comparison as JSON (atomically)")
      ->type_name("FILE");
  compare->footer(
      "Examples:\n"
      "  walbench compare results/base.json results/new.json\n"
      "  walbench compare a.json b.json --ignore label --ignore params --ignore strategy\n"
      "  walbench compare sim.json --reference ../shared/reference/insert-locks-fsync-off.csv\n"
      "  walbench compare r.json --reference ../shared/reference/xloginsert-scale-32core.csv "
      "--fix tables=permanent\n"
      "BASE NEW pairs cells whose resolved setup is the same (label, strategy, params, clients, "
      "platform, workload, wal, commit, clog; the run block and the swept keys do not matter), "
      "lists once every setting the files differ in, marks a change '*' when an exact "
      "Mann-Whitney U test over the repetitions' tps gives p < 0.05 ('?' when too few "
      "repetitions) and lists the unpaired cells with the reason; --json FILE writes it with the "
      "p-values. Exit status: 0 compared; 1 "
      "nothing paired; 2 bad input, an unknown KEY or two cells of one file with the same setup.\n"
      "With --reference, cells match rows by label (or --variant), clients and the matrix keys "
      "named like the other CSV columns (workload.record_size -> record_size); absolute tps are "
      "shown, not scored, and so are the points the config was fitted to (its \"fitted\" list). "
      "Scored: peak distance, ratio errors, and winners where the published ratio is off 1 by more "
      "than --win-threshold-pct; against the fidelity bar (peaks within 2x for 80% of scored curves, "
      "winners at 80% of scored points, ratio errors <= 35% at 70%). A cell's tps is its median over "
      "its repetitions; with 2 or more (run.repetitions: seeds on the simulator) the table is also "
      "scored from each repetition alone (noisier than the median: it shows how far the scores move "
      "with the seed); scripts/fidelity_totals.py adds the bar up over several tables. Exit status: 0 the comparison "
      "was made (mismatches are findings); 2 bad input or no overlapping cells.");

  // calibrate
  CalibrateOptions cal;
  std::string cal_output, cal_fsync = ".";
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "measure this machine's latencies and bandwidths; write them as a sim preset file");
  calibrate->add_option("-o,--output", cal_output, "preset file to write (default: print it)")
      ->type_name("FILE");
  calibrate
      ->add_option("--fsync-path", cal_fsync,
                   "directory for the fsync and write-bandwidth measurements (a temporary file, "
                   "removed); none skips them (default: the current directory)")
      ->type_name("DIR");
  calibrate->add_option("--name", cal.name, "machine name for the description (default: host name)")
      ->type_name("NAME");
  calibrate->add_flag("--quick", cal.quick, "fewer repetitions: under 5 s instead of under 30 s");
  std::string cal_hot_path;
  calibrate
      ->add_option("--hot-path", cal_hot_path,
                   "instead of a preset: measure one core's memcpy and CRC rates and print, per "
                   "real-thread cell of RESULT, its tps as % of that limit (copy + CRC of each "
                   "transaction's WAL bytes) and its peak RSS")
      ->type_name("RESULT");
  calibrate->footer(
      "Example: walbench calibrate -o presets/myhost.json, then in a config\n"
      "  \"platform\": {\"kind\": \"sim\", \"preset\": \"myhost.json\", \"cores\": 64}\n"
      "Example: walbench calibrate --hot-path bench.json   (after walbench run configs/bench-hot-path.json -o bench.json)\n"
      "Measures cache-line transfers, atomics, semaphore wake-ups, context switches, memcpy/CRC "
      "bandwidth and fsync (presets/README.md); each figure is printed with its spread on stderr.");

  // CLI11 would call an unknown subcommand "a subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), first) == names.end()) {
      const std::string hint = closest_match(first, names);
      return fail("unknown subcommand \"" + first + "\"; expected one of " +
                  absl::StrJoin(names, ", ") +
                  (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: to stdout, status 0
    std::string where;
    for (const CLI::App* sub : app.get_subcommands()) where = sub->get_name();
    std::string msg = e.what();
    if (msg.empty()) msg = e.get_name();
    return fail((where.empty() ? "" : where + ": ") + msg + " (see walbench " +
                (where.empty() ? "" : where + " ") + "--help)");
  }

  if (*run && !run_resume.empty()) {
    if (run_trace_option->count())
      return fail("run: --trace does not go with --resume (trace one cell of a config instead)");
    if (run_top_lines_option->count())
      return fail("run: --resume takes --top-lines from RESULT (its context.top_lines, set when "
                  "the run had the option); give no --top-lines (see walbench run --help)");
    if (!run_configs.empty() || !run_sets.empty() || run_shard_option->count())
      return fail("run: --resume takes the config (and the shard) from RESULT; give no CONFIG, "
                  "--set or --shard (see walbench run --help)");
    return resume_command({run_resume, run_output, run_force, run_quiet, run_jobs}, std::cout,
                          std::cerr);
  }
  if (*run && run_configs.empty())
    return fail("run: CONFIG is required (or --resume RESULT) (see walbench run --help)");
  if (*run)
    return run_command(run_configs, run_sets, run_output, run_force, run_quiet, run_jobs,
                       run_shard_option->count() ? std::optional<std::string>(run_shard)
                                                 : std::nullopt,
                       run_trace_option->count() ? std::optional<TraceOptions>(run_trace)
                                                 : std::nullopt,
                       run_trace_cell_option->count() ? std::optional<size_t>(run_trace_cell)
                                                      : std::nullopt,
                       run_top_lines);
  if (*merge) return merge_command(mo, std::cout, std::cerr);
  if (*rerun) return rerun_command(rr, std::cout, std::cerr);
  if (*list) {
    print_list(std::cout, list_what);
    return 0;
  }
  if (*validate) return validate_command(val_configs, val_sets);
  if (*report && report_usl) return run_python_script("usl_fit.py", {report_path});
  if (*report) return report_command(report_path, std::cout, std::cerr, rep);
  if (*plot) {
    std::vector<std::string> args = {
        "--output=" + (plot_output.empty() ? default_plot_path(plot_result) : plot_output)};
    if (!plot_ratio.empty()) args.push_back("--ratio=" + plot_ratio);
    if (!plot_reference.empty()) args.push_back("--reference=" + plot_reference);
    if (plot_usl) args.push_back("--usl");
    args.insert(args.end(), {"--", plot_result});
    return run_python_script("plot_result.py", args);
  }
  if (*calibrate && !cal_hot_path.empty())
    return calibrate_hot_path_command(cal_hot_path, cal.quick, std::cout, std::cerr);
  if (*calibrate) {
    cal.fsync_dir = cal_fsync == "none" ? "" : cal_fsync;
    return calibrate_command(cal, cal_output, std::cout, std::cerr);
  }
  if (*compare) {
    if (cmp_ref->count() == 0) {
      for (const CLI::Option* o : {cmp_fix, cmp_variant, cmp_baseline, cmp_tie, cmp_win_threshold, cmp_fitted_from})
        if (o->count() > 0)
          return fail("compare: " + o->get_name() + " needs --reference (see walbench compare --help)");
      if (cmp_new.empty())
        return fail("compare: NEW is required: compare BASE NEW, or RESULT --reference CSV (see "
                    "walbench compare --help)");
      return compare_command(cmp_base, cmp_new, std::cout, std::cerr, cmp_opts, fid.json_path);
    }
    for (const CLI::Option* o : {cmp_ignore, cmp_pair_by})
      if (o->count() > 0)
        return fail("compare: " + o->get_name() + " pairs the cells of BASE NEW; it does not apply "
                    "to --reference (see walbench compare --help)");
    if (!cmp_new.empty())
      return fail("compare: --reference compares one result file with a table; got a second file " +
                  cmp_new + " (see walbench compare --help)");
    fid.result_path = cmp_base;
    return fidelity_command(fid, std::cout, std::cerr);
  }
  return fail("no subcommand (see walbench --help)");
}

}  // namespace
}  // namespace walbench

int main(int argc, char** argv) {
  try {
    walbench::set_command_line(argc, argv);
    return walbench::real_main(argc, argv);
  } catch (const walbench::ConfigError& e) {
    return walbench::fail(e.what());
  } catch (const walbench::UsageError& e) {
    return walbench::fail(e.what());
  } catch (const std::exception& e) {
    return walbench::fail(e.what());
  } catch (...) {
    return walbench::fail("unexpected internal error");
  }
}
