// From measured figures to a preset file, for `walbench calibrate` (harness/calibrate.h).
//
// THE SIMULATOR'S ACCOUNTING. Where the simulator charges several parameters for one real event,
// a measured figure is split the way the simulator adds it up, so that simulating the measured
// event gives the measured time back (NB: must match Simulation::sem_post, op_sleep,
// op_storage_write and op_storage_sync in core/platform/sim_os.cc and sim_storage.cc;
// harness/calibrate_test.cc simulates each event with the converted values and checks this):
//   sem_post to a blocked waiter on another core, post -> the waiter runs
//       = line transfer + rmw_extra_ns (the post's RMW of the semaphore's line)
//         + semaphore_wake_ns + context_switch_ns (the waiter's dispatch)
//   the sem_post call = line transfer + rmw_extra_ns + semaphore_post_ns
//   nanosleep(d) = d + sleep_slack_ns + context_switch_ns
//   fdatasync after pwrites of n bytes
//       = syscall_ns + n / storage_write_bytes_per_ns + fsync_ns + context_switch_ns
//   a pwrite of n bytes into the page cache = syscall_ns + n / page_cache_write_bytes_per_ns
//   writers on every CPU at once move bytes at page_cache_bytes_per_ns together at most (the
//       measured aggregate rate is that parameter)
// Each part is whole ns, negative results become 0.
//
// THE FILE: every SimConfig key in SimConfig's declaration order (keys added later follow, from
// SimConfig::to_json()), plus "description" first and "sources" (per key: how it was measured or
// why it is a default) last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "harness/calibrate_probe.h"

namespace walbench::calibration {

// `line_rmw_ns` = the line transfer + rmw_extra_ns the simulator charges the post's RMW.
// The idle-polling window (SimConfig::idle_poll_ns) from wake-up medians measured after
// increasing idle times `idle_ns` (ascending, same length as `wake_medians`), the median after a
// long idle (`halted_median`, semaphore_wake_ns's measurement) and what the simulator charges a
// wake-up inside the window (`polled_charge_ns`: the post's line transfer + rmw_extra_ns +
// context_switch_ns). A median counts as polled when it is nearer, as a ratio, to that charge
// than to the halted median (under their geometric mean) and under half the halted median: each
// idle time goes to whichever of the sim's two prices is off by the smaller factor, so a
// wake-up that merely grows with idle time (22 us after 100 us, 68 us after 2 ms, against a 2.5
// us polled charge) stays outside. The window is the longest idle time up to which every median
// counted as polled; 0 when the shortest one did not. A lower bound: the window ends somewhere
// before the next idle time.
uint64_t idle_poll_param(const std::vector<double>& idle_ns,
                         const std::vector<double>& wake_medians, double halted_median,
                         double polled_charge_ns);
// The bound idle_poll_param holds each median against: a wake-up median under it counts as
// polled (the geometric mean of the two prices, at most half the halted median).
double polled_wake_bound(double halted_median, double polled_charge_ns);

uint64_t semaphore_wake_param(double wake_to_run_ns, uint64_t line_rmw_ns,
                              uint64_t context_switch_ns);
uint64_t semaphore_post_param(double post_call_ns, uint64_t line_rmw_ns);
uint64_t sleep_slack_param(double overshoot_ns, uint64_t context_switch_ns);

struct StorageParams {
  uint64_t syscall_ns = 0;
  double storage_write_bytes_per_ns = 0;  // 0: instant (memory-backed)
  uint64_t fsync_ns = 0;
  bool instant = false;
};
// From: the duration of one small pwrite (`syscall`), an fdatasync after `big_bytes` of pwrites
// (`big_sync`) and one after `small_bytes` (`small_sync`), all ns. The difference of the two
// syncs is the device's time for big_bytes - small_bytes; when it is under a tenth of copying
// big_bytes at copy_bytes_per_ns the directory is memory-backed: bandwidth 0 (the sim's "no
// device time"). Bandwidths keep 3 significant digits.
StorageParams storage_params(double syscall, double big_sync, size_t big_bytes, double small_sync,
                             size_t small_bytes, double copy_bytes_per_ns,
                             uint64_t context_switch_ns);

// One writer's page-cache rate (page_cache_write_bytes_per_ns) from its measured rate over
// pwrites of `chunk` bytes each (`bytes_per_ns`, system calls included), as the sim charges
// each syscall_ns + its bytes / the rate (Simulation::op_storage_write). 3 significant digits;
// 0 (the copy rate stands in) when the calls took no longer than their syscall_ns.
double page_cache_write_param(double bytes_per_ns, size_t chunk, uint64_t syscall_ns);

// The preset under construction: values and sources per key, and the log every figure is
// printed to as it comes.
class PresetBuilder {
 public:
  explicit PresetBuilder(std::ostream& log) : log_(log) {}
  void set(const std::string& key, nlohmann::json value, std::string source);
  const nlohmann::json& value(const std::string& key) const { return values_.at(key); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  // Prints one measured figure: "  <what>  <median> <unit> (IQR q1-q3, n=N)".
  void figure(const std::string& what, const Spread& s, const std::string& unit) const;
  void note(const std::string& text) const;
  // Every key not set yet gets SimConfig's default, with `why_default[key]` (or "SimConfig
  // default (not measured)") as its source. Then the file object; throws std::runtime_error if
  // the values are not a valid SimConfig.
  nlohmann::ordered_json finish(const std::string& description,
                                const std::map<std::string, std::string>& why_default);

 private:
  std::ostream& log_;
  std::map<std::string, nlohmann::json> values_;
  std::map<std::string, std::string> sources_;
};

// For the description: `uname -r` (today's date: local_date() in harness/provenance.h).
std::string kernel_release();

}  // namespace walbench::calibration
