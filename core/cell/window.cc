// Window counting and progress points; see window.h.
#include "core/cell/window.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace walbench {

bool is_gauge_key(const std::string& key) {
  // Levels and names in model_stats() (core/cell/wal_cell.h, strategies/clog_choice.h) and the
  // simulator's counters: the CLOG's buffer count and pages, the largest CLOG group, the
  // number of WAL streams and CLOGs (ideal: one per client), a stream's ring size, the CLOG
  // strategy's name.
  return key == "buffers" || key == "pages" || key == "largest_group" || key == "streams" ||
         key == "strategy" || key == "ring_pages" || key == "clogs";
}

nlohmann::json counter_delta(const nlohmann::json& end, const nlohmann::json& start) {
  if (end.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : end.items()) {
      const nlohmann::json& before =
          start.is_object() && start.contains(key) ? start[key] : nlohmann::json(nullptr);
      if (is_gauge_key(key) || value.is_string() || value.is_boolean() || value.is_null())
        out[key] = value;
      else
        out[key] = counter_delta(value, before);
    }
    return out;
  }
  if (end.is_number_unsigned() && (start.is_null() || start.is_number_unsigned())) {
    const uint64_t b = start.is_null() ? 0 : start.get<uint64_t>();
    const uint64_t e = end.get<uint64_t>();
    if (e >= b) return e - b;
  }
  if (end.is_number())
    return end.get<double>() - (start.is_number() ? start.get<double>() : 0.0);
  return end;
}

ProgressPoint ProgressMeter::point(const std::vector<ClientCounters>& counters, double interval_s) {
  constexpr auto relaxed = std::memory_order_relaxed;
  uint64_t txns = 0, n = 0;
  double sum = 0, sumsq = 0;
  for (size_t i = 0; i < counters.size() && i < last_.size(); ++i) {
    const ClientCounters& c = counters[i];
    const uint64_t t = c.txns.load(relaxed);
    txns += t - last_txns_[i];
    last_txns_[i] = t;
    const LatencySums now{c.all_lat_count.load(relaxed), c.all_lat_sum_ns.load(relaxed),
                          c.all_lat_sumsq_ns.load(relaxed)};
    n += now.count - last_[i].count;
    sum += now.sum_ns - last_[i].sum_ns;
    sumsq += now.sumsq_ns - last_[i].sumsq_ns;
    last_[i] = now;
  }
  ProgressPoint p;
  p.tps = interval_s > 0 ? static_cast<double>(txns) / interval_s : 0.0;
  if (n == 0) {
    p.lat_ms = p.stddev_ms = std::numeric_limits<double>::quiet_NaN();
  } else {
    const double mean = sum / static_cast<double>(n);
    p.lat_ms = mean / 1e6;
    p.stddev_ms = std::sqrt(std::max(0.0, sumsq / static_cast<double>(n) - mean * mean)) / 1e6;
  }
  return p;
}

double progress_step_s(const RunSpec& rs) {
  if (rs.progress_interval_s > 0) return rs.progress_interval_s;
  return std::max(rs.warmup_s + rs.duration_s, 1e-6) / 20;
}

}  // namespace walbench
