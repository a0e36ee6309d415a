// One repetition of one cell (the order of events is in runner.h): build the model, run the
// clients (on real threads with the monitor of threads_monitor.cc, or driven by a simulated
// platform), take the window's numbers, finish, verify. Internal to the runner.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/cell.h"
#include "harness/cell_json.h"
#include "harness/measure.h"
#include "core/cell/spec.h"
#include "harness/trace.h"

namespace walbench {

struct RepResult {
  bool ok = true;
  std::string error;                // when !ok
  std::string verify_text = "off";  // "ok" | "skipped" | "off" | "FAILED"
  RepetitionNumbers numbers;
  nlohmann::ordered_json json;      // the repetition entry of the result file
};

// Called when client threads are stuck for good; must not return (it ends the process).
using StuckHandler = std::function<void(const RepResult&)>;

// run.max_window_s (simulated platform): the first repetition of a cell decides its window, and
// every later repetition runs with that window, so that a cell's repetitions are comparable.
// harness/RESULTS.md "Windows lengthened".
struct CellWindow {
  bool decided = false;            // the first repetition ran
  std::optional<RunSpec> run;      // the lengthened warm-up and window; none: the config's
  nlohmann::ordered_json about;    // the repetitions' "window_lengthened" entry
};
inline constexpr int kMaxWindowSteps = 4;  // reruns of one repetition at most

// trace: record this repetition's lock-wait trace (harness/trace.h); its summary line goes to
// `err`. The numbers are the same with and without it on the simulator. window: the cell's
// window across its repetitions (CellWindow); nullptr: this repetition decides alone.
RepResult run_repetition(const CellSpec& cell, CellFactory factory, uint64_t seed, bool quiet,
                         std::ostream& err, const StuckHandler& on_stuck,
                         const TraceOptions* trace = nullptr, CellWindow* window = nullptr);

// run.max_window_s (simulated platform): the longer run a repetition that finished
// `per_client` transactions per client in rs's window should get, or none when it had enough,
// lengthening is off or the window is at its cap. harness/RESULTS.md "Windows lengthened".
std::optional<RunSpec> lengthened_window(const RunSpec& rs, double per_client);

// The timed window's numbers, as every platform records them in the repetition entry and in
// res.numbers: tps, bytes_per_s, txns, elapsed_s, clients_without_txn, latency_ms (null when no
// transaction ended in the window). harness/RESULTS.md "Repetitions".
void record_window_numbers(RepResult& res, uint64_t txns, uint64_t bytes, double elapsed_s,
                           uint64_t clients_without_txn, const LatencySummaryMs& lat);

// What the thread monitor observed in one repetition (threads_monitor.cc).
struct ThreadsObservation {
  bool measured = false;
  double elapsed_s = 0;  // the timed window's measured wall time
  std::vector<uint64_t> txns0, bytes0, txns1, bytes1;
  nlohmann::json model_at_open, model_at_close;
  nlohmann::ordered_json progress = nlohmann::ordered_json::array();
  std::array<uint64_t, kNumWaitEvents + 1> wait_samples{};  // last slot: out-of-range values
};

// Runs one repetition on real threads: starts the clients on a barrier, then the calling thread
// is the monitor (phases, progress, wait-event sampler, watchdog) until the clients returned.
// `fail(msg)` records a failure; `stuck(msg)` is called when clients do not return after the
// watchdog fired, and does not return.
void run_threads_repetition(const CellSpec& cell, CellRun& run, RunControl& ctl, bool quiet,
                            std::ostream& err, ThreadsObservation& obs,
                            const std::function<void(const std::string&)>& fail,
                            const std::function<void(const std::string&)>& stuck);

}  // namespace walbench
