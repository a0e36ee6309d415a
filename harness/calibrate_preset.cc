// Preset assembly and the simulator's accounting for `walbench calibrate` (calibrate_preset.h).
#include "harness/calibrate_preset.h"
#include "harness/provenance.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/platform/sim.h"

namespace walbench::calibration {
namespace {

// Key order of the file: SimConfig's declaration order (sim.h); keys added to SimConfig later
// still come out, after these, from SimConfig::to_json().
const std::vector<std::string> kKeyOrder = {"cores",
                                            "sockets",
                                            "cores_per_cluster",
                                            "smt",
                                            "placement",
                                            "line_hit_ns",
                                            "same_cluster_transfer_ns",
                                            "same_socket_transfer_ns",
                                            "cross_socket_transfer_ns",
                                            "memory_ns",
                                            "rmw_extra_ns",
                                            "fence_ns",
                                            "snoop_linger",
                                            "request_at_issue",
                                            "snoop_window_ns",
                                            "pause_ns",
                                            "spin_park_after",
                                            "spin_park_max_ns",
                                            "context_switch_ns",
                                            "time_slice_ns",
                                            "semaphore_wake_ns",
                                            "idle_poll_ns",
                                            "semaphore_post_ns",
                                            "sleep_slack_ns",
                                            "wake_jitter",
                                            "copy_bytes_per_ns",
                                            "memory_bandwidth_bytes_per_ns",
                                            "crc_bytes_per_ns",
                                            "smt_work_factor",
                                            "storage_write_bytes_per_ns",
                                            "fsync_ns",
                                            "syscall_ns",
                                            "stack_kib"};

}  // namespace

double polled_wake_bound(double halted_median, double polled_charge_ns) {
  return std::min(std::sqrt(std::max(polled_charge_ns, 0.0) * halted_median), halted_median / 2);
}

uint64_t idle_poll_param(const std::vector<double>& idle_ns,
                         const std::vector<double>& wake_medians, double halted_median,
                         double polled_charge_ns) {
  if (idle_ns.size() != wake_medians.size())
    throw std::invalid_argument("idle_poll_param: one wake-up median per idle time expected");
  const double polled_below = polled_wake_bound(halted_median, polled_charge_ns);
  uint64_t window = 0;
  for (size_t i = 0; i < idle_ns.size(); ++i) {
    if (!(wake_medians[i] < polled_below)) break;
    window = whole_ns(idle_ns[i], 0);
  }
  return window;
}

uint64_t semaphore_wake_param(double wake_to_run_ns, uint64_t line_rmw_ns,
                              uint64_t context_switch_ns) {
  return whole_ns(wake_to_run_ns - static_cast<double>(line_rmw_ns + context_switch_ns), 0);
}

uint64_t semaphore_post_param(double post_call_ns, uint64_t line_rmw_ns) {
  return whole_ns(post_call_ns - static_cast<double>(line_rmw_ns), 0);
}

uint64_t sleep_slack_param(double overshoot_ns, uint64_t context_switch_ns) {
  return whole_ns(overshoot_ns - static_cast<double>(context_switch_ns), 0);
}

StorageParams storage_params(double syscall, double big_sync, size_t big_bytes, double small_sync,
                             size_t small_bytes, double copy_bytes_per_ns,
                             uint64_t context_switch_ns) {
  StorageParams p;
  p.syscall_ns = whole_ns(syscall, 1);
  // What a sync costs besides moving its bytes: the simulated sync adds syscall_ns before and
  // context_switch_ns (the dispatch after the wake-up) to the device's transfer + fsync_ns.
  const double overhead = static_cast<double>(p.syscall_ns + context_switch_ns);
  const double device_ns = big_sync - small_sync;  // moves big_bytes - small_bytes more
  const double copy_ns = static_cast<double>(big_bytes) / copy_bytes_per_ns;
  if (big_bytes > small_bytes && device_ns > copy_ns / 10) {
    p.storage_write_bytes_per_ns = round3(static_cast<double>(big_bytes - small_bytes) / device_ns);
  } else {
    p.instant = true;
  }
  const double small_transfer =
      p.instant ? 0.0 : static_cast<double>(small_bytes) / p.storage_write_bytes_per_ns;
  p.fsync_ns = whole_ns(small_sync - overhead - small_transfer, 0);
  return p;
}

double page_cache_write_param(double bytes_per_ns, size_t chunk, uint64_t syscall_ns) {
  if (bytes_per_ns <= 0) return 0.0;
  const double copying = static_cast<double>(chunk) / bytes_per_ns - static_cast<double>(syscall_ns);
  return copying > 0 ? round3(static_cast<double>(chunk) / copying) : 0.0;
}

void PresetBuilder::set(const std::string& key, nlohmann::json value, std::string source) {
  values_[key] = std::move(value);
  sources_[key] = std::move(source);
}

void PresetBuilder::figure(const std::string& what, const Spread& s,
                           const std::string& unit) const {
  log_ << absl::StrFormat("  %-46s %s\n", what, show(s, unit)) << std::flush;
}

void PresetBuilder::note(const std::string& text) const {
  log_ << "  " << text << "\n" << std::flush;
}

nlohmann::ordered_json PresetBuilder::finish(
    const std::string& description, const std::map<std::string, std::string>& why_default) {
  const nlohmann::json defaults = SimConfig{}.to_json();
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (has(it.key())) continue;
    const auto w = why_default.find(it.key());
    set(it.key(), it.value(),
        w != why_default.end() ? w->second : "SimConfig default (not measured)");
  }
  std::vector<std::string> order = kKeyOrder;
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (std::find(order.begin(), order.end(), it.key()) == order.end()) order.push_back(it.key());
  nlohmann::ordered_json out;
  out["description"] = description;
  nlohmann::json machine = nlohmann::json::object();
  nlohmann::ordered_json sources;
  for (const std::string& k : order) {
    if (!defaults.contains(k)) continue;  // a key this build's SimConfig no longer has
    out[k] = values_.at(k);
    machine[k] = values_.at(k);
    sources[k] = sources_.at(k);
  }
  out["sources"] = sources;
  // What we write must load: the same validation as a config's platform block.
  try {
    (void)SimConfig::from_json(machine, "calibrate");
  } catch (const std::exception& e) {
    throw std::runtime_error(
        std::string("calibrate: the measured machine is not a valid SimConfig: ") + e.what());
  }
  return out;
}

std::string kernel_release() {
  struct utsname u {};
  return uname(&u) == 0 ? std::string(u.release) : "unknown";
}


}  // namespace walbench::calibration
