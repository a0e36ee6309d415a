// The matrix runner; see the block comment in runner.h for the order of events in a repetition,
// and harness/RESULTS.md for the result file it writes.
#include "harness/runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <sstream>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "absl/strings/str_format.h"
#include "strategies/strategy.h"

#ifndef WALBENCH_GIT_SHA
#define WALBENCH_GIT_SHA "unknown"
#endif
#ifndef WALBENCH_BUILD_TYPE
#define WALBENCH_BUILD_TYPE "unknown"
#endif

namespace walbench {

namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
Clock::duration from_seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The sampler's period (pg_stat_activity-like sampling of every client's wait event).
constexpr auto kSamplePeriod = std::chrono::milliseconds(10);
// The monitor never sleeps longer than this, so that the end of the clients is noticed quickly.
constexpr auto kMaxMonitorSleep = std::chrono::milliseconds(10);

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string fallback;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    if (key == "model name" && !value.empty()) return value;
    if ((key == "Hardware" || key == "cpu model" || key == "uarch") && fallback.empty())
      fallback = value;
  }
  return fallback.empty() ? "unknown" : fallback;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ojson machine_context_ordered() {
  ojson c;
  c["schema_version"] = kResultSchemaVersion;
  c["walbench_version"] = kWalbenchVersion;
  c["date"] = utc_now_iso8601();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  c["host"] = std::string(host);
  c["cpu_model"] = read_cpu_model();
  c["logical_cores"] = std::thread::hardware_concurrency();
  struct utsname u {};
  if (uname(&u) == 0)
    c["kernel"] = absl::StrFormat("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
  else
    c["kernel"] = "unknown";
#if defined(__clang__)
  c["compiler"] = std::string(__VERSION__);
#elif defined(__GNUC__)
  c["compiler"] = std::string("GCC ") + __VERSION__;
#else
  c["compiler"] = "unknown";
#endif
  c["build_type"] = WALBENCH_BUILD_TYPE;
  c["git_sha"] = WALBENCH_GIT_SHA;
  return c;
}

double population_stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size()));
}

// A matrix value that names the cell's variant (its value is the label, or an object carrying
// it): left out of the one-line cell description because the label is printed already.
bool is_label_value(const nlohmann::json& v, const std::string& label) {
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
      if (key == "clients" || ends_with(key, "record_size") || is_label_value(value, cell.label))
        continue;
      const auto dot = key.rfind('.');
      const std::string shown_key = dot == std::string::npos ? key : key.substr(dot + 1);
      s += " " + shown_key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return s;
}

// ---- One repetition ----

struct RepResult {
  bool ok = true;
  bool measured = false;        // the timed window completed
  std::string error;            // when !ok
  std::string verify_text = "off";  // "ok" | "skipped" | "off" | "FAILED"
  double tps = 0;
  double bytes_per_s = 0;
  double lat_mean_ms = 0;
  ojson json;                   // the repetition entry of the result file
};

// Called when client threads are stuck for good; must not return (it ends the process).
using StuckHandler = std::function<void(const RepResult&)>;

