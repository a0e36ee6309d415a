// The measurement math of a result file (harness/RESULTS.md "How the numbers are made"): order
// statistics and the confidence interval of a median, latency summaries from Boost.Histogram,
// and the progress line. The window's own counting (counter snapshots' differences, progress
// points), which the cell drivers do too, is in core/cell/window.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/cell.h"
#include "core/cell/window.h"  // counter_delta, ProgressMeter, progress_step_s

namespace walbench {

double median(std::vector<double> v);  // 0 for an empty vector
// Relative sample standard deviation (n-1) in percent of the mean; none when n < 2 or mean == 0.
std::optional<double> rsd_pct(const std::vector<double>& v);

// A distribution-free confidence interval of the median (order statistics: [x(k), x(n-k+1)] of
// the sorted sample covers the population median with probability 1 - 2 P(Bin(n, 1/2) < k)).
// `level` is the coverage actually reached: the narrowest such interval with coverage >= 0.95;
// with fewer than 6 values no interval reaches 95%, and [min, max] is given with its own
// coverage (n = 3: 0.75, 4: 0.875, 5: 0.9375). None with fewer than 3 values.
struct MedianInterval {
  double lo = 0, hi = 0, level = 0;
};
std::optional<MedianInterval> median_ci(std::vector<double> v);

// Quantile q in [0,1] of a latency histogram, in the histogram's unit (ns). Finds the bin where
// the cumulative count crosses q*N and interpolates geometrically inside it (the bins are
// log-spaced). Underflow counts as the lowest edge, overflow as the highest. 0 when empty.
double histogram_quantile(const LatencyHistogram& h, double q);

struct LatencySummaryMs {
  double mean = 0, stddev = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0;
  uint64_t count = 0;
  nlohmann::json to_json() const;
};
// Merges the clients' window histograms and sums: mean and population stddev (as pgbench) from
// the sums, percentiles from the merged histogram.
LatencySummaryMs summarize_latency(const std::vector<ClientCounters>& counters);

// "progress: 5.0 s, 103575.2 tps, lat 0.309 ms stddev 0.071" ("lat n/a" without transactions)
std::string format_progress_line(double t_s, double tps, double lat_ms, double stddev_ms);

}  // namespace walbench
