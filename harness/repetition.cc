// One repetition of one cell; see repetition.h and harness/RESULTS.md.
#include "harness/repetition.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <ostream>

#include "absl/strings/str_format.h"
#include "harness/interrupt.h"
#include "harness/memory_usage.h"
#include "harness/measure.h"
#include "core/platform/sim.h"
#include "core/platform/threads.h"

namespace walbench {

namespace {

using ojson = nlohmann::ordered_json;

ojson progress_entry(double t, double tps, double lat_ms, double stddev_ms) {
  ojson j;
  j["t"] = std::round(t * 1000.0) / 1000.0;
  j["tps"] = tps;
  j["lat_ms"] = std::isnan(lat_ms) ? ojson(nullptr) : ojson(lat_ms);
  j["stddev_ms"] = std::isnan(stddev_ms) ? ojson(nullptr) : ojson(stddev_ms);
  return j;
}

// The tracer of a traced repetition, attached to the model's Procs. On the simulator the
// window's start is the end of the warm-up in virtual ns (NB: as WalCell::drive computes it)
// and timestamps stay virtual time; on threads it starts when the runner opens the window.
std::unique_ptr<LockTracer> start_trace(const CellSpec& cell, CellRun& run, RunControl& ctl,
                                        const TraceOptions& opts) {
  std::vector<std::string> names = run.trace_tracks();
  if (names.empty()) throw std::runtime_error("this model has no traceable clients");
  const bool sim = run.drives_itself();
  const uint64_t warm = static_cast<uint64_t>(cell.run.warmup_s * 1e9 + 0.5);
  auto tracer = std::make_unique<LockTracer>(
      std::move(names), opts, sim ? &SimPlatform::now_ns : &ThreadsPlatform::now_ns,
      /*lossless=*/sim, sim ? warm : TraceWindow::kUnknown, sim ? nullptr : &ctl.measuring,
      /*ts_origin_ns_if_known=*/0);
  std::vector<ClientTrace*> clients;
  for (size_t i = 0; i < tracer->size(); ++i) clients.push_back(tracer->client(i));
  run.set_tracers(clients);
  return tracer;
}

nlohmann::json trace_about(const CellSpec& cell, uint64_t seed) {
  return {{"cell", cell.index}, {"label", cell.label}, {"clients", cell.clients},
          {"platform", cell.platform.kind}, {"seed", seed},
          {"clock", cell.platform.kind == "sim" ? "virtual time (ns since the simulation began)"
                                                : "steady_clock, ts from the window's start"}};
}

}  // namespace

void record_window_numbers(RepResult& res, uint64_t txns, uint64_t bytes, double elapsed_s,
                           uint64_t clients_without_txn, const LatencySummaryMs& lat) {
  RepetitionNumbers& num = res.numbers;
  num.measured = true;
  num.tps = elapsed_s > 0 ? static_cast<double>(txns) / elapsed_s : 0.0;
  num.bytes_per_s = elapsed_s > 0 ? static_cast<double>(bytes) / elapsed_s : 0.0;
  num.lat_mean_ms = lat.count ? lat.mean : std::nan("");  // no transaction ended: unknown
  res.json["tps"] = num.tps;
  res.json["bytes_per_s"] = num.bytes_per_s;
  res.json["txns"] = txns;
  res.json["elapsed_s"] = elapsed_s;
  res.json["clients_without_txn"] = clients_without_txn;
  res.json["latency_ms"] =
      lat.count ? nlohmann::ordered_json(lat.to_json()) : nlohmann::ordered_json(nullptr);
}

namespace {

RepResult run_repetition_once(const CellSpec& cell, CellFactory factory, uint64_t seed, bool quiet,
                              std::ostream& err, const StuckHandler& on_stuck,
                              const TraceOptions* trace) {
  RepResult res;
  res.json["seed"] = seed;
  auto fail = [&](const std::string& msg) {
    if (res.ok) {
      res.ok = false;
      res.error = msg;
    }
  };
  auto finalize_json = [&]() {
    res.json["ok"] = res.ok;
    res.json["error"] = res.ok ? ojson(nullptr) : ojson(res.error);
  };

  const bool host_memory = cell.platform.kind == "threads";  // memory_usage.h: why not the sim
  const bool peak_reset = host_memory && reset_peak_rss();
  std::unique_ptr<CellRun> run;
  try {
    run = factory(cell, seed);
  } catch (const std::exception& e) {
    fail(std::string("building the model: ") + e.what());
  } catch (...) {
    fail("building the model: unknown exception");
  }
  if (res.ok && !run) fail("building the model: the factory returned no model");
  if (!res.ok) {
    finalize_json();
    return res;
  }

  const uint32_t n = cell.clients;
  RunControl ctl(n);
  std::unique_ptr<LockTracer> tracer;
  if (trace) {
    try {
      tracer = start_trace(cell, *run, ctl, *trace);
    } catch (const std::exception& e) {
      fail(std::string("trace: ") + e.what());
      finalize_json();
      return res;
    }
  }
  ThreadsObservation obs;  // what either platform observed, in its own time unit
  nlohmann::json platform_stats;

  if (run->drives_itself()) {
    // A simulated platform runs its clients as fibers in virtual time; it reports the same
    // observations the thread monitor makes, in virtual seconds.
    DrivenRun d;
    if (!quiet && cell.run.progress_interval_s > 0) {
      const uint32_t nreps = std::max<uint32_t>(1, cell.run.repetitions);
      const std::string note =
          nreps > 1 ? absl::StrFormat(" (virtual time, repetition %d/%d)", seed - cell.run.seed + 1, nreps)
                    : std::string(" (virtual time)");
      ctl.on_progress = [&err, note](double t, double tps, double lat_ms, double stddev_ms) {
        err << format_progress_line(t, tps, lat_ms, stddev_ms) + note + "\n";
        err.flush();
      };
    }
    try {
      d = run->drive(ctl, cell.run);
    } catch (const std::exception& e) {
      d.error = e.what();
    }
    if (!d.error.empty()) fail(d.error);
    if (!d.error.empty() && interrupt_signal() != 0) {
      // Stopped between two events (harness/interrupt.h): clients were cut off inside their
      // inserts, so the model cannot finish; the runner drops this repetition.
      finalize_json();
      return res;
    }
    obs.measured = d.measured && d.error.empty();
    if (obs.measured) {
      obs.txns0 = d.txns0;
      obs.bytes0 = d.bytes0;
      obs.txns1 = d.txns1;
      obs.bytes1 = d.bytes1;
      obs.elapsed_s = d.window_s;
      obs.model_at_open = d.model_at_open;
      obs.model_at_close = d.model_at_close;
    }
    for (const auto& p : d.progress) obs.progress.push_back(progress_entry(p.t, p.tps, p.lat_ms, p.stddev_ms));
    obs.wait_samples = d.wait_samples;
    platform_stats = d.platform_stats;
  } else {
    run_threads_repetition(
        cell, *run, ctl, quiet, err, obs, fail, [&](const std::string& suffix) {
          res.error += suffix;
          res.json["progress"] = obs.progress;
          finalize_json();
          on_stuck(res);
        });
  }

  if (tracer) {
    run->set_tracers({});  // finish() below flushes outside the run: not traced
    try {
      err << "walbench: " << tracer->finish(trace_about(cell, seed)).line() << '\n';
      err.flush();
    } catch (const std::exception& e) {
      fail(std::string("trace: ") + e.what());
    }
    tracer.reset();
  }
  try {
    run->finish();
  } catch (const std::exception& e) {
    fail(std::string("finish: ") + e.what());
  } catch (...) {
    fail("finish: unknown exception");
  }

  // ---- Numbers of the timed window ----
  uint64_t txns = 0;
  if (obs.measured) {
    uint64_t bytes = 0, idle = 0;
    for (uint32_t i = 0; i < n; ++i) {
      txns += obs.txns1[i] - obs.txns0[i];
      bytes += obs.bytes1[i] - obs.bytes0[i];
      if (obs.txns1[i] == obs.txns0[i]) ++idle;
    }
    record_window_numbers(res, txns, bytes, obs.elapsed_s, idle, summarize_latency(ctl.counters));
  } else {
    for (const char* k : {"tps", "bytes_per_s", "txns", "elapsed_s", "clients_without_txn", "latency_ms"})
      res.json[k] = nullptr;
  }
  res.json["progress"] = std::move(obs.progress);
  ojson waits = ojson::object();
  for (size_t e = 0; e <= kNumWaitEvents; ++e) {
    if (obs.wait_samples[e] == 0) continue;
    waits[e < kNumWaitEvents ? wait_event_name(static_cast<WaitEvent>(e)) : "?"] = obs.wait_samples[e];
  }
  res.json["wait_events"] = std::move(waits);
  nlohmann::json lock_stats, model_window = nullptr, totals;
  try {
    lock_stats = run->lock_stats();
  } catch (const std::exception& e) {
    lock_stats = {{"error", e.what()}};
  }
  const WindowTotals wt = run->window_totals();
  totals = {{"txns", wt.txns}, {"records", wt.records}, {"wal_bytes", wt.wal_bytes}, {"xids", wt.xids}};
  if (obs.measured && !obs.model_at_open.is_null() && !obs.model_at_close.is_null())
    model_window = counter_delta(obs.model_at_close, obs.model_at_open);
  res.json["window"] = ojson(totals);
  res.json["lock_stats"] = ojson(lock_stats);
  res.json["model"] = ojson(model_window);
  if (!platform_stats.is_null() && !platform_stats.empty()) res.json["platform"] = ojson(platform_stats);
  res.numbers.per_txn = obs.measured ? per_txn_json(totals, lock_stats, model_window, txns) : nullptr;
  res.json["per_txn"] = ojson(res.numbers.per_txn);

  // ---- Verify (only a model whose clients all ran to the end) ----
  res.json["verify"] = nullptr;
  if (cell.run.verify && res.ok) {
    try {
      const VerifyResult vr = run->verify();
      res.json["verify"] = ojson(vr.to_json());
      if (!vr.ok) {
        res.verify_text = "FAILED";
        fail("verify failed: " + (vr.error.empty() ? std::string("(no message)") : vr.error));
      } else {
        res.verify_text = vr.skipped ? "skipped" : "ok";
      }
    } catch (const std::exception& e) {
      res.verify_text = "FAILED";
      fail(std::string("verify: ") + e.what());
    }
  }
  if (res.ok && !obs.measured) fail("the clients returned before the timed window ended");
  if (host_memory) {
    const std::optional<double> peak = peak_rss_mib();
    res.json["peak_rss_mib"] = peak ? ojson(static_cast<double>(static_cast<int64_t>(*peak * 10 + 0.5)) / 10) : ojson(nullptr);
    res.json["peak_rss_since"] = peak_reset ? "repetition start" : "process start";
  }
  finalize_json();
  return res;
}

double transactions_per_client(const RepResult& r, uint32_t clients) {
  const auto it = r.json.find("txns");
  if (it == r.json.end() || !it->is_number()) return 0;
  return it->get<double>() / std::max<uint32_t>(clients, 1);
}

}  // namespace

std::optional<RunSpec> lengthened_window(const RunSpec& rs, double per_client) {
  if (rs.max_window_s <= 0 || rs.min_txns_per_client == 0) return std::nullopt;
  if (per_client >= rs.min_txns_per_client || rs.duration_s >= rs.max_window_s) return std::nullopt;
  // Counted as at least 1/20 of a transaction per client, so that a window in which nobody
  // finished grows by a bounded factor (25 x min_txns_per_client) per step.
  const double factor = 1.25 * rs.min_txns_per_client / std::max(per_client, 0.05);
  RunSpec longer = rs;
  // Rounded up to whole milliseconds (the recorded lengths are the ones that ran), then capped.
  longer.duration_s = std::min(rs.max_window_s, std::ceil(rs.duration_s * factor * 1e3) / 1e3);
  longer.warmup_s = std::ceil(rs.warmup_s * (longer.duration_s / rs.duration_s) * 1e3) / 1e3;
  return longer;
}

RepResult run_repetition(const CellSpec& cell, CellFactory factory, uint64_t seed, bool quiet,
                         std::ostream& err, const StuckHandler& on_stuck,
                         const TraceOptions* trace, CellWindow* window) {
  if (window != nullptr && window->decided) {  // a later repetition: the cell's window
    if (!window->run) return run_repetition_once(cell, factory, seed, quiet, err, on_stuck, trace);
    CellSpec longer = cell;
    longer.run = *window->run;
    RepResult res = run_repetition_once(longer, factory, seed, quiet, err, on_stuck, trace);
    res.json["window_lengthened"] = window->about;
    return res;
  }
  RepResult res = run_repetition_once(cell, factory, seed, quiet, err, on_stuck, trace);
  if (window != nullptr) window->decided = true;
  // Only the simulator (its virtual time is free to lengthen, and a rerun is the same run
  // longer); a traced repetition, and with it its cell, keeps the window the trace asked for.
  if (cell.platform.kind != "sim" || trace != nullptr) return res;
  const double first_per_client = transactions_per_client(res, cell.clients);
  CellSpec longer = cell;
  int steps = 0;
  while (steps < kMaxWindowSteps && res.ok && interrupt_signal() == 0) {
    const double per_client = transactions_per_client(res, cell.clients);
    const std::optional<RunSpec> next = lengthened_window(longer.run, per_client);
    if (!next) break;
    if (!quiet)
      err << absl::StrFormat(
          "  %.1f transactions per client in %g s (run.min_txns_per_client = %d): running it "
          "again with a %g s window after a %g s warm-up (run.max_window_s = %g)\n",
          per_client, longer.run.duration_s, cell.run.min_txns_per_client, next->duration_s,
          next->warmup_s, cell.run.max_window_s);
    longer.run = *next;
    ++steps;
    res = run_repetition_once(longer, factory, seed, quiet, err, on_stuck, nullptr);
  }
  if (steps == 0) return res;
  const ojson about = {{"warmup_s", longer.run.warmup_s},
                       {"duration_s", longer.run.duration_s},
                       {"from_warmup_s", cell.run.warmup_s},
                       {"from_duration_s", cell.run.duration_s},
                       {"from_transactions_per_client", first_per_client},
                       {"steps", steps}};
  res.json["window_lengthened"] = about;
  if (window != nullptr) {
    window->run = longer.run;
    window->about = about;
  }
  return res;
}

}  // namespace walbench
