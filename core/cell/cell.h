// The boundary between the generic runner and one instantiated (strategy x platform x workload)
// model. The runner owns the threads, the barrier, the warm-up and timed windows, the progress
// lines, the wait-event sampler and the watchdog; a CellRun owns the model (WAL, locks, procs) of
// one repetition and runs one client's transaction loop without any virtual call per record.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/histogram.hpp>
#include <nlohmann/json.hpp>

#include "core/proc.h"
#include "core/wal/verify_result.h"
#include "core/cell/spec.h"

namespace walbench {

// Latency histogram: log-spaced bins from 100 ns to 100 s (Boost.Histogram).
using LatencyAxis =
    boost::histogram::axis::regular<double, boost::histogram::axis::transform::log>;
using LatencyHistogram =
    decltype(boost::histogram::make_histogram(LatencyAxis(240, 1e2, 1e11)));
inline LatencyHistogram make_latency_histogram() {
  return boost::histogram::make_histogram(LatencyAxis(240, 1e2, 1e11));
}

// What one client counts. Written only by its client (plain store of load+1, no RMW), read by
// the runner's progress thread with relaxed loads.
struct alignas(64) ClientCounters {
  std::atomic<uint64_t> txns{0};
  std::atomic<uint64_t> wal_bytes{0};  // WAL bytes this client inserted (reserved sizes)
  // Latency of transactions that ended inside the timed window (nanoseconds).
  LatencyHistogram latency = make_latency_histogram();
  double lat_sum_ns = 0;
  double lat_sumsq_ns = 0;
  uint64_t lat_count = 0;

  // Every transaction's latency, warm-up included, for the progress lines: the monitor reads
  // these while the client runs (owner-written relaxed atomics) and differences them per
  // interval, which gives the interval's real per-transaction mean and stddev as pgbench's.
  std::atomic<uint64_t> all_lat_count{0};
  std::atomic<double> all_lat_sum_ns{0};
  std::atomic<double> all_lat_sumsq_ns{0};

  // One finished transaction: `bytes` of WAL, `ns` from its start to its end; its latency goes
  // into the window's histogram when `in_window`.
  void count_txn(uint64_t bytes, uint64_t ns, bool in_window) {
    constexpr auto relaxed = std::memory_order_relaxed;
    txns.store(txns.load(relaxed) + 1, relaxed);
    wal_bytes.store(wal_bytes.load(relaxed) + bytes, relaxed);
    const double d = static_cast<double>(ns);
    all_lat_count.store(all_lat_count.load(relaxed) + 1, relaxed);
    all_lat_sum_ns.store(all_lat_sum_ns.load(relaxed) + d, relaxed);
    all_lat_sumsq_ns.store(all_lat_sumsq_ns.load(relaxed) + d * d, relaxed);
    if (in_window) record_latency(ns);
  }
  void record_latency(uint64_t ns) {
    const double d = static_cast<double>(ns);
    latency(d);
    lat_sum_ns += d;
    lat_sumsq_ns += d * d;
    ++lat_count;
  }
};

// Progress-line latency: what the monitor keeps between two progress points to difference the
// clients' all_lat_* sums (core/cell/window.h, ProgressMeter).
struct LatencySums {
  uint64_t count = 0;
  double sum_ns = 0;
  double sumsq_ns = 0;
};

// Shared between the runner and the clients of one repetition.
struct RunControl {
  std::atomic<bool> stop{false};       // clients return from client_main when set
  std::atomic<bool> measuring{false};  // inside the timed window: record latencies
  std::vector<ClientCounters> counters;
  // A self-driven (simulated) repetition calls it at each progress point as the point happens,
  // on the thread running the simulation, with virtual seconds; empty: no call.
  std::function<void(double t_s, double tps, double lat_ms, double stddev_ms)> on_progress;
  explicit RunControl(uint32_t clients) : counters(clients) {}
};


// What a self-driven repetition (a simulated platform, where the model runs its clients as
// fibers in virtual time) reports back to the runner: the same observations the runner makes
// itself on real threads, in virtual seconds.
struct DrivenRun {
  bool measured = false;            // the timed window completed
  double window_s = 0;              // its length (virtual seconds)
  std::vector<uint64_t> txns0, bytes0, txns1, bytes1;  // per client, at window start / end
  struct Progress {
    double t, tps, lat_ms, stddev_ms;
  };
  std::vector<Progress> progress;
  std::array<uint64_t, kNumWaitEvents + 1> wait_samples{};
  std::string error;                // deadlock / stuck report, exception text; empty = fine
  // CellRun::model_stats() at the window's first and last instant (the runner diffs them).
  nlohmann::json model_at_open, model_at_close;
  // Platform counters over the window, e.g. {"sim": {...}, "virtual_time_s": ...}.
  nlohmann::json platform_stats = nlohmann::json::object();
};

// What the clients did inside the timed window, counted by each client at its own transaction
// boundaries: a transaction counts when it started while the window was open, with every lock
// acquisition, record and xid it made (to its end, even past the window's end). So ratios of
// these numbers are exact per-transaction figures (harness/RESULTS.md "Windows").
struct WindowTotals {
  uint64_t txns = 0;
  uint64_t records = 0;
  uint64_t wal_bytes = 0;
  uint64_t xids = 0;
};

class CellRun {
 public:
  virtual ~CellRun() = default;
  // true: the runner calls drive() instead of starting client threads itself.
  virtual bool drives_itself() const { return false; }
  // Runs one repetition (warm-up, timed window, stop) and returns what it observed.
  virtual DrivenRun drive(RunControl&, const RunSpec&) { return {}; }
  // Runs on client thread `client` until ctl.stop is set. Must publish wait events through the
  // Proc and count every finished transaction in ctl.counters[client].
  virtual void client_main(uint32_t client, RunControl& ctl) = 0;
  // What client `client` waits on now (sampler, watchdog). Safe to call from any thread.
  virtual WaitEvent wait_event(uint32_t client) const = 0;
  // After every client returned: flush all inserted WAL to storage, stop background threads.
  virtual void finish() = 0;
  virtual VerifyResult verify() = 0;
  // Lock statistics of the timed window, aligned to transactions as WindowTotals (the WAL
  // writer's over its own loop iterations inside the window), after the clients returned:
  // {"LWLock:WALInsert": {"acquisitions", "contended", "spins", "sleeps", "wait_ms"}, ...}
  virtual nlohmann::json lock_stats() const = 0;
  virtual WindowTotals window_totals() const = 0;
  // Model-level counters since the model was built: {"writes": n, "fsyncs": n, ...}. Numbers
  // are cumulative counts the runner may snapshot at any time, also while clients run, and
  // difference (keys is_gauge_key names, core/cell/window.h, are levels, not counts).
  virtual nlohmann::json model_stats() const = 0;
  // Lock-wait tracing (harness/trace.h): the names of the Procs a trace shows, in procno order
  // (empty: this model cannot be traced); set_tracers gives Proc i tracers[i], and an empty
  // vector detaches them. Called only while no client runs.
  virtual std::vector<std::string> trace_tracks() const { return {}; }
  virtual void set_tracers(const std::vector<ClientTrace*>& /*tracers*/) {}
};

// Builds the model for one repetition of a cell. Throws ConfigError-like std::runtime_error on
// parameter problems that could not be caught at validation time.
using CellFactory = std::unique_ptr<CellRun> (*)(const CellSpec&, uint64_t seed);

}  // namespace walbench
