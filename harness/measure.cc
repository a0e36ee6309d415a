// The measurement math; see measure.h.
#include "harness/measure.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace walbench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::optional<double> rsd_pct(const std::vector<double>& v) {
  if (v.size() < 2) return std::nullopt;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (mean == 0) return std::nullopt;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1)) / std::fabs(mean) * 100.0;
}

namespace {

// P(Bin(n, 1/2) <= k), exactly enough for the sample sizes of repetitions (n <= 1000).
double binomial_half_cdf(size_t n, size_t k) {
  // log C(n, i) - n log 2, summed in linear space from i = 0.
  double sum = 0;
  for (size_t i = 0; i <= k && i <= n; ++i)
    sum += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                    std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0));
  return std::min(sum, 1.0);
}

}  // namespace

std::optional<MedianInterval> median_ci(std::vector<double> v) {
  const size_t n = v.size();
  if (n < 3) return std::nullopt;
  std::sort(v.begin(), v.end());
  // Coverage of [x(k), x(n-k+1)] (1-based k) is 1 - 2 P(Bin(n, 1/2) <= k-1).
  auto coverage = [n](size_t k) { return 1.0 - 2.0 * binomial_half_cdf(n, k - 1); };
  size_t k = 1;
  while (k + 1 <= n / 2 && coverage(k + 1) >= 0.95) ++k;
  return MedianInterval{v[k - 1], v[n - k], coverage(k)};
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
  if (std::isnan(lat_ms)) return absl::StrFormat("progress: %.1f s, %.1f tps, lat n/a", t_s, tps);
  return absl::StrFormat("progress: %.1f s, %.1f tps, lat %.3f ms stddev %.3f", t_s, tps, lat_ms,
                         stddev_ms);
}

}  // namespace walbench
