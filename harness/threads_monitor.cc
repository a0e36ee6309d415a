// The monitor of a repetition on real threads (repetition.h): one thread switches warm-up ->
// timed window -> stop, prints a progress line per interval, samples every client's wait event
// every 10 ms inside the window and runs the watchdog; it sleeps until the earliest of its
// deadlines, so no lock or extra thread is needed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <memory>
#include <mutex>
#include <ostream>
#include <system_error>
#include <thread>

#include "absl/strings/str_format.h"
#include "harness/interrupt.h"
#include "harness/measure.h"
#include "harness/repetition.h"
#include "harness/runner.h"

namespace walbench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
Clock::duration from_seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The sampler's period (pg_stat_activity-like sampling of every client's wait event).
constexpr auto kSamplePeriod = std::chrono::milliseconds(10);
// The monitor never sleeps longer than this, so that the end of the clients is noticed quickly.
constexpr auto kMaxMonitorSleep = std::chrono::milliseconds(10);

}  // namespace

void run_threads_repetition(const CellSpec& cell, CellRun& run, RunControl& ctl, bool quiet,
                            std::ostream& err, ThreadsObservation& obs,
                            const std::function<void(const std::string&)>& fail,
                            const std::function<void(const std::string&)>& stuck) {
  const uint32_t n = cell.clients;
  const RunSpec& rs = cell.run;
  obs.txns0.assign(n, 0);
  obs.bytes0.assign(n, 0);
  obs.txns1.assign(n, 0);
  obs.bytes1.assign(n, 0);
  // returned[i]: client i is back from client_main (or never started). Written by the client,
  // read by the monitor (watchdog message).
  std::unique_ptr<std::atomic<bool>[]> returned(new std::atomic<bool>[n]);
  for (uint32_t i = 0; i < n; ++i) returned[i].store(false, std::memory_order_relaxed);
  std::atomic<uint32_t> n_returned{0};
  std::latch start(static_cast<std::ptrdiff_t>(n) + 1);
  std::mutex error_mu;
  std::string client_error;  // protected by error_mu: the first client failure

  auto note_client_error = [&](const std::string& msg) {
    {
      std::lock_guard<std::mutex> g(error_mu);
      if (client_error.empty()) client_error = msg;
    }
    ctl.stop.store(true, std::memory_order_release);  // the others return too
  };
  auto client_body = [&](uint32_t i) {
    start.arrive_and_wait();
    if (!ctl.stop.load(std::memory_order_acquire)) {
      try {
        run.client_main(i, ctl);
      } catch (const std::exception& e) {
        note_client_error(absl::StrFormat("client %u: %s", i, e.what()));
      } catch (...) {
        note_client_error(absl::StrFormat("client %u: unknown exception", i));
      }
    }
    returned[i].store(true, std::memory_order_release);
    n_returned.fetch_add(1, std::memory_order_acq_rel);
  };

  std::vector<std::thread> threads;
  threads.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    try {
      threads.emplace_back(client_body, i);
    } catch (const std::system_error& e) {
      note_client_error(absl::StrFormat("starting client thread %u of %u: %s", i, n, e.what()));
      // The clients that could not start count as returned, and release the latch for them.
      for (uint32_t k = i; k < n; ++k) returned[k].store(true, std::memory_order_release);
      n_returned.fetch_add(n - i, std::memory_order_acq_rel);
      start.count_down(static_cast<std::ptrdiff_t>(n - i));
      break;
    }
  }

  enum class Phase { kWarmup, kMeasure, kStopping };
  Phase phase = Phase::kWarmup;
  start.arrive_and_wait();
  const auto t0 = Clock::now();
  const auto warm_end = t0 + from_seconds(std::max(0.0, rs.warmup_s));
  const auto window = from_seconds(std::max(0.0, rs.duration_s));
  Clock::time_point m_start{}, m_end{}, stop_at{}, next_sample{};

  // Progress points are always recorded (trust warnings); lines only when asked for.
  const bool progress_on = true;
  const bool print_progress = rs.progress_interval_s > 0 && !quiet;
  const auto progress_step = from_seconds(progress_step_s(rs));
  auto next_progress = t0 + progress_step;
  auto last_progress = t0;
  ProgressMeter meter(n);

  const bool watchdog_on = rs.watchdog_s > 0;
  const auto watchdog = from_seconds(watchdog_on ? rs.watchdog_s : 0.0);
  // After the watchdog sets stop, clients that poll it return at once; this is how long they
  // get before they count as stuck for good.
  const auto grace = from_seconds(std::clamp(rs.watchdog_s, 0.1, 1.0));
  uint64_t last_total = 0;
  auto last_change = t0;

  auto snapshot = [&](std::vector<uint64_t>& t, std::vector<uint64_t>& b) {
    for (uint32_t i = 0; i < n; ++i) {
      t[i] = ctl.counters[i].txns.load(std::memory_order_relaxed);
      b[i] = ctl.counters[i].wal_bytes.load(std::memory_order_relaxed);
    }
  };
  auto total_txns = [&]() {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; ++i) s += ctl.counters[i].txns.load(std::memory_order_relaxed);
    return s;
  };
  auto describe_waiters = [&]() {
    std::vector<std::string> names(n);
    for (uint32_t i = 0; i < n; ++i)
      names[i] = returned[i].load(std::memory_order_acquire) ? "returned"
                                                             : wait_event_name(run.wait_event(i));
    return group_wait_events(names);
  };
  auto all_returned = [&]() { return n_returned.load(std::memory_order_acquire) == n; };
  // Sets stop and waits up to `limit` for the clients; true when all returned.
  auto stop_and_wait = [&](Clock::duration limit) {
    ctl.measuring.store(false, std::memory_order_release);
    ctl.stop.store(true, std::memory_order_release);
    const auto deadline = Clock::now() + limit;
    while (!all_returned() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return all_returned();
  };
  // The watchdog fired with message `msg`. Either the clients come back (the repetition fails,
  // the sweep goes on) or they are stuck for good: their threads cannot be joined, so `stuck`
  // writes the result file and ends the process (it does not return).
  auto watchdog_fired = [&](const std::string& msg, Clock::duration wait) {
    fail(msg);
    if (stop_and_wait(wait)) return;
    stuck(" (the client threads did not stop; walbench exits)");
    std::_Exit(1);  // NB: stuck does not return; this is a backstop.
  };

  for (;;) {
    auto now = Clock::now();
    if (all_returned()) break;

    if (phase == Phase::kWarmup && now >= warm_end && !ctl.stop.load(std::memory_order_acquire)) {
      // Open the timed window: the model's counters first, then the clients' flag.
      obs.model_at_open = run.model_stats();
      snapshot(obs.txns0, obs.bytes0);
      m_start = Clock::now();
      ctl.measuring.store(true, std::memory_order_release);
      next_sample = m_start;
      phase = Phase::kMeasure;
      now = m_start;
    }
    if (phase == Phase::kMeasure && now >= m_start + window) {
      snapshot(obs.txns1, obs.bytes1);
      m_end = Clock::now();
      ctl.measuring.store(false, std::memory_order_release);
      obs.model_at_close = run.model_stats();
      obs.measured = true;
      ctl.stop.store(true, std::memory_order_release);
      phase = Phase::kStopping;
      stop_at = now = m_end;
    }
    if (phase != Phase::kStopping && interrupt_signal() != 0) {  // harness/interrupt.h
      fail(interrupted_error(interrupt_signal()));
      ctl.stop.store(true, std::memory_order_release);
    }
    if (phase != Phase::kStopping && ctl.stop.load(std::memory_order_acquire)) {
      // A client failed (or could not start): the window, if open, stays incomplete.
      ctl.measuring.store(false, std::memory_order_release);
      phase = Phase::kStopping;
      stop_at = now;
    }

    if (phase == Phase::kMeasure && now >= next_sample) {
      for (uint32_t i = 0; i < n; ++i) {
        const auto e = static_cast<size_t>(run.wait_event(i));
        ++obs.wait_samples[std::min(e, kNumWaitEvents)];
      }
      next_sample += kSamplePeriod;
      if (next_sample <= now) next_sample = now + kSamplePeriod;  // fell behind: skip samples
    }

    if (progress_on && phase != Phase::kStopping && now >= next_progress) {
      const ProgressPoint p = meter.point(ctl.counters, seconds(now - last_progress));
      const double t = seconds(now - t0);
      nlohmann::ordered_json j;
      j["t"] = std::round(t * 1000.0) / 1000.0;
      j["tps"] = p.tps;
      j["lat_ms"] = std::isnan(p.lat_ms) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.lat_ms);
      j["stddev_ms"] =
          std::isnan(p.stddev_ms) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.stddev_ms);
      obs.progress.push_back(std::move(j));
      if (print_progress) {
        err << format_progress_line(t, p.tps, p.lat_ms, p.stddev_ms) << '\n';
        err.flush();
      }
      last_progress = now;
      next_progress += progress_step;
      if (next_progress <= now) next_progress = now + progress_step;
    }

    const uint64_t total = total_txns();
    if (total != last_total) {
      last_total = total;
      last_change = now;
    }
    if (watchdog_on && phase != Phase::kStopping && now - last_change >= watchdog) {
      const std::string waiters = describe_waiters();  // before stop changes what they wait on
      watchdog_fired(absl::StrFormat("watchdog: no progress for %.1f s; clients waiting: %s",
                                     seconds(now - last_change), waiters),
                     grace);
      break;
    }
    if (watchdog_on && phase == Phase::kStopping &&
        now - stop_at >= std::max<Clock::duration>(watchdog, std::chrono::seconds(1))) {
      watchdog_fired(absl::StrFormat("watchdog: clients did not return %.1f s after stop; "
                                     "clients waiting: %s",
                                     seconds(now - stop_at), describe_waiters()),
                     Clock::duration::zero());
      break;
    }

    auto wake = now + kMaxMonitorSleep;
    if (phase == Phase::kWarmup) wake = std::min(wake, warm_end);
    if (phase == Phase::kMeasure) wake = std::min({wake, m_start + window, next_sample});
    if (progress_on && phase != Phase::kStopping) wake = std::min(wake, next_progress);
    std::this_thread::sleep_until(wake);
  }

  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> g(error_mu);
    if (!client_error.empty()) fail(client_error);
  }
  if (obs.measured) obs.elapsed_s = seconds(m_end - m_start);
}

}  // namespace walbench