// Runs one repetition on real threads: starts the clients on a barrier, then this thread is the
// monitor (phases, progress, wait-event sampler, watchdog) until the clients have returned.
template <class Fail, class Finalize>
void run_threads_repetition(const CellSpec& cell, CellRun& run, RunControl& ctl, RepResult& res,
                            bool quiet, std::ostream& err, const StuckHandler& on_stuck,
                            Fail& fail, Finalize& finalize_json, std::vector<uint64_t>& txns0,
                            std::vector<uint64_t>& bytes0, std::vector<uint64_t>& txns1,
                            std::vector<uint64_t>& bytes1, ojson& progress,
                            std::array<uint64_t, kNumWaitEvents + 1>& wait_samples,
                            double& elapsed_s) {
  const uint32_t n = cell.clients;
  const RunSpec& rs = cell.run;
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

  // ---- Monitor: phases, progress, sampler, watchdog (this thread) ----
  enum class Phase { kWarmup, kMeasure, kStopping };
  Phase phase = Phase::kWarmup;
  start.arrive_and_wait();
  const auto t0 = Clock::now();
  const auto warm_end = t0 + from_seconds(std::max(0.0, rs.warmup_s));
  const auto window = from_seconds(std::max(0.0, rs.duration_s));
  Clock::time_point m_start{}, m_end{}, stop_at{}, next_sample{};

  const bool progress_on = rs.progress_interval_s > 0;
  const auto progress_step = from_seconds(progress_on ? rs.progress_interval_s : 1.0);
  auto next_progress = t0 + progress_step;
  auto last_progress = t0;
  std::vector<uint64_t> progress_txns(n, 0);


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
  // the sweep goes on) or they are stuck for good: their threads cannot be joined, so the
  // handler writes the result file and ends the process (it does not return).
  auto watchdog_fired = [&](const std::string& msg, Clock::duration wait) {
    fail(msg);
    if (stop_and_wait(wait)) return;
    res.error += " (the client threads did not stop; walbench exits)";
    res.json["progress"] = progress;
    finalize_json();
    on_stuck(res);
    std::_Exit(1);  // NB: on_stuck does not return; this is a backstop.
  };

  for (;;) {
    auto now = Clock::now();
    if (all_returned()) break;

    if (phase == Phase::kWarmup && now >= warm_end && !ctl.stop.load(std::memory_order_acquire)) {
      // Open the timed window: clients record latencies from here on.
      ctl.measuring.store(true, std::memory_order_release);
      m_start = Clock::now();
      snapshot(txns0, bytes0);
      next_sample = m_start;
      phase = Phase::kMeasure;
      now = m_start;
    }
    if (phase == Phase::kMeasure && now >= m_start + window) {
      snapshot(txns1, bytes1);
      m_end = Clock::now();
      ctl.measuring.store(false, std::memory_order_release);
      res.measured = true;
      ctl.stop.store(true, std::memory_order_release);
      phase = Phase::kStopping;
      stop_at = now = m_end;
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
        ++wait_samples[std::min(e, kNumWaitEvents)];
      }
      next_sample += kSamplePeriod;
      if (next_sample <= now) next_sample = now + kSamplePeriod;  // fell behind: skip samples
    }

    if (progress_on && phase != Phase::kStopping && now >= next_progress) {
      // Per interval: tps from the txns delta over the measured interval. The clients' latency
      // sums are plain fields (owner-written), so they cannot be read here without a data
      // race: lat is Little's law for a closed loop (clients / tps), and stddev is the spread
      // between the clients' mean latencies in the interval (interval / own txns), i.e. how
      // evenly the clients progress, not the per-transaction stddev of pgbench.
      const double dt = seconds(now - last_progress);
      uint64_t delta = 0;
      std::vector<double> per_client_ms;
      per_client_ms.reserve(n);
      for (uint32_t i = 0; i < n; ++i) {
        const uint64_t cur = ctl.counters[i].txns.load(std::memory_order_relaxed);
        const uint64_t d = cur - progress_txns[i];
        progress_txns[i] = cur;
        delta += d;
        if (d > 0) per_client_ms.push_back(dt * 1000.0 / static_cast<double>(d));
      }
      const double tps = dt > 0 ? static_cast<double>(delta) / dt : 0.0;
      const double lat_ms = tps > 0 ? static_cast<double>(n) * 1000.0 / tps : 0.0;
      const double stddev_ms = population_stddev(per_client_ms);
      const double t = seconds(now - t0);
      ojson p;
      p["t"] = std::round(t * 1000.0) / 1000.0;
      p["tps"] = tps;
      p["lat_ms"] = lat_ms;
      p["stddev_ms"] = stddev_ms;
      progress.push_back(std::move(p));
      if (!quiet) {
        err << format_progress_line(t, tps, lat_ms, stddev_ms) << '\n';
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
  if (res.measured) elapsed_s = seconds(m_end - m_start);
}

RepResult run_repetition(const CellSpec& cell, CellFactory factory, uint64_t seed, bool quiet,
                         std::ostream& err, const StuckHandler& on_stuck) {
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
  const RunSpec& rs = cell.run;
  RunControl ctl(n);
  std::vector<uint64_t> txns0(n), bytes0(n), txns1(n), bytes1(n);
  ojson progress = ojson::array();
  std::array<uint64_t, kNumWaitEvents + 1> wait_samples{};  // last slot: out-of-range values
  double elapsed_s = 0;  // length of the timed window

  if (run->drives_itself()) {
    // A simulated platform runs its clients as fibers in virtual time; it reports the same
    // observations the thread monitor below makes, in virtual seconds.
    DrivenRun d;
    try {
      d = run->drive(ctl, rs);
    } catch (const std::exception& e) {
      d.error = e.what();
    }
    if (!d.error.empty()) fail(d.error);
    res.measured = d.measured && d.error.empty();
    if (res.measured) {
      txns0 = d.txns0;
      bytes0 = d.bytes0;
      txns1 = d.txns1;
      bytes1 = d.bytes1;
      elapsed_s = d.window_s;
    }
    for (const auto& p : d.progress) {
      ojson j;
      j["t"] = std::round(p.t * 1000.0) / 1000.0;
      j["tps"] = p.tps;
      j["lat_ms"] = p.lat_ms;
      j["stddev_ms"] = p.stddev_ms;
      progress.push_back(std::move(j));
      if (!quiet) err << format_progress_line(p.t, p.tps, p.lat_ms, p.stddev_ms) << '\n';
    }
    wait_samples = d.wait_samples;
    res.json["platform"] = ojson(d.platform_stats);
  } else {
    run_threads_repetition(cell, *run, ctl, res, quiet, err, on_stuck, fail, finalize_json,
                           txns0, bytes0, txns1, bytes1, progress, wait_samples, elapsed_s);
  }

  try {
    run->finish();
  } catch (const std::exception& e) {
    fail(std::string("finish: ") + e.what());
  } catch (...) {
    fail("finish: unknown exception");
  }

  // ---- Numbers of the timed window ----
  if (res.measured) {
    uint64_t txns = 0, bytes = 0;
    for (uint32_t i = 0; i < n; ++i) {
      txns += txns1[i] - txns0[i];
      bytes += bytes1[i] - bytes0[i];
    }
    const double elapsed = elapsed_s;
    res.tps = elapsed > 0 ? static_cast<double>(txns) / elapsed : 0.0;
    res.bytes_per_s = elapsed > 0 ? static_cast<double>(bytes) / elapsed : 0.0;
    const LatencySummaryMs lat = summarize_latency(ctl.counters);
    res.lat_mean_ms = lat.mean;
    res.json["tps"] = res.tps;
    res.json["bytes_per_s"] = res.bytes_per_s;
    res.json["txns"] = txns;
    res.json["elapsed_s"] = elapsed;
    res.json["latency_ms"] = lat.to_json();
  } else {
    for (const char* k : {"tps", "bytes_per_s", "txns", "elapsed_s", "latency_ms"})
      res.json[k] = nullptr;
  }
  res.json["progress"] = std::move(progress);
  ojson waits = ojson::object();
  for (size_t e = 0; e <= kNumWaitEvents; ++e) {
    if (wait_samples[e] == 0) continue;
    waits[e < kNumWaitEvents ? wait_event_name(static_cast<WaitEvent>(e)) : "?"] = wait_samples[e];
  }
  res.json["wait_events"] = std::move(waits);
  try {
    res.json["lock_stats"] = ojson(run->lock_stats());
  } catch (const std::exception& e) {
    res.json["lock_stats"] = ojson{{"error", e.what()}};
  }
  try {
    res.json["model"] = ojson(run->model_stats());
  } catch (const std::exception& e) {
    res.json["model"] = ojson{{"error", e.what()}};
  }

  // ---- Verify (only a model whose clients all ran to the end) ----
  res.json["verify"] = nullptr;
  if (rs.verify && res.ok) {
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
  if (res.ok && !res.measured) fail("the clients returned before the timed window ended");
  finalize_json();
  return res;
}

ojson cell_header_json(const CellSpec& cell) {
  ojson c;
  c["index"] = cell.index;
  c["label"] = cell.label;
  c["strategy"] = cell.strategy;
  c["params"] = ojson(cell.strategy_params);
  c["clients"] = cell.clients;
  c["matrix"] = ojson(cell.matrix_values);
  c["platform"] = ojson(to_json(cell.platform));
  c["workload"] = ojson(to_json(cell.workload));
  c["wal"] = ojson(to_json(cell.wal));
  c["commit"] = ojson(to_json(cell.commit));
  c["run"] = ojson(to_json(cell.run));
  return c;
}

ojson summarize_cell(const std::vector<RepResult>& reps) {
  std::vector<double> tps, bps, lat;
  for (const auto& r : reps) {
    if (!r.measured) continue;
    tps.push_back(r.tps);
    bps.push_back(r.bytes_per_s);
    lat.push_back(r.lat_mean_ms);
  }
  if (tps.empty()) return nullptr;
  ojson s;
  s["repetitions"] = tps.size();
  s["tps_median"] = median(tps);
  s["tps_rsd_pct"] = rsd_pct(tps);
  s["tps_min"] = *std::min_element(tps.begin(), tps.end());
  s["tps_max"] = *std::max_element(tps.begin(), tps.end());
  s["bytes_per_s_median"] = median(bps);
  s["lat_ms_median"] = median(lat);
  return s;
}

}  // namespace

// ---- Public helpers ----

nlohmann::json machine_context() { return nlohmann::json(machine_context_ordered()); }

nlohmann::json to_json(const PlatformSpec& p) { return {{"kind", p.kind}}; }

nlohmann::json to_json(const WalSpec& w) {
  return {{"page_size", w.page_size},     {"segment_size", w.segment_size},
          {"wal_buffers", w.wal_buffers}, {"storage", w.storage},
          {"path", w.path},               {"fsync", w.fsync},
          {"buffer_init", w.buffer_init}};
}

nlohmann::json to_json(const CommitSpec& c) {
  return {{"synchronous_commit", c.synchronous_commit},
          {"wal_writer_delay_ms", c.wal_writer_delay_ms},
          {"wal_writer_flush_after", c.wal_writer_flush_after}};
}

nlohmann::json to_json(const WorkloadSpec& w) {
  return {{"name", w.name},
          {"record_size", w.record_size.to_json()},
          {"record_size_label", w.record_size.label()},
          {"transactional", w.transactional},
          {"client_overhead_us", w.client_overhead_us},
          {"client_overhead_jitter", w.client_overhead_jitter},
          {"payload_ns_per_byte", w.payload_ns_per_byte}};
}

nlohmann::json to_json(const RunSpec& r) {
  return {{"duration_s", r.duration_s},
          {"warmup_s", r.warmup_s},
          {"repetitions", r.repetitions},
          {"seed", r.seed},
          {"progress_interval_s", r.progress_interval_s},
          {"verify", r.verify},
          {"watchdog_s", r.watchdog_s}};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double rsd_pct(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (mean == 0) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1)) / std::fabs(mean) * 100.0;
}

double histogram_quantile(const LatencyHistogram& h, double q) {
  namespace bh = boost::histogram;
  q = std::clamp(q, 0.0, 1.0);
  double total = 0;
  for (auto&& x : bh::indexed(h, bh::coverage::all)) total += static_cast<double>(*x);
  if (total <= 0) return 0;
  const auto& ax = h.axis();
  const double target = q * total;
  double cum = 0;
  for (auto&& x : bh::indexed(h, bh::coverage::all)) {
    const double c = static_cast<double>(*x);
    if (c <= 0) continue;
    if (cum + c >= target) {
      const int idx = x.index();
      if (idx < 0) return ax.value(0);                  // underflow: the lowest edge
      if (idx >= ax.size()) return ax.value(ax.size());  // overflow: the highest edge
      const double lo = x.bin().lower();
      const double hi = x.bin().upper();
      const double f = std::clamp((target - cum) / c, 0.0, 1.0);
      return lo * std::pow(hi / lo, f);  // log-spaced bin: interpolate geometrically
    }
    cum += c;
  }
  return ax.value(ax.size());
}

nlohmann::json LatencySummaryMs::to_json() const {
  return {{"mean", mean}, {"stddev", stddev}, {"p50", p50},     {"p90", p90},
          {"p99", p99},   {"p999", p999},     {"count", count}};
}

LatencySummaryMs summarize_latency(const std::vector<ClientCounters>& counters) {
  LatencyHistogram merged = make_latency_histogram();
  double sum = 0, sumsq = 0;
  uint64_t count = 0;
  for (const auto& c : counters) {
    // Bin by bin rather than `merged += c.latency`: same result, and it avoids a GCC 12
    // -Wmaybe-uninitialized false positive inside Boost.Histogram's operator+= (ASan builds).
    for (auto&& x : boost::histogram::indexed(c.latency, boost::histogram::coverage::all)) {
      const double v = static_cast<double>(*x);
      if (v != 0) merged.at(x.index()) += v;
    }
    sum += c.lat_sum_ns;
    sumsq += c.lat_sumsq_ns;
    count += c.lat_count;
  }
  LatencySummaryMs s;
  s.count = count;
  if (count == 0) return s;
  const double mean_ns = sum / static_cast<double>(count);
  const double var_ns = std::max(0.0, sumsq / static_cast<double>(count) - mean_ns * mean_ns);
  s.mean = mean_ns / 1e6;
  s.stddev = std::sqrt(var_ns) / 1e6;
  s.p50 = histogram_quantile(merged, 0.50) / 1e6;
  s.p90 = histogram_quantile(merged, 0.90) / 1e6;
  s.p99 = histogram_quantile(merged, 0.99) / 1e6;
  s.p999 = histogram_quantile(merged, 0.999) / 1e6;
  return s;
}

std::string format_progress_line(double t_s, double tps, double lat_ms, double stddev_ms) {
  return absl::StrFormat("progress: %.1f s, %.1f tps, lat %.3f ms stddev %.3f", t_s, tps, lat_ms,
                         stddev_ms);
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

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(
        absl::StrFormat("cannot write result file %s: %s: %s", path, what, std::strerror(errno)));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open " + tmp);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail("write " + tmp);
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail("fsync " + tmp);
  }
  if (::close(fd) != 0) fail("close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename " + tmp);
  // Make the rename itself durable.
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

CellFactory registry_factory_lookup(const CellSpec& cell) {
  const StrategyInfo* info = find_strategy(cell.strategy);
  if (!info) throw std::runtime_error("unknown strategy \"" + cell.strategy + "\"");
  if (!info->make_cell)
    throw std::runtime_error("strategy " + cell.strategy + " has no implementation yet");
  return info->make_cell;
}

int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err) {
  return run_matrix(cells, opts, out, err, registry_factory_lookup);
}

