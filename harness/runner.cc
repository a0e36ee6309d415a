// The matrix runner: the order cells and repetitions run in (run.interleave, parallel simulated
// cells), the per-cell line, and the result file rewritten after each cell. See runner.h for a
// repetition's order of events and harness/RESULTS.md for the file.
#include "harness/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_format.h"
#include "harness/interrupt.h"
#include "harness/postgres_run.h"
#include "harness/provenance.h"
#include "harness/repetition.h"
#include "strategies/strategy.h"

namespace walbench {

namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A matrix value that names the cell's variant (its value is the label, or an object carrying
// it): left out of the one-line cell description because the label is printed already.
bool names_variant(const nlohmann::json& v, const std::string& label) {
  if (v.is_string()) return v.get<std::string>() == label;
  if (v.is_object() && v.contains("label") && v["label"].is_string())
    return v["label"].get<std::string>() == label;
  return false;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "insert_locks_atomic clients=8 record_size=16 wal_buffers=64"
std::string describe_cell(const CellSpec& cell) {
  std::string s = absl::StrFormat("%s clients=%u record_size=%s", cell.label, cell.clients,
                                  cell.workload.record_size.label());
  if (cell.matrix_values.is_object()) {
    for (const auto& [key, value] : cell.matrix_values.items()) {
      if (key == "clients" || key == "strategy" || key == "variants" ||  // parts of the label
          ends_with(key, "record_size") || names_variant(value, cell.label))
        continue;
      const auto dot = key.rfind('.');
      const std::string shown_key = dot == std::string::npos ? key : key.substr(dot + 1);
      s += " " + shown_key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return s;
}

// The progress lines of a simulated cell, each written whole and prefixed with the cell
// ("cell 3/12 insert_locks_atomic clients=8 record_size=16: progress: ..."): with -j several
// cells print at once, from their worker threads, and a shared mutex keeps their lines whole.
class CellProgressLines : public std::streambuf {
 public:
  CellProgressLines(std::ostream& target, std::mutex& mutex, std::string prefix)
      : target_(target), mutex_(mutex), prefix_(std::move(prefix)) {}

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    line_ += traits_type::to_char_type(ch);
    if (line_.back() == '\n') {
      const std::lock_guard<std::mutex> lock(mutex_);
      target_ << prefix_ + line_;
      target_.flush();
      line_.clear();
    }
    return ch;
  }

 private:
  std::ostream& target_;
  std::mutex& mutex_;
  const std::string prefix_;
  std::string line_;  // the line being written, up to its '\n'
};

// "3/12": the cell's position as its line shows it (NB: must match emit_cell in run_matrix).
std::string cell_position(const CellSpec& cell, size_t k, size_t cells) {
  const bool own_position = cell.total >= cells && cell.index < cell.total;
  return own_position ? absl::StrFormat("%d/%d", cell.index + 1, cell.total)
                      : absl::StrFormat("%d/%d", k + 1, cells);
}

// One cell's repetitions so far.
struct CellOutcome {
  bool ok = true;
  std::string error;
  ojson reps = ojson::array();
  std::vector<RepResult> results;
  CellFactory factory = nullptr;
  bool started = false;
  bool ran = false;          // some repetition started
  bool interrupted = false;  // by SIGINT/SIGTERM (harness/interrupt.h)
  CellWindow window;         // run.max_window_s: the first repetition's window, for all
};

uint32_t repetitions_of(const CellSpec& cell) { return std::max<uint32_t>(1, cell.run.repetitions); }

std::string repetition_error(const CellSpec& cell, uint32_t r, uint64_t seed,
                             const std::string& msg) {
  const uint32_t nreps = repetitions_of(cell);
  return nreps > 1 ? absl::StrFormat("repetition %d/%d (seed %d): %s", r + 1, nreps, seed, msg)
                   : msg;
}

// Makes the handler for client threads that are stuck for good in repetition r of a cell.
using StuckHandlerFactory = std::function<StuckHandler(CellOutcome&, uint32_t r, uint64_t seed)>;

// Looks the factory up once per cell (a lookup failure fails the cell).
void start_cell(const CellSpec& cell, const FactoryLookup& lookup, CellOutcome& co) {
  if (co.started || co.interrupted) return;
  co.started = true;
  if (cell.platform.kind == "postgres") return;  // a server, not a model: PostgresRuns
  try {
    co.factory = lookup(cell);
    if (!co.factory)
      throw std::runtime_error("strategy " + cell.strategy + " has no implementation yet");
  } catch (const std::exception& e) {
    co.ok = false;
    co.error = e.what();
  }
  if (co.ok && cell.clients == 0) {
    co.ok = false;
    co.error = "clients must be at least 1";
  }
}

// A signal stopped the cell or kept it from starting (harness/interrupt.h); a repetition it
// stopped is left out.
void mark_interrupted(CellOutcome& co, int sig) {
  co.ok = false;
  co.interrupted = true;
  co.error = co.ran ? interrupted_error(sig)
                    : "not run: " + interrupted_error(sig) + " before it started";
}

// Repetition r of a cell (nothing when the cell already failed).
void run_cell_repetition(const CellSpec& cell, uint32_t r, const FactoryLookup& lookup, bool quiet,
                         std::ostream& err, const StuckHandlerFactory& stuck_handler,
                         PostgresRuns& postgres, CellOutcome& co,
                         const TraceOptions* trace = nullptr) {
  if (co.ok && interrupt_signal() != 0) return mark_interrupted(co, interrupt_signal());
  start_cell(cell, lookup, co);
  if (!co.ok) return;
  const uint64_t seed = cell.run.seed + r;
  co.ran = true;
  RepResult rr = cell.platform.kind == "postgres"
                     ? postgres.run_repetition(cell, seed, quiet, err)
                     : run_repetition(cell, co.factory, seed, quiet, err,
                                      stuck_handler(co, r, seed), r == 0 ? trace : nullptr,
                                      &co.window);
  if (!rr.ok && interrupt_signal() != 0) return mark_interrupted(co, interrupt_signal());
  co.reps.push_back(rr.json);
  if (!rr.ok) {
    co.ok = false;
    co.error = repetition_error(cell, r, seed, rr.error);
  }
  co.results.push_back(std::move(rr));
}

// Every repetition of a cell, back to back (stopping at the first failure).
CellOutcome compute_cell(const CellSpec& cell, const FactoryLookup& lookup, bool quiet,
                         std::ostream& err, const StuckHandlerFactory& stuck_handler,
                         PostgresRuns& postgres, const TraceOptions* trace = nullptr) {
  CellOutcome co;
  for (uint32_t r = 0; r < repetitions_of(cell) && co.ok; ++r)
    run_cell_repetition(cell, r, lookup, quiet, err, stuck_handler, postgres, co, trace);
  start_cell(cell, lookup, co);
  return co;
}

}  // namespace

CellFactory registry_factory_lookup(const CellSpec& cell) {
  const StrategyInfo* info = find_strategy(cell.strategy);
  if (!info) throw std::runtime_error("unknown strategy \"" + cell.strategy + "\"");
  if (!info->make_cell)
    throw std::runtime_error("strategy " + cell.strategy + " has no implementation yet");
  return info->make_cell;
}

ojson result_context(const std::vector<CellSpec>& cells, const RunOptions& opts) {
  ojson ctx = run_context();
  ctx["config_files"] = opts.config_paths;
  ctx["config_hash"] = opts.config_hash;
  ctx["overrides"] = opts.overrides;
  ctx["seed"] = cells.empty() ? ojson(nullptr) : ojson(cells.front().run.seed);
  if (!opts.rerun_of.is_null()) ctx["rerun_of"] = ojson(opts.rerun_of);
  if (!opts.resumed_from.is_null()) ctx["resumed_from"] = ojson(opts.resumed_from);
  if (!opts.shard.is_null()) ctx["shard"] = ojson(opts.shard);
  if (opts.trace)  // one cell of the matrix, traced: not a run of the config (resume refuses it)
    ctx["trace"] = {{"file", opts.trace->path},
                    {"window_s", opts.trace->window_s},
                    {"cell", cells.empty() ? ojson(nullptr) : ojson(cells.front().index)}};
  if (opts.top_lines > 0) ctx["top_lines"] = opts.top_lines;
  ctx["config"] = ojson(opts.config);
  return ctx;
}

int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err) {
  return run_matrix(cells, opts, out, err, registry_factory_lookup);
}

int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err, const FactoryLookup& lookup) {
  const auto t_begin = Clock::now();

  ojson doc;
  doc["context"] = result_context(cells, opts);
  doc["cells"] = ojson::array();
  // Entries of finished cells, by matrix position; the file lists them in matrix order.
  std::vector<std::optional<ojson>> entries(cells.size());
  for (const auto& [k, entry] : opts.finished_cells)
    if (k < entries.size()) entries[k] = entry;
  auto kept = [&](size_t k) { return opts.finished_cells.count(k) > 0; };
  InterruptHandlers interrupt_handlers(opts.output_path);
  // The server of the postgres cells (harness/postgres_run.h): stopped and removed when this
  // returns or throws, interrupted runs included.
  PostgresRuns postgres;
  auto save = [&]() {
    if (opts.output_path.empty()) return;
    if (!opts.shard.is_null()) doc["context"]["shard"]["wall_s"] = seconds(Clock::now() - t_begin);
    doc["cells"] = ojson::array();
    for (const auto& e : entries)
      if (e) doc["cells"].push_back(*e);
    write_file_atomically(opts.output_path, doc.dump(1) + "\n");
  };
  save();  // an unwritable path fails before the first cell runs

  bool any_failed = false;
  size_t emitted = 0;
  // The cell's entry and its line; also used by the stuck path.
  auto emit_cell = [&](size_t k, const CellOutcome& co) {
    const CellSpec& cell = cells[k];
    const bool own_position = cell.total >= cells.size() && cell.index < cell.total;
    const size_t shown_index = own_position ? cell.index + 1 : k + 1;
    const size_t shown_total = own_position ? cell.total : cells.size();
    ojson cj = cell_setup_json(cell);
    cj["ok"] = co.ok;
    cj["error"] = co.ok ? ojson(nullptr) : ojson(co.error);
    if (co.interrupted) cj["interrupted"] = true;
    const std::vector<std::string> warnings = cell_warnings(cell, nlohmann::json(co.reps));
    cj["warnings"] = warnings;
    cj["repetitions"] = co.reps;
    std::vector<RepetitionNumbers> numbers;
    for (const auto& r : co.results) numbers.push_back(r.numbers);
    cj["summary"] = summarize_cell(numbers);
    if (!co.ok) any_failed = true;
    ++emitted;

    const double elapsed = seconds(Clock::now() - t_begin);
    const double eta = elapsed / static_cast<double>(emitted) *
                       static_cast<double>(cells.size() - emitted);
    std::string line =
        absl::StrFormat("cell %d/%d %s: ", shown_index, shown_total, describe_cell(cell));
    if (co.ok) {
      const ojson& s = cj["summary"];
      std::string verify = "off";
      if (cell.run.verify) {
        verify = "ok";
        for (const auto& r : co.results)
          if (r.verify_text == "skipped") verify = "skipped";
      }
      const std::string spread =
          s["tps_rsd_pct"].is_null()
              ? std::string("rsd n/a")
              : absl::StrFormat("rsd %.1f%%", s["tps_rsd_pct"].get<double>());
      line += absl::StrFormat("%.1f tps (%s) verify %s", s["tps_median"].get<double>(), spread, verify);
    } else {
      line += co.interrupted ? co.error : "FAILED: " + co.error;
    }
    line += "  [eta " + format_eta(eta) + "]";
    for (const auto& w : warnings) line += "\n  warning: " + w;
    entries[k] = std::move(cj);
    if (co.interrupted && !co.ran) return;  // no line for a cell that did not start
    out << line << '\n';
    out.flush();
  };
  // Stuck client threads cannot be joined (and a joinable std::thread must not be destroyed):
  // save what we have, with this cell failed, flush, and leave with exit code 1. std::_Exit
  // runs no destructors, so the stuck threads never see their state go away.
  auto stuck_handler_for = [&](size_t k) -> StuckHandlerFactory {
    return [&, k](CellOutcome& co, uint32_t r, uint64_t seed) -> StuckHandler {
      return [&, k, r, seed](const RepResult& rr) {
        co.reps.push_back(rr.json);
        co.results.push_back(rr);
        co.ok = false;
        co.error = repetition_error(cells[k], r, seed, rr.error);
        try {
          emit_cell(k, co);
          save();
        } catch (const std::exception& e) {
          err << "walbench: " << e.what() << '\n';
        }
        err << "walbench: " << co.error << '\n';
        out.flush();
        err.flush();
        std::fflush(nullptr);
        std::_Exit(1);
      };
    };
  };

  // Simulated cells run in virtual time: up to opts.jobs of them at once on worker threads
  // (their numbers do not depend on it). A real-thread cell runs only once every worker is
  // done, so that it has the machine to itself. Results are emitted in matrix order.
  std::vector<std::promise<CellOutcome>> promises(cells.size());
  std::vector<std::future<CellOutcome>> pending(cells.size());
  std::vector<size_t> parallel;
  for (size_t k = 0; k < cells.size(); ++k)
    if (opts.jobs > 1 && cells[k].platform.kind == "sim" && !kept(k)) {
      pending[k] = promises[k].get_future();
      parallel.push_back(k);
    }
  // Every repetition of cell k; a simulated cell's progress lines name it.
  std::mutex progress_mutex;
  const TraceOptions* trace = opts.trace ? &*opts.trace : nullptr;  // the first cell's
  auto compute = [&](size_t k) {
    const TraceOptions* traced = k == 0 ? trace : nullptr;
    if (cells[k].platform.kind != "sim")
      return compute_cell(cells[k], lookup, opts.quiet, err, stuck_handler_for(k), postgres,
                          traced);
    CellProgressLines lines(err, progress_mutex,
                            "cell " + cell_position(cells[k], k, cells.size()) + " " +
                                describe_cell(cells[k]) + ": ");
    std::ostream progress(&lines);
    return compute_cell(cells[k], lookup, opts.quiet, progress, stuck_handler_for(k), postgres,
                        traced);
  };
  std::atomic<size_t> next_parallel{0};
  std::vector<std::thread> workers;
  for (unsigned j = 0; j < std::min<size_t>(opts.jobs, parallel.size()); ++j)
    workers.emplace_back([&] {
      for (size_t i; (i = next_parallel.fetch_add(1)) < parallel.size();) {
        const size_t k = parallel[i];
        promises[k].set_value(compute(k));
      }
    });
  auto join_workers = [&] {
    for (auto& w : workers)
      if (w.joinable()) w.join();
  };

  // run.interleave: the real-thread cells that ask for it run their repetitions round-robin
  // (repetition 1 of each, then 2, ...); each is emitted after its last repetition.
  std::vector<size_t> interleaved;
  for (size_t k = 0; k < cells.size(); ++k)
    if (!pending[k].valid() && cells[k].run.interleave && cells[k].platform.kind != "sim" && !kept(k))
      interleaved.push_back(k);
  std::map<size_t, CellOutcome> rounds;
  if (!interleaved.empty()) {
    join_workers();
    uint32_t max_reps = 0;
    for (size_t k : interleaved) max_reps = std::max(max_reps, repetitions_of(cells[k]));
    for (uint32_t r = 0; r < max_reps; ++r)
      for (size_t k : interleaved) {
        if (r >= repetitions_of(cells[k])) continue;
        CellOutcome& co = rounds[k];
        run_cell_repetition(cells[k], r, lookup, opts.quiet, err, stuck_handler_for(k), postgres,
                            co, k == 0 ? trace : nullptr);
      }
  }

  for (size_t k = 0; k < cells.size(); ++k) {
    if (kept(k)) continue;
    CellOutcome co;
    if (pending[k].valid()) {
      co = pending[k].get();
    } else if (rounds.count(k)) {
      co = std::move(rounds[k]);
      start_cell(cells[k], lookup, co);
    } else {
      join_workers();
      co = compute(k);
    }
    emit_cell(k, co);
    save();
  }
  join_workers();
  try {
    postgres.finish();
  } catch (const std::exception& e) {  // the cells' numbers stand; what was left behind is said
    err << "walbench: " << e.what() << '\n';
    any_failed = true;
  }
  if (const int sig = interrupt_signal(); sig != 0) {
    size_t finished = 0;
    std::string rerun_rest;  // `walbench rerun` resumes by rerunning the cells it lacks
    for (size_t k = 0; k < cells.size(); ++k) {
      if (entries[k] && !entries[k]->contains("interrupted")) ++finished;
      else rerun_rest += " --cell " + std::to_string(cells[k].index);
    }
    std::string how;
    if (opts.output_path.empty())
      how = "no result file was asked for";
    else if (!opts.rerun_of.is_null())
      how = "the rest with: walbench rerun " +
            shell_quote(opts.rerun_of.value("file", std::string())) + rerun_rest;
    else
      how = "resume with: walbench run --resume " + shell_quote(opts.output_path);
    err << "walbench: " << interrupted_error(sig) << ": " << finished << " of " << cells.size()
        << " cells finished; " << how << '\n';
    err.flush();
    return 128 + sig;
  }
  return any_failed ? 1 : 0;
}

std::string format_eta(double secs) {
  const long s = secs > 0 ? std::lround(secs) : 0;
  if (s >= 3600) return absl::StrFormat("%dh%02dm%02ds", s / 3600, (s / 60) % 60, s % 60);
  return absl::StrFormat("%dm%02ds", s / 60, s % 60);
}

std::string group_wait_events(const std::vector<std::string>& name_per_client) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < name_per_client.size(); ++i) groups[name_per_client[i]].push_back(i);
  std::vector<std::pair<std::string, std::vector<size_t>>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.size() > b.second.size();  // ties keep the map's name order
  });
  std::string s;
  for (const auto& [name, ids] : sorted) {
    if (!s.empty()) s += ", ";
    s += absl::StrFormat("%d x %s [", ids.size(), name);
    for (size_t k = 0; k < ids.size(); ++k) s += (k ? "," : "") + std::to_string(ids[k]);
    s += "]";
  }
  return s;
}

}  // namespace walbench
