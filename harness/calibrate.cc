// `walbench calibrate`: the order of the measurements and the partner CPUs they use; what each
// measures is in calibrate_cpu.h, calibrate_os.h and calibrate_storage.h, how a figure becomes
// a SimConfig value in calibrate_preset.h, the whole picture in calibrate.h. Every measurement
// runs on threads it creates and pins itself, so the caller's affinity is never changed; every
// loop is bounded (a fixed count or a time budget).
#include "harness/calibrate.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/platform/sim.h"
#include "harness/calibrate_cpu.h"
#include "harness/calibrate_os.h"
#include "harness/calibrate_preset.h"
#include "harness/calibrate_probe.h"
#include "harness/calibrate_storage.h"
#include "harness/calibrate_topology.h"
#include "harness/config.h"
#include "harness/runner.h"

namespace walbench {

using ojson = nlohmann::ordered_json;
using namespace calibration;

ojson calibrate(const CalibrateOptions& opts, std::ostream& log) {
  const double t_start = now_ns();
  const bool quick = opts.quick;
  const nlohmann::json ctx = machine_context();
  const std::string host = ctx.value("host", std::string("unknown"));
  const std::string cpu_model = ctx.value("cpu_model", std::string("unknown"));
  const std::string name = opts.name.empty() ? host.substr(0, host.find('.')) : opts.name;
  const SimConfig d;
  PresetBuilder p(log);

  // -- topology
  const Topology topo = read_topology();
  log << absl::StrFormat("walbench calibrate%s: %s, %s, %d online CPUs (%d usable here)\n",
                         quick ? " --quick" : "", name, cpu_model, topo.online, topo.cpus.size());
  const std::string topo_src =
      absl::StrFormat("/sys/devices/system/cpu: %d online CPUs, %d physical cores in %d package(s)",
                      topo.online, topo.cores, topo.sockets);
  p.set(
      "cores", topo.cores,
      topo_src + " (distinct package/core_id pairs)" + (topo.note.empty() ? "" : "; " + topo.note));
  p.set("sockets", topo.sockets, topo_src + " (distinct physical_package_id)");
  p.set("smt", topo.smt, topo_src + " (online CPUs per physical core)");
  p.set("cores_per_cluster", topo.cores_per_cluster,
        topo.cores_per_cluster > 0
            ? "cores sharing one L3 (cache/index*/shared_cpu_list), fewer than a socket"
            : "0: every core of a socket shares one L3 (cache/index*/shared_cpu_list)");
  auto cache_size = [&](const char* key, uint64_t bytes, const char* what) {
    if (bytes == 0) return;  // unknown: the SimConfig default, with its note below
    p.set(key, bytes,
          absl::StrFormat("/sys/devices/system/cpu: the first online CPU's %s "
                          "(cache/index*/size): %d bytes",
                          what, bytes));
  };
  cache_size("core_cache_bytes", topo.l2_bytes, "level-2 cache");
  cache_size("cluster_cache_bytes", topo.l3_bytes, "level-3 cache");
  p.note(absl::StrFormat("topology: %d socket(s) x %d cores x %d thread(s)%s", topo.sockets,
                         topo.cores / topo.sockets, topo.smt,
                         topo.cores_per_cluster
                             ? absl::StrFormat(", L3 clusters of %d cores", topo.cores_per_cluster)
                             : ""));

  // The measuring CPU and its partners: another physical core in the same L3 cluster / the same
  // socket (another cluster if there are clusters) / another socket.
  const CpuInfo* a = topo.cpus.empty() ? nullptr : &topo.cpus[0];
  auto partner = [&](auto&& pred) -> const CpuInfo* {
    if (a == nullptr) return nullptr;
    for (const CpuInfo& c : topo.cpus)
      if (c.cpu != a->cpu && !(c.package == a->package && c.core == a->core) && pred(c)) return &c;
    return nullptr;
  };
  const bool clusters = topo.cores_per_cluster > 0;
  const CpuInfo* same_cluster =
      clusters ? partner([&](const CpuInfo& c) { return c.package == a->package && c.l3 == a->l3; })
               : nullptr;
  const CpuInfo* same_socket = partner(
      [&](const CpuInfo& c) { return c.package == a->package && (!clusters || c.l3 != a->l3); });
  const CpuInfo* other_socket = partner([&](const CpuInfo& c) { return c.package != a->package; });
  const int cpu_a = a ? a->cpu : -1;

  // -- cache lines
  const int pp_samples = quick ? 200 : 1000, pp_rounds = 100;
  auto transfer = [&](const CpuInfo* b, const std::string& label, double* out) -> std::string {
    bool pinned = false;
    const Spread s = spread_of(line_pingpong(cpu_a, b->cpu, pp_samples, pp_rounds, &pinned));
    p.figure(absl::StrFormat("%s transfer, cpu %d <-> cpu %d", label, cpu_a, b->cpu), s, "ns");
    *out = s.median;
    return absl::StrFormat(
        "CAS ping-pong on one cache line between cpu %d and cpu %d%s (as "
        "nviennot/core-to-core-latency), "
        "round trip / 2: %s per sample of %d round trips",
        cpu_a, b->cpu, pinned ? " (pinned)" : " (pinning failed: unpinned)", show(s, "ns"),
        pp_rounds);
  };
  double t_socket = static_cast<double>(d.same_socket_transfer_ns);
  if (same_socket != nullptr) {
    const std::string src = transfer(
        same_socket, clusters ? "same-socket (other L3 cluster)" : "same-socket line", &t_socket);
    p.set("same_socket_transfer_ns", whole_ns(t_socket, 1), src);
  } else {
    p.note("same-socket transfer: no second core usable here; SimConfig default kept");
    p.set("same_socket_transfer_ns", d.same_socket_transfer_ns,
          "SimConfig default (not measured: no second physical core in this process's CPU set)");
  }
  const uint64_t socket_ns = p.value("same_socket_transfer_ns").get<uint64_t>();
  if (same_cluster != nullptr) {
    double t = 0;
    const std::string src = transfer(same_cluster, "same-cluster line", &t);
    p.set("same_cluster_transfer_ns", whole_ns(t, 1), src);
  } else {
    p.set("same_cluster_transfer_ns", socket_ns,
          clusters
              ? "= same_socket_transfer_ns (no second core of this L3 cluster usable here)"
              : "= same_socket_transfer_ns (no L3 clusters: used only with cores_per_cluster > 0)");
  }
  if (other_socket != nullptr) {
    double t = 0;
    const std::string src = transfer(other_socket, "cross-socket line", &t);
    p.set("cross_socket_transfer_ns", whole_ns(t, 1), src);
  } else {
    p.note(topo.sockets > 1
               ? "cross-socket transfer: no CPU of another socket usable here; set to same-socket"
               : "cross-socket transfer: one socket; set to the same-socket figure");
    p.set("cross_socket_transfer_ns", socket_ns,
          topo.sockets > 1
              ? "= same_socket_transfer_ns (no CPU of another socket usable here)"
              : "= same_socket_transfer_ns (one socket: there is no cross-socket transfer)");
  }

  // -- one core
  const CoreFigures cf = on_cpu(cpu_a, [&] { return core_figures(quick ? 10 : 40); });
  const Spread hit = spread_of(cf.hit), st = spread_of(cf.store),
               rmw = spread_of(cf.rmw_minus_store), fence = spread_of(cf.fence_minus_empty),
               pause = spread_of(cf.pause);
  p.figure("L1 hit (dependent load chain)", hit, "ns");
  p.figure("plain store (owned line)", st, "ns");
  p.figure("lock xadd minus plain store", rmw, "ns");
  p.figure("seq_cst fence minus empty loop", fence, "ns");
  p.figure("pause", pause, "ns");
  p.set("line_hit_ns", whole_ns(hit.median, 1),
        "dependent load chain through 64 lines of one 4 KiB block (L1): " + show(hit, "ns") +
            " per load; at least 1");
  p.set("rmw_extra_ns", whole_ns(rmw.median, 0),
        "lock xadd on an owned line minus a plain store to it, per operation in loops of 100000: " +
            show(rmw, "ns") + " (store alone " + show(st, "ns") + ")");
  p.set("fence_ns", whole_ns(fence.median, 0),
        "std::atomic_thread_fence(seq_cst) in a loop (x86-64 GCC: lock or $0,(%rsp), the same kind "
        "of locked no-op as PostgreSQL's pg_memory_barrier) minus an empty loop: " +
            show(fence, "ns"));
  p.set("pause_ns", whole_ns(pause.median, 1),
        std::string(kPauseWhat) + " in a loop: " + show(pause, "ns") + "; at least 1");
  {
    const Spread m = spread_of(
        on_cpu(cpu_a, [&] { return memory_latency(quick ? 3 : 7, quick ? 100000 : 300000); }));
    p.figure("DRAM load (random chase, 64 MiB)", m, "ns");
    p.set("memory_ns", whole_ns(m.median, 1),
          "random cyclic pointer chase over the lines of a 64 MiB buffer (transparent huge pages "
          "asked for): " +
              show(m, "ns") + " per load");
  }

  // -- OS
  {
    bool pinned = false;
    const Spread cs =
        spread_of(context_switches(cpu_a, quick ? 10 : 30, quick ? 200 : 500, &pinned));
    p.figure(absl::StrFormat("context switch (2 threads on cpu %d)", cpu_a), cs, "ns");
    p.set("context_switch_ns", whole_ns(cs.median, 1),
          absl::StrFormat("two threads on cpu %d%s ping-pong through two POSIX semaphores (futex), "
                          "round trip / 2 (Bendersky's method, the default's source): %s",
                          cpu_a, pinned ? " (pinned)" : " (pinning failed)", show(cs, "ns")));
  }
  const uint64_t cs_ns = p.value("context_switch_ns").get<uint64_t>();
  const uint64_t rmw_ns = p.value("rmw_extra_ns").get<uint64_t>();
  const CpuInfo* waker = same_socket ? same_socket : same_cluster ? same_cluster : other_socket;
  if (waker != nullptr) {
    // Wake-ups after idle times from 10 us to 2 ms. A CPU that still polls for work wakes
    // without an IPI and an exit from idle (idle_poll_ns); one that has halted pays what
    // semaphore_wake_ns prices, taken from the wake-ups after the polling window (the scan's
    // longer idle times: the idle a CPU of a loaded machine sees), or after 2 ms when every
    // idle time of the scan was still polled.
    constexpr double kLongIdleNs = 2e6;
    std::vector<double> long_wake, post;
    semaphore_wakes(cpu_a, waker->cpu, quick ? 40 : 200, kLongIdleNs, &long_wake, &post);
    const Spread lw = spread_of(long_wake), ps = spread_of(post);
    p.figure(absl::StrFormat("sem_post -> waiter runs (cpu %d -> cpu %d), idle 2 ms", cpu_a,
                             waker->cpu),
             lw, "ns");
    const std::vector<double> idle_times = {10e3, 25e3, 50e3, 100e3, 200e3, 400e3, 800e3};
    std::vector<std::vector<double>> scan_wakes;
    std::vector<double> idle_medians;
    std::string scan;
    for (double idle : idle_times) {
      std::vector<double> wk, ignored;
      semaphore_wakes(cpu_a, waker->cpu, quick ? 15 : 50, idle, &wk, &ignored);
      const Spread s = spread_of(wk);
      idle_medians.push_back(s.median);
      p.figure(absl::StrFormat("sem_post -> waiter runs, idle %.0f us", idle / 1e3), s, "ns");
      scan += absl::StrFormat("%s%.0f us: %.0f", scan.empty() ? "" : ", ", idle / 1e3, s.median);
      scan_wakes.push_back(std::move(wk));
    }
    // Inside the window the sim charges the post's line RMW and the dispatch's context switch.
    const double polled_charge = static_cast<double>(socket_ns + rmw_ns + cs_ns);
    const double polled_below = polled_wake_bound(lw.median, polled_charge);
    const uint64_t poll = idle_poll_param(idle_times, idle_medians, lw.median, polled_charge);
    p.set("idle_poll_ns", poll,
          absl::StrFormat(
              "sem_post to a waiter whose cpu was idle for each time, medians in ns (%s; after "
              "2 ms: %.0f); a wake-up counts as polled under %.0f ns (the geometric mean of the "
              "sim's polled charge, line RMW + context_switch_ns = %.0f ns, and the 2 ms median, "
              "capped at half the latter): %s",
              scan, lw.median, polled_below, polled_charge,
              poll == 0 ? "not even the shortest idle time's was, so no polling is seen (0)"
                        : absl::StrFormat("every one up to %.0f us was: the CPU still polled (no "
                                          "IPI, no exit from idle) or its idle state was about "
                                          "as cheap to leave; a lower bound on the window, "
                                          "which ends before %s",
                                          static_cast<double>(poll) / 1e3,
                                          poll >= idle_times.back() ? "an unmeasured idle time"
                                                                    : "the next idle time")));
    std::vector<double> halted;  // the wake-ups of the scan after the polling window
    std::string halted_from;
    for (size_t i = 0; i < idle_times.size(); ++i) {
      if (idle_times[i] <= static_cast<double>(poll)) continue;
      halted.insert(halted.end(), scan_wakes[i].begin(), scan_wakes[i].end());
      if (halted_from.empty()) halted_from = absl::StrFormat("%.0f", idle_times[i] / 1e3);
    }
    const bool from_scan = !halted.empty();
    const Spread w = from_scan ? spread_of(halted) : lw;
    p.set("semaphore_wake_ns", semaphore_wake_param(w.median, socket_ns + rmw_ns, cs_ns),
          absl::StrFormat(
              "sem_post by cpu %d to a thread blocked in sem_wait on cpu %d, idle for %s, post "
              "-> waiter runs: %s (after 2 ms of idle: %.0f ns); minus what the sim charges "
              "besides (sem_post: line transfer + rmw_extra_ns = %d ns; on dispatch "
              "context_switch_ns = %d ns)",
              cpu_a, waker->cpu,
              from_scan ? absl::StrFormat("%s-%.0f us (past the polling window)", halted_from,
                                          idle_times.back() / 1e3)
                        : std::string("2 ms"),
              show(w, "ns"), lw.median, socket_ns + rmw_ns, cs_ns));
    p.figure("sem_post call with a waiter (idle 2 ms)", ps, "ns");
    p.set("semaphore_post_ns", semaphore_post_param(ps.median, socket_ns + rmw_ns),
          absl::StrFormat("duration of that sem_post call (futex wake): %s; minus the RMW of the "
                          "semaphore's line the sim charges first (%d ns)",
                          show(ps, "ns"), socket_ns + rmw_ns));
  } else {
    p.note("semaphore wake: one CPU usable here; SimConfig defaults kept");
    p.set("semaphore_wake_ns", d.semaphore_wake_ns,
          "SimConfig default (not measured: one CPU usable here)");
    p.set("semaphore_post_ns", d.semaphore_post_ns,
          "SimConfig default (not measured: one CPU usable here)");
    p.set("idle_poll_ns", d.idle_poll_ns,
          "SimConfig default, 0 = no idle polling (not measured: one CPU usable here)");
  }
  {
    const Spread sl = spread_of(sleep_overshoot(quick ? 40 : 200));
    p.figure("nanosleep(1 us) overshoot", sl, "ns");
    const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    p.set("sleep_slack_ns", sleep_slack_param(sl.median, cs_ns),
          absl::StrFormat("nanosleep(1 us) overshoot: %s; minus context_switch_ns = %d ns (the sim "
                          "dispatches the sleeper after the slack); this thread's timer slack "
                          "(PR_GET_TIMERSLACK) is %d ns",
                          show(sl, "ns"), cs_ns, slack));
  }

  // -- bandwidth
  double copy_rate = d.copy_bytes_per_ns;
  {
    const Spread c = spread_of(on_cpu(cpu_a, [&] { return copy_one_core(quick ? 8 : 40); }));
    p.figure("memcpy, one core (8 MiB blocks, 64 MiB rings)", c, "B/ns");
    copy_rate = round3(c.median);
    p.set("copy_bytes_per_ns", copy_rate,
          "memcpy of 8 MiB blocks between two 64 MiB rings on one core: " + show(c, "bytes/ns"));
  }
  std::vector<int> cpus;  // every usable CPU (-1, unpinned, when none could be listed)
  for (const CpuInfo& c : topo.cpus) cpus.push_back(c.cpu);
  if (cpus.empty()) cpus.push_back(-1);
  {
    const Spread m = spread_of(copy_all_cores(cpus, quick ? 3 : 9, (quick ? 30 : 100) * 1e6));
    p.figure(absl::StrFormat("memcpy, all %d CPUs at once (aggregate)", cpus.size()), m, "B/ns");
    p.set("memory_bandwidth_bytes_per_ns", round3(m.median),
          absl::StrFormat("memcpy on all %d usable CPUs at once, each 4 MiB blocks between its own "
                          "rings, sum of the rates (copied bytes: each read and written): %s",
                          cpus.size(), show(m, "bytes/ns")));
  }
  uint32_t at_issue = 0;
  uint64_t window = 0;
  {
    // request_at_issue: whether a miss's request waits at a busy line (sim.h COST MODEL
    // "Misses"). Two CPUs suffice: back-to-back fetch_adds by two threads, measured here and
    // run on a simulated pair of cores with these transfers both ways; the nearer prediction of
    // the mean run length (on a log scale) wins when the two differ enough to tell them apart.
    const CpuInfo* b = same_cluster != nullptr   ? same_cluster
                       : same_socket != nullptr  ? same_socket
                                                 : other_socket;
    std::string src;
    if (b == nullptr) {
      src = "not measured (no second physical core usable here); 0, the model the shipped "
            "results use";
    } else {
      constexpr uint32_t kAdds = 200000;
      bool pinned = false;
      const Spread m =
          spread_of(fetch_add_run_length(cpu_a, b->cpu, quick ? 5 : 15, kAdds, &pinned));
      p.figure(absl::StrFormat("fetch_add run length, cpu %d and cpu %d", cpu_a, b->cpu), m,
               "adds");
      SimConfig sc;
      sc.cores = 2;
      sc.smt = 1;
      sc.sockets = b == other_socket ? 2 : 1;
      sc.cores_per_cluster = 0;
      auto measured_ns = [&](const char* key) { return p.value(key).get<uint64_t>(); };
      sc.line_hit_ns = measured_ns("line_hit_ns");
      sc.rmw_extra_ns = measured_ns("rmw_extra_ns");
      sc.same_socket_transfer_ns =
          measured_ns(b == same_cluster ? "same_cluster_transfer_ns" : "same_socket_transfer_ns");
      sc.cross_socket_transfer_ns = measured_ns("cross_socket_transfer_ns");
      sc.wake_jitter = 0;
      sc.request_at_issue = 0;
      const double when_free = sim_fetch_add_run_length(sc, 2000);
      sc.request_at_issue = 1;
      const double waits = sim_fetch_add_run_length(sc, 2000);
      // Used only when the two predictions differ by 1.5x or more and the threads were pinned.
      // Clearly nearer one (at most half the other's distance on a log scale): that rule. In
      // between: request_at_issue 1 with the snoop_window_ns (0 .. one transfer, searched)
      // whose simulated runs are nearest the measured ones.
      const bool distinct = waits > 0 && when_free / waits >= 1.5;
      const bool usable = distinct && pinned && m.median > 0;
      const double to_free = usable ? std::abs(std::log(m.median / when_free)) : 0;
      const double to_waits = usable ? std::abs(std::log(m.median / waits)) : 0;
      std::string verdict;
      if (!pinned) {
        verdict = "; the threads could not be pinned: undecided, 0 (the model the shipped results use)";
      } else if (!distinct) {
        verdict = "; too close to tell apart: 0, the model the shipped results use";
      } else if (!usable) {
        verdict = "; no run measured: undecided, 0 (the model the shipped results use)";
      } else if (to_free <= 0.5 * to_waits) {
        verdict = "; clearly nearer 0, the model the shipped results use";
      } else {
        at_issue = 1;
        if (to_waits <= 0.5 * to_free) {
          verdict = "; clearly nearer 1 (which makes runs differ from the shipped results, made "
                    "with 0: README \"Platforms\")";
        } else {
          // Runs grow with the window (one more add per line_hit_ns + rmw_extra_ns of it).
          uint64_t lo = 0, hi = sc.same_socket_transfer_ns;
          if (b == other_socket) hi = sc.cross_socket_transfer_ns;
          auto runs = [&](uint64_t w) {
            sc.snoop_window_ns = w;
            return sim_fetch_add_run_length(sc, 2000);
          };
          while (lo < hi) {  // the smallest window whose runs reach the measured ones
            const uint64_t mid = (lo + hi) / 2;
            if (runs(mid) < m.median) lo = mid + 1;
            else hi = mid;
          }
          if (lo > 0 && std::abs(std::log(m.median / runs(lo - 1))) <
                            std::abs(std::log(m.median / runs(lo))))
            --lo;
          window = lo;
          verdict = absl::StrFormat(
              "; between the two (a holder keeps the line for less than 0's half transfer, but "
              "not for nothing): 1 with snoop_window_ns %d, whose simulated runs are %.2f (this "
              "makes runs differ from the shipped results, made with 0 and no window: README "
              "\"Platforms\")",
              window, runs(window));
        }
      }
      src = absl::StrFormat(
          "back-to-back fetch_adds by cpu %d and cpu %d%s, %d adds each: mean run length %s; the "
          "simulated pair predicts %.2f with the request leaving once the line frees (0), %.2f "
          "with it waiting at the line (1)%s",
          cpu_a, b->cpu, pinned ? " (pinned)" : " (pinning failed: unpinned)", kAdds,
          show(m, "adds"), when_free, waits, verdict);
      p.note(absl::StrFormat("line hand-over: fetch_add runs of %.2f on two CPUs (simulated: "
                             "%.2f when free, %.2f waiting) -> request_at_issue %d, "
                             "snoop_window_ns %d",
                             m.median, when_free, waits, at_issue, window));
    }
    p.set("request_at_issue", at_issue, src);
    p.set("snoop_window_ns", window,
          window > 0 ? "fitted to the fetch_add runs: see request_at_issue"
                     : "0: no window (see request_at_issue)");
  }
  {
    // snoop_linger: how a contended line is handed on (sim.h COST MODEL "Misses"). The same CAS
    // loop measured here on every CPU and run on the simulated machine both ways; the nearer
    // prediction (on a log scale) wins, when the two differ enough to tell them apart.
    const uint32_t n = cpus.front() < 0 ? 1 : static_cast<uint32_t>(cpus.size());
    std::string src;
    uint32_t linger = 0;
    if (n < 2) {
      src = "not measured (fewer than two usable CPUs); 0, the model the shipped results use";
    } else {
      const CasLoopFigures m = cas_loop_contention(cpus, quick ? 3 : 9, (quick ? 10 : 30) * 1e6);
      std::vector<double> per_us = m.successes_per_ns;
      for (double& v : per_us) v *= 1000;
      p.figure(absl::StrFormat("CAS loop on one word, all %d CPUs (successes)", n),
               spread_of(per_us), "per us");
      SimConfig sc;
      sc.cores = n;
      sc.smt = 1;
      sc.sockets = topo.sockets > 0 && n % topo.sockets == 0 ? topo.sockets : 1;
      // The machine measured so far; SMT siblings count as cores (every CPU runs the loop), and
      // clusters are kept when their size still divides a socket's CPUs.
      const uint32_t per_socket = n / sc.sockets;
      sc.cores_per_cluster = topo.cores_per_cluster > 0 && per_socket % topo.cores_per_cluster == 0
                                 ? topo.cores_per_cluster
                                 : 0;
      auto measured_ns = [&](const char* key) { return p.value(key).get<uint64_t>(); };
      sc.line_hit_ns = measured_ns("line_hit_ns");
      sc.rmw_extra_ns = measured_ns("rmw_extra_ns");
      sc.same_cluster_transfer_ns = measured_ns("same_cluster_transfer_ns");
      sc.same_socket_transfer_ns = measured_ns("same_socket_transfer_ns");
      sc.cross_socket_transfer_ns = measured_ns("cross_socket_transfer_ns");
      sc.wake_jitter = 0;
      sc.request_at_issue = at_issue;
      sc.snoop_window_ns = window;
      sc.snoop_linger = 0;
      const double at_arrival = sim_cas_loop_tries_per_success(sc, n, 100);
      sc.snoop_linger = 1;
      sc.snoop_window_ns = 0;  // snoop_linger 1 has its own window (validate)
      const double holder_first = sim_cas_loop_tries_per_success(sc, n, 100);
      const double measured = m.tries_per_success;
      const bool distinct = holder_first > 0 && at_arrival / holder_first >= 1.5;
      if (distinct && measured > 0)
        linger = std::abs(std::log(measured / holder_first)) <
                         std::abs(std::log(measured / at_arrival))
                     ? 1
                     : 0;
      src = absl::StrFormat(
          "CAS loop on one word by all %d usable CPUs: %.2f tries per success; the simulated "
          "machine predicts %.2f ordered at arrival (0), %.2f with the holder's retry first (1)%s",
          n, measured, at_arrival, holder_first,
          distinct ? "; the nearer on a log scale (1 makes runs differ from the shipped "
                     "results, made with 0: README \"Platforms\")"
                   : "; too few CPUs to tell them apart: 0, the model the shipped results use");
      p.note(absl::StrFormat("line hand-over: %.2f CAS tries per success on %d CPUs (simulated: "
                             "%.2f at arrival, %.2f holder first) -> snoop_linger %d%s",
                             measured, n, at_arrival, holder_first, linger,
                             distinct ? "" : " (undecided)"));
      // The herd after a wait-list lock's release (sim.h COST MODEL "Misses": loads of one
      // line in parallel), measured and predicted; a check for the reader, no parameter.
      const TtasLockFigures t = ttas_lock_contention(cpus, quick ? 3 : 9, (quick ? 10 : 30) * 1e6);
      std::vector<double> t_per_us = t.acquisitions_per_ns;
      for (double& v : t_per_us) v *= 1000;
      p.figure(absl::StrFormat("wait-list lock (TTAS) on one word, all %d CPUs (acquisitions)", n),
               spread_of(t_per_us), "per us");
      // About 12,800 acquisitions in all (at least 100 each): enough for a steady figure on
      // two CPUs, a few million simulated accesses on a 176-CPU machine.
      const uint32_t herd_acquisitions = std::max<uint32_t>(100, 12800 / n);
      sc.snoop_linger = 0;
      sc.request_at_issue = 0;
      sc.snoop_window_ns = 0;
      const double shipped_herd = sim_ttas_failed_rmws_per_acquisition(sc, n, herd_acquisitions);
      sc.snoop_linger = linger;
      sc.request_at_issue = at_issue;
      sc.snoop_window_ns = linger == 1 ? 0 : window;
      const double preset_herd = sim_ttas_failed_rmws_per_acquisition(sc, n, herd_acquisitions);
      const auto predicted = [](double v) {
        return std::isnan(v) ? std::string("n/a (the simulation did not finish)")
                             : absl::StrFormat("%.2f", v);
      };
      p.note(absl::StrFormat(
          "wait-list lock herd: %.2f failed fetch_or per acquisition on %d CPUs; the simulated "
          "machine predicts %s with the shipped hand-over (request_at_issue 0, snoop_linger "
          "0), %s with this preset's%s",
          t.failed_rmws_per_acquisition, n, predicted(shipped_herd), predicted(preset_herd),
          n < 4 ? " (on two or three CPUs this is a spinner's race with the releaser's next "
                  "fetch_or more than a herd)"
                : ""));
    }
    if (linger == 1 && at_issue == 1) {
      p.note("line hand-over: snoop_linger 1 on top of request_at_issue 1 gives a holder half a "
             "transfer of hits again, which the fetch_add runs chose against: the two measurements "
             "disagree; check both before using this preset");
      if (window > 0)
        p.set("snoop_window_ns", 0,
              absl::StrFormat("0: snoop_linger 1 (the CAS loop) brings its own window, half a "
                              "transfer; the fetch_add runs fitted %d ns",
                              window));
    }
    p.set("snoop_linger", linger, src);
  }
  {
    // crc_bytes_per_ns is PostgreSQL's CRC (calibrate_cpu.h), not the model's ISA-L one.
    const int crc_samples = quick ? 10 : 40;
    const Spread model = spread_of(on_cpu(cpu_a, [&] { return crc_rate_model(crc_samples); }));
    p.figure("CRC-32C, ISA-L (the model's own; not used)", model, "B/ns");
    if (have_crc32c_sse42()) {
      const Spread c = spread_of(on_cpu(cpu_a, [&] { return crc_rate_postgres(crc_samples); }));
      p.figure("CRC-32C, crc32q loop (PostgreSQL's)", c, "B/ns");
      p.set("crc_bytes_per_ns", round3(c.median),
            "PostgreSQL's CRC-32C as pg_comp_crc32c_sse42 computes it (one crc32q per 8 bytes, "
            "each waiting for the previous result; our loop of _mm_crc32_u64) over a "
            "cache-resident 64 KiB buffer: " +
                show(c, "bytes/ns") + ". For comparison, the model's ISA-L CRC (not what the "
                "simulated PostgreSQL spends): " + show(model, "bytes/ns"));
    } else {
      p.note("CRC: no SSE4.2 crc32 instruction here; the ISA-L rate stands in for PostgreSQL's");
      p.set("crc_bytes_per_ns", round3(model.median),
            "no SSE4.2 crc32 instruction on this CPU, so PostgreSQL's pg_comp_crc32c_sse42 loop "
            "cannot be measured; the model's ISA-L CRC-32C over a cache-resident 64 KiB buffer "
            "stands in (an upper bound: PostgreSQL's fallback is slower): " +
                show(model, "bytes/ns"));
    }
  }

  // -- storage
  if (!opts.fsync_dir.empty()) {
    const StorageFigures s = on_cpu(cpu_a, [&] { return storage_figures(opts.fsync_dir, quick); });
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(opts.fsync_dir, ec);
    const std::string where = ec ? opts.fsync_dir : abs.lexically_normal().string();
    const Spread sc = spread_of(s.syscall), wr = spread_of(s.write_ns), sy = spread_of(s.sync_ns),
                 small = spread_of(s.small_sync_ns);
    p.figure("pwrite of 8 bytes", sc, "ns");
    p.figure(absl::StrFormat("%d MiB of 1 MiB pwrites", s.bytes / kMiB), wr, "ns");
    p.figure(absl::StrFormat("fdatasync of those %d MiB", s.bytes / kMiB), sy, "ns");
    p.figure("8 KiB pwrite, then fdatasync: the fdatasync", small, "ns");
    const StorageParams sp = storage_params(sc.median, sy.median, s.bytes, small.median,
                                            s.small_bytes, copy_rate, cs_ns);
    p.set("syscall_ns", sp.syscall_ns,
          absl::StrFormat("an 8-byte pwrite to a file in %s (page cache), per call: %s", where,
                          show(sc, "ns")));
    if (!sp.instant) {
      p.set("storage_write_bytes_per_ns", sp.storage_write_bytes_per_ns,
            absl::StrFormat("%d MiB written in 1 MiB pwrites to %s, then fdatasync (%s; the "
                            "pwrites themselves, page cache: %s): the bytes beyond the 8 KiB "
                            "sync's / (that fdatasync - the 8 KiB one)",
                            s.bytes / kMiB, where, show(sy, "ns"), show(wr, "ns")));
    } else {
      p.set(
          "storage_write_bytes_per_ns", 0,
          absl::StrFormat("0 = instant: the fdatasync of %d MiB in %s took %s, less than a tenth "
                          "of copying them longer than the 8 KiB one; the directory is "
                          "memory-backed (the sim's tmpfs model)",
                          s.bytes / kMiB, where, show(sy, "ns")));
    }
    // One writer overwrites 64 MiB (beyond the caches, as copy_one_core's rings); every CPU
    // its own region at once, 1 GiB / CPUs held to 8-64 MiB: 64 MiB each on up to 16 CPUs
    // (128 MiB in all on 2), 1 GiB in all on 16-128, 8 MiB each past 128. The regions are first
    // written in WAL pages (kWalPageBytes), so that the page cache holds them in 4 KiB pages or
    // small folios, as ext4 held every file before Linux 6.16; the same region first written in
    // 256 KiB pwrites (a new segment's zero-fill since PostgreSQL 14: 32 WAL pages per pwritev)
    // and in 1 MiB ones (large folios where the kernel keeps them) are figures only.
    constexpr size_t kOneWriterRegion = 64 * kMiB;
    constexpr size_t kSegmentFillBytes = 32 * kWalPageBytes;
    const size_t each = std::clamp<size_t>(1024 * kMiB / cpus.size(), 8 * kMiB, 64 * kMiB);
    // One writer, its region first written first_write_bytes at a time.
    auto one_writer = [&](size_t first_write_bytes, const std::string& label) {
      const Spread r = spread_of(
          page_cache_rate(opts.fsync_dir, {cpu_a}, kOneWriterRegion, first_write_bytes, quick));
      p.figure(label, r, "B/ns");
      return r;
    };
    const Spread one = one_writer(
        kWalPageBytes, "1 MiB pwrites (page cache, region first written in 8 KiB pwrites), one CPU");
    const Spread one_fill =
        one_writer(kSegmentFillBytes, "the same, region first written in 256 KiB pwrites");
    const Spread one_large =
        one_writer(kPageCacheChunk, "the same, region first written in 1 MiB pwrites");
    if (one_large.median > 1.25 * one.median)
      p.note(absl::StrFormat(
          "page cache: a region first written in 1 MiB pwrites was overwritten %.2fx as fast "
          "(%.1f B/ns) as one first written in 8 KiB pwrites (%.1f B/ns): this kernel keeps "
          "large folios (ext4 since Linux 6.16, XFS since 5.18), so a WAL segment zero-filled "
          "in 256 KiB pwrites (PostgreSQL 14+) may sit in folios of up to 256 KiB (%.1f B/ns); "
          "page_cache_write_bytes_per_ns takes the 8 KiB kind (measured against the copy), "
          "that of kernels without large folios",
          one_large.median / one.median, one_large.median, one.median, one_fill.median));
    // The preset's rate: one writer's against copy_bytes_per_ns, as a ratio measured round by
    // round beside a memcpy of the same kind (a drifting host moves both), times the copy rate.
    const PageCacheAgainstCopy against =
        on_cpu(cpu_a, [&] { return page_cache_against_copy(opts.fsync_dir, kOneWriterRegion, quick); });
    const Spread against_copy = spread_of(against.copy), against_pwrite = spread_of(against.pwrite),
                 ratio = spread_of(against.ratio);
    p.figure("memcpy passes between the pwrite passes (8 MiB blocks, 64 MiB rings)", against_copy,
             "B/ns");
    p.figure("pwrite passes between them (1 MiB, 8 KiB-first-written region)", against_pwrite,
             "B/ns");
    p.figure("pwrite / memcpy, round by round", ratio, "");
    const double with_calls = ratio.median * copy_rate;
    const double pc_rate = page_cache_write_param(with_calls, kPageCacheChunk, sp.syscall_ns);
    p.set("page_cache_write_bytes_per_ns", pc_rate,
          absl::StrFormat(
              "one writer against the copy: 1 MiB pwrites overwriting %d MiB of a file in %s "
              "(page cache) first written in 8 KiB pwrites (4 KiB pages or small folios, as on "
              "kernels without large folios), system calls included, in passes alternating on "
              "one CPU with memcpy passes of copy_bytes_per_ns' kind (8 MiB blocks between two "
              "64 MiB rings; the pwrites write from the same source ring): pwrite / memcpy per "
              "round %s (the passes: pwrite %s, memcpy %s), times copy_bytes_per_ns %.3g = %.3g "
              "bytes/ns (the ratio is what is carried: it keeps the pwrite's relation to the copy "
              "rate the simulator charges, which was measured earlier in this run and may differ "
              "from the passes' own); without syscall_ns per call%s. Measured alone, not beside "
              "the copy: the region first "
              "written in 8 KiB pwrites %s; first written in 256 KiB pwrites (PostgreSQL 14+ "
              "zero-fills a new WAL segment so; folios of up to 256 KiB where the kernel keeps "
              "large folios) %s; first written in 1 MiB pwrites %s",
              kOneWriterRegion / kMiB, where, show(ratio, ""), show(against_pwrite, "bytes/ns"),
              show(against_copy, "bytes/ns"), copy_rate, with_calls,
              pc_rate > 0 ? "" : ": nothing left, so 0 (the copy rate)", show(one, "bytes/ns"),
              show(one_fill, "bytes/ns"), show(one_large, "bytes/ns")));
    const Spread all =
        spread_of(page_cache_rate(opts.fsync_dir, cpus, each, kWalPageBytes, quick));
    p.figure(absl::StrFormat(
                 "1 MiB pwrites (page cache, region first written in 8 KiB pwrites), all %d CPUs "
                 "at once",
                 cpus.size()),
             all, "B/ns");
    p.set("page_cache_bytes_per_ns", round3(all.median),
          absl::StrFormat("all writers together: 1 MiB pwrites overwriting %d MiB of its own file "
                          "in %s (first written in 8 KiB pwrites) on each of the %d usable CPUs "
                          "at once, sum of the rates: %s",
                          each / kMiB, where, cpus.size(), show(all, "bytes/ns")));
    if (all.median < with_calls)
      p.note(absl::StrFormat(
          "page cache: all %d CPUs together (%.1f B/ns) wrote slower than the preset's one "
          "writer (%.1f B/ns, the ratio to the copy times copy_bytes_per_ns; %.1f B/ns measured "
          "alone): contention among the writers, or something else writing or running; the sim "
          "caps every writer, one alone included, at page_cache_bytes_per_ns: check the machine "
          "was quiet and rerun calibrate",
          cpus.size(), all.median, with_calls, one.median));
    p.set("fsync_ns", sp.fsync_ns,
          absl::StrFormat("fdatasync after an 8 KiB pwrite into the preallocated region of a file "
                          "in %s (like a WAL page in a segment): %s; minus syscall_ns, "
                          "context_switch_ns (the sim wakes the syncing client with a dispatch) "
                          "and the 8 KiB at storage_write_bytes_per_ns",
                          where, show(small, "ns")));
  } else {
    p.note("storage: skipped (--fsync-path none); SimConfig defaults kept");
    for (const char* k : {"syscall_ns", "storage_write_bytes_per_ns", "fsync_ns",
                          "page_cache_write_bytes_per_ns", "page_cache_bytes_per_ns"})
      p.set(k, d.to_json()[k], "SimConfig default (not measured: --fsync-path none)");
  }

  // -- not measured
  const std::map<std::string, std::string> why = {
      {"placement", "SimConfig default (Linux spreads runnable threads over idle cores)"},
      {"time_slice_ns",
       "SimConfig default (not measured: CFS sched_min_granularity / EEVDF base_slice)"},
      {"wake_jitter", "SimConfig default (not measured)"},
      {"wakeup_preemption",
       "SimConfig default, 0 = off (an OS scheduling policy the configs choose, not measured)"},
      {"wakeup_granularity_ns",
       "SimConfig default: CFS sched_wakeup_granularity on >= 8 CPUs (not measured; "
       "wakeup_preemption 2 only)"},
      {"sleeper_credit_ns",
       "SimConfig default: CFS sched_latency / 2 (not measured; wakeup_preemption 2 only)"},
      {"smt_work_factor", topo.smt > 1 ? "SimConfig default (not measured)"
                                       : "SimConfig default (not measured; unused with smt 1)"},
      {"spin_park_after", "SimConfig default (a simulator setting, not a machine property)"},
      {"spin_park_max_ns", "SimConfig default (a simulator setting, not a machine property)"},
      {"stack_kib", "SimConfig default (a simulator setting, not a machine property)"},
      {"working_set_bytes",
       "SimConfig default, 0 = off (a property of the modelled program, not of the machine)"},
      {"core_cache_bytes", "SimConfig default (this machine's sysfs gives no level-2 size)"},
      {"cluster_cache_bytes", "SimConfig default (this machine's sysfs gives no level-3 size)"},
      {"cluster_cache_ns", "SimConfig default (not measured)"},
  };
  const std::string description = absl::StrFormat(
      "%s: %s, %d online CPUs (%d socket(s) x %d cores x %d thread(s)), Linux %s; measured by "
      "walbench calibrate%s on %s",
      name, cpu_model, topo.online, topo.sockets, topo.cores / topo.sockets, topo.smt,
      kernel_release(), quick ? " --quick" : "", local_date());
  const ojson out = p.finish(description, why);
  log << absl::StrFormat("walbench calibrate: done in %.1f s\n", (now_ns() - t_start) / 1e9)
      << std::flush;
  return out;
}

int calibrate_command(const CalibrateOptions& opts, const std::string& output, std::ostream& out,
                      std::ostream& log) {
  // Check everything the user named before measuring for seconds.
  if (!output.empty()) {
    const std::filesystem::path o(output);
    std::error_code ec;
    if (std::filesystem::is_directory(o, ec))
      throw UsageError("calibrate: -o " + output + ": is a directory; expected a file name");
    const auto parent = o.parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      throw UsageError("calibrate: -o " + output + ": directory " + parent.string() +
                       " does not exist");
    if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0)
      throw UsageError("calibrate: -o " + output + ": directory " +
                       (parent.empty() ? std::string(".") : parent.string()) + " is not writable");
  }
  if (!opts.fsync_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(opts.fsync_dir, ec))
      throw UsageError("calibrate: --fsync-path " + opts.fsync_dir +
                       ": not a directory (give a directory, or none to skip the storage figures)");
  }
  const ojson preset = calibrate(opts, log);
  const std::string text = preset.dump(2) + "\n";
  if (output.empty()) {
    out << text << std::flush;
    return 0;
  }
  try {
    write_file_atomically(output, text);
  } catch (const std::exception& e) {
    throw UsageError(std::string("calibrate: -o ") + output + ": " + e.what());
  }
  log << "walbench calibrate: wrote " << output << " (use it as \"platform\": {\"kind\": \"sim\", "
      << "\"preset\": \"" << output << "\"})\n";
  return 0;
}

}  // namespace walbench