// One cell's repetitions (what run_matrix records for it). on_stuck is used only on real
// threads; a simulated cell reports a stuck run as a failed repetition.
namespace {

struct CellOutcome {
  bool ok = true;
  std::string error;
  ojson reps = ojson::array();
  std::vector<RepResult> results;
};

std::string repetition_error(const CellSpec& cell, uint32_t r, uint64_t seed,
                             const std::string& msg) {
  const uint32_t nreps = std::max<uint32_t>(1, cell.run.repetitions);
  return nreps > 1 ? absl::StrFormat("repetition %d/%d (seed %d): %s", r + 1, nreps, seed, msg)
                   : msg;
}

// Makes the handler for client threads that are stuck for good in repetition r of a cell.
using StuckHandlerFactory = std::function<StuckHandler(CellOutcome&, uint32_t r, uint64_t seed)>;

// One cell: look up its factory, run its repetitions (stopping at the first failure).
CellOutcome compute_cell(const CellSpec& cell, const FactoryLookup& lookup, bool quiet,
                         std::ostream& err, const StuckHandlerFactory& stuck_handler) {
  CellOutcome co;
  CellFactory factory = nullptr;
  try {
    factory = lookup(cell);
    if (!factory) throw std::runtime_error("strategy " + cell.strategy + " has no implementation yet");
  } catch (const std::exception& e) {
    co.ok = false;
    co.error = e.what();
  }
  if (co.ok && cell.clients == 0) {
    co.ok = false;
    co.error = "clients must be at least 1";
  }
  const uint32_t nreps = std::max<uint32_t>(1, cell.run.repetitions);
  for (uint32_t r = 0; co.ok && r < nreps; ++r) {
    const uint64_t seed = cell.run.seed + r;
    RepResult rr = run_repetition(cell, factory, seed, quiet, err, stuck_handler(co, r, seed));
    co.reps.push_back(rr.json);
    if (!rr.ok) {
      co.ok = false;
      co.error = repetition_error(cell, r, seed, rr.error);
    }
    co.results.push_back(std::move(rr));
  }
  return co;
}

}  // namespace

