// The machine's shape for `walbench calibrate` (harness/calibrate.h): cores, sockets, SMT and
// L3 clusters read from Linux's CPU topology in sysfs, fitted to SimConfig's rules, and the CPUs
// this process may use (the measurements pick their partner CPUs from those).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace walbench::calibration {

struct CpuInfo {
  int cpu = 0;
  int package = 0;  // physical_package_id
  int core = 0;     // core_id within the package
  int l3 = -1;      // first CPU sharing this CPU's L3; -1 unknown
};

struct Topology {
  std::vector<CpuInfo> cpus;  // online, and (when asked) in this process's affinity mask
  size_t online = 0;
  uint32_t sockets = 1, cores = 1, smt = 1, cores_per_cluster = 0;
  uint64_t l2_bytes = 0, l3_bytes = 0;  // the first online CPU's cache/index*/size; 0 unknown
  std::string note;  // adjustments made to fit SimConfig's rules
};

// "0-3,5,7-8" -> {0,1,2,3,5,7,8}; malformed parts are skipped.
std::vector<int> parse_cpu_list(const std::string& s);

// "2048K" / "32M" / "512" (sysfs cache/index*/size) -> bytes; 0 when malformed.
uint64_t parse_cache_size(const std::string& s);

// Reads `cpu_dir` (Linux: /sys/devices/system/cpu/): the "online" list, then per CPU
// topology/physical_package_id, topology/core_id and cache/index*/{level,type,shared_cpu_list},
// and the first CPU's L2 and L3 sizes (cache/index*/size of its unified or data level-2 cache
// and its level-3 cache).
// sockets = distinct packages, cores = distinct (package, core_id) pairs (cut to a multiple of
// sockets, with a note, when they do not divide evenly), smt = CPUs per core (rounded),
// cores_per_cluster = the L3 group size when there are more L3 groups than sockets, all of one
// size dividing a socket's cores (else 0). `cpus` lists the online CPUs, restricted to this
// process's affinity mask when only_this_process.
Topology read_topology(const std::string& cpu_dir = "/sys/devices/system/cpu/",
                       bool only_this_process = true);

}  // namespace walbench::calibration
