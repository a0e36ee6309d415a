// `walbench calibrate --hot-path` (calibrate_hot_path.h).
#include "harness/calibrate_hot_path.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "harness/calibrate_cpu.h"
#include "harness/calibrate_probe.h"
#include "harness/config.h"
#include "harness/report.h"

namespace walbench {

using calibration::copy_one_core;
using calibration::crc_rate_model;
using calibration::show;
using calibration::Spread;
using calibration::spread_of;

int calibrate_hot_path_command(const std::string& result_path, bool quick, std::ostream& out,
                               std::ostream& log) {
  nlohmann::json doc;
  try {
    doc = load_result_file(result_path);
  } catch (const std::exception& e) {
    throw UsageError(std::string("calibrate --hot-path: ") + e.what());
  }
  const Spread copy = spread_of(copy_one_core(quick ? 8 : 40));
  const Spread crc = spread_of(crc_rate_model(quick ? 10 : 40));
  log << "  memcpy, one core (8 MiB blocks)  " << show(copy, "B/ns") << "\n"
      << "  CRC-32C, ISA-L (the model's)     " << show(crc, "B/ns") << "\n";
  out << absl::StrFormat("%s: one core's limit = 1 / (B / %.2f B/ns copy + B / %.1f B/ns CRC), "
                         "B = WAL bytes per transaction\n",
                         result_path, copy.median, crc.median);
  out << absl::StrFormat("%-28s %7s %9s %13s %10s %13s %7s %9s\n", "cell", "clients", "B/txn",
                         "tps", "MB/s", "limit tps", "% limit", "peak RSS");
  size_t shown = 0;
  for (const auto& cell : doc.value("cells", nlohmann::json::array())) {
    const nlohmann::json& platform = cell.value("platform", nlohmann::json::object());
    const nlohmann::json& summary = cell.value("summary", nlohmann::json::object());
    // The limit is one core's: it bounds one client (several clients share the WAL's locks).
    if (platform.value("kind", std::string()) != "threads" || !cell.value("ok", false) ||
        cell.value("clients", 0) != 1)
      continue;
    const double tps = summary.value("tps_median", 0.0);
    const double bps = summary.value("bytes_per_s_median", 0.0);
    if (tps <= 0 || bps <= 0) continue;
    const double b = bps / tps;
    const double limit = 1e9 / (b / copy.median + b / crc.median);
    double rss = 0;
    for (const auto& r : cell.value("repetitions", nlohmann::json::array()))
      if (r.contains("peak_rss_mib") && r["peak_rss_mib"].is_number())
        rss = std::max(rss, r["peak_rss_mib"].get<double>());
    const std::string name = absl::StrFormat(
        "%s %s", cell.value("label", std::string("?")),
        cell["workload"].value("record_size_label", std::string("?")));
    out << absl::StrFormat("%-28s %7d %9.0f %13.0f %10.0f %13.0f %6.1f%% %9s\n", name,
                           cell.value("clients", 0), b, tps, bps / 1e6, limit,
                           100.0 * tps / limit,
                           rss > 0 ? absl::StrFormat("%.0f MiB", rss) : std::string("n/a"));
    ++shown;
  }
  if (shown == 0) out << "(no finished 1-client real-thread cell with a throughput in the file)\n";
  return 0;
}

}  // namespace walbench