int run_matrix(const std::vector<CellSpec>& cells, const RunOptions& opts, std::ostream& out,
               std::ostream& err, const FactoryLookup& lookup) {
  const auto t_begin = Clock::now();

  ojson doc;
  {
    ojson ctx = machine_context_ordered();
    ctx["config_files"] = opts.config_paths;
    ctx["config_hash"] = opts.config_hash;
    ctx["overrides"] = opts.overrides;
    ctx["seed"] = cells.empty() ? ojson(nullptr) : ojson(cells.front().run.seed);
    ctx["config"] = ojson(opts.config);
    doc["context"] = std::move(ctx);
  }
  doc["cells"] = ojson::array();
  auto save = [&]() {
    if (!opts.output_path.empty()) write_file_atomically(opts.output_path, doc.dump(1) + "\n");
  };
  save();  // an unwritable path fails before the first cell runs

  bool any_failed = false;
  // The cell's entry, its result-file rewrite and its line; also used by the stuck path.
  auto emit_cell = [&](size_t k, const CellOutcome& co) {
    const CellSpec& cell = cells[k];
    const bool own_position = cell.total >= cells.size() && cell.index < cell.total;
    const size_t shown_index = own_position ? cell.index + 1 : k + 1;
    const size_t shown_total = own_position ? cell.total : cells.size();
    ojson cj = cell_header_json(cell);
    cj["ok"] = co.ok;
    cj["error"] = co.ok ? ojson(nullptr) : ojson(co.error);
    cj["repetitions"] = co.reps;
    cj["summary"] = summarize_cell(co.results);
    if (!co.ok) any_failed = true;

    const double elapsed = seconds(Clock::now() - t_begin);
    const double eta =
        elapsed / static_cast<double>(k + 1) * static_cast<double>(cells.size() - k - 1);
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
      line += absl::StrFormat("%.1f tps (rsd %.1f%%) verify %s", s["tps_median"].get<double>(),
                              s["tps_rsd_pct"].get<double>(), verify);
    } else {
      line += "FAILED: " + co.error;
    }
    line += "  [eta " + format_eta(eta) + "]";
    doc["cells"].push_back(std::move(cj));
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
  // (their numbers do not depend on it). Results are still emitted in matrix order.
  std::vector<std::promise<CellOutcome>> promises(cells.size());
  std::vector<std::future<CellOutcome>> pending(cells.size());
  std::vector<size_t> parallel;
  for (size_t k = 0; k < cells.size(); ++k)
    if (opts.jobs > 1 && cells[k].platform.kind == "sim") {
      pending[k] = promises[k].get_future();
      parallel.push_back(k);
    }
  std::atomic<size_t> next_parallel{0};
  std::vector<std::thread> workers;
  for (unsigned j = 0; j < std::min<size_t>(opts.jobs, parallel.size()); ++j)
    workers.emplace_back([&] {
      std::ostringstream sink;  // progress lines of parallel cells stay in the result file
      for (size_t i; (i = next_parallel.fetch_add(1)) < parallel.size();) {
        const size_t k = parallel[i];
        promises[k].set_value(
            compute_cell(cells[k], lookup, /*quiet=*/true, sink, stuck_handler_for(k)));
      }
    });

  for (size_t k = 0; k < cells.size(); ++k) {
    const CellOutcome co = pending[k].valid()
                               ? pending[k].get()
                               : compute_cell(cells[k], lookup, opts.quiet, err,
                                              stuck_handler_for(k));
    emit_cell(k, co);
    save();
  }
  for (auto& w : workers) w.join();
  return any_failed ? 1 : 0;
}

}  // namespace walbench
