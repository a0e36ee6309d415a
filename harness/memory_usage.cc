// Peak resident set size (memory_usage.h).
#include "harness/memory_usage.h"

#include <fstream>
#include <sstream>
#include <string>

namespace walbench {

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

std::optional<double> peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    double kib = 0;
    if (in >> kib) return kib / 1024.0;
  }
  return std::nullopt;
}

}  // namespace walbench
