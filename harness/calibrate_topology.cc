// Topology from sysfs for `walbench calibrate` (calibrate_topology.h).
#include "harness/calibrate_topology.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"

namespace walbench::calibration {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

long read_long(const std::string& path, long fallback) {
  const std::string s = read_first_line(path);
  if (s.empty()) return fallback;
  try {
    return std::stol(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = s.find(',', i);
    if (end == std::string::npos) end = s.size();
    const std::string part = s.substr(i, end - i);
    const size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!part.empty()) out.push_back(std::stoi(part));
      } else {
        const int a = std::stoi(part.substr(0, dash)), b = std::stoi(part.substr(dash + 1));
        for (int c = a; c <= b; ++c) out.push_back(c);
      }
    } catch (const std::exception&) {
    }
    i = end + 1;
  }
  return out;
}

uint64_t parse_cache_size(const std::string& s) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + static_cast<uint64_t>(s[i++] - '0');
  if (i == 0) return 0;
  const std::string unit = s.substr(i);
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return 0;
}

Topology read_topology(const std::string& cpu_dir, bool only_this_process) {
  const std::string base = cpu_dir.empty() || cpu_dir.back() == '/' ? cpu_dir : cpu_dir + "/";
  std::vector<int> online = parse_cpu_list(read_first_line(base + "online"));
  if (online.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(1L, n); ++c) online.push_back(static_cast<int>(c));
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool have_mask = only_this_process && sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  Topology t;
  t.online = online.size();
  std::vector<CpuInfo> all;
  for (int c : online) {
    const std::string d = base + "cpu" + std::to_string(c) + "/";
    CpuInfo ci;
    ci.cpu = c;
    ci.package = static_cast<int>(read_long(d + "topology/physical_package_id", 0));
    ci.core = static_cast<int>(read_long(d + "topology/core_id", c));
    for (int idx = 0; idx < 16; ++idx) {
      const std::string cache = d + "cache/index" + std::to_string(idx) + "/";
      const long level = read_long(cache + "level", -1);
      if (level < 0) break;
      if (all.empty() && (level == 2 || level == 3) &&
          read_first_line(cache + "type") != "Instruction") {
        (level == 2 ? t.l2_bytes : t.l3_bytes) = parse_cache_size(read_first_line(cache + "size"));
      }
      if (level == 3) {
        const std::vector<int> shared = parse_cpu_list(read_first_line(cache + "shared_cpu_list"));
        if (!shared.empty()) ci.l3 = *std::min_element(shared.begin(), shared.end());
      }
    }
    all.push_back(ci);
    if (!have_mask || CPU_ISSET(c, &allowed)) t.cpus.push_back(ci);
  }
  std::set<int> packages;
  std::set<std::pair<int, int>> cores;
  std::map<int, std::set<std::pair<int, int>>> l3_cores;  // L3 group -> physical cores
  bool l3_known = true;
  for (const CpuInfo& c : all) {
    packages.insert(c.package);
    cores.insert({c.package, c.core});
    if (c.l3 < 0) l3_known = false;
    l3_cores[c.l3].insert({c.package, c.core});
  }
  t.sockets = static_cast<uint32_t>(std::max<size_t>(1, packages.size()));
  t.cores = static_cast<uint32_t>(std::max<size_t>(1, cores.size()));
  t.smt = static_cast<uint32_t>(std::clamp<size_t>(
      (all.size() + cores.size() / 2) / std::max<size_t>(1, cores.size()), 1, 8));
  if (t.cores % t.sockets != 0) {
    const uint32_t fitted = t.cores / t.sockets * t.sockets;
    t.note = absl::StrFormat("%d cores do not divide evenly into %d sockets: cores = %d", t.cores,
                             t.sockets, std::max(fitted, t.sockets));
    t.cores = std::max(fitted, t.sockets);
  }
  // Clusters: more L3 groups than sockets, all of one size that divides a socket's cores.
  if (l3_known && l3_cores.size() > t.sockets) {
    const size_t g = l3_cores.begin()->second.size();
    bool even = true;
    for (const auto& [l3, members] : l3_cores) even = even && members.size() == g;
    if (even && g > 0 && (t.cores / t.sockets) % g == 0)
      t.cores_per_cluster = static_cast<uint32_t>(g);
  }
  return t;
}

}  // namespace walbench::calibration
