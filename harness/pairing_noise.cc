// Exact Mann-Whitney U; the method is described in pairing_noise.h.
#include "harness/pairing_noise.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_format.h"

namespace walbench {

double smallest_possible_p(size_t n1, size_t n2) {
  // C(n1 + n2, n1) as a double: exact while it fits a 53-bit mantissa, and far below 1e-300
  // long before it could overflow for repetition counts anyone runs.
  double combinations = 1;
  const size_t k = std::min(n1, n2), n = n1 + n2;
  for (size_t i = 1; i <= k; ++i) combinations = combinations * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::min(1.0, 2.0 / combinations);
}

double mann_whitney_p(const std::vector<double>& base, const std::vector<double>& next) {
  if (base.empty() || next.empty()) throw std::invalid_argument("mann_whitney_p: an empty sample");
  const size_t n1 = base.size(), n = base.size() + next.size();

  // Pooled values with their side, sorted; doubled mid-ranks: a run of ties over the 1-based
  // ranks [lo, hi] gets lo + hi each (twice the mean rank), an integer.
  std::vector<std::pair<double, bool>> pooled;  // (value, is_base)
  pooled.reserve(n);
  for (double v : base) pooled.emplace_back(v, true);
  for (double v : next) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end());
  std::vector<size_t> rank2(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && pooled[j + 1].first == pooled[i].first) ++j;
    for (size_t t = i; t <= j; ++t) rank2[t] = (i + 1) + (j + 1);
    i = j + 1;
  }
  size_t observed = 0;  // doubled rank sum of BASE
  for (size_t i = 0; i < n; ++i)
    if (pooled[i].second) observed += rank2[i];

  // ways[k][s]: number of k-element subsets of the values seen so far with doubled rank sum s.
  const size_t max_sum = std::accumulate(rank2.begin(), rank2.end(), size_t{0});
  std::vector<std::vector<double>> ways(n1 + 1, std::vector<double>(max_sum + 1, 0.0));
  ways[0][0] = 1;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = std::min(i + 1, n1); k >= 1; --k) {
      std::vector<double>& to = ways[k];
      const std::vector<double>& from = ways[k - 1];
      for (size_t s = max_sum; s >= rank2[i]; --s) to[s] += from[s - rank2[i]];
    }
  }
  const std::vector<double>& dist = ways[n1];
  double total = 0, lower = 0, upper = 0;
  for (size_t s = 0; s <= max_sum; ++s) {
    total += dist[s];
    if (s <= observed) lower += dist[s];
    if (s >= observed) upper += dist[s];
  }
  return std::min(1.0, 2.0 * std::min(lower, upper) / total);
}

NoiseVerdict noise_verdict(const std::vector<double>& base_tps, const std::vector<double>& next_tps,
                           double alpha) {
  NoiseVerdict v;
  auto few = [](size_t n, const char* side) {
    return n == 0 ? absl::StrFormat("no repetition with a tps in %s", side)
                  : absl::StrFormat("1 repetition in %s", side);
  };
  if (base_tps.size() < 2 && next_tps.size() < 2 && base_tps.size() == next_tps.size()) {
    v.reason = few(base_tps.size(), "BASE and in NEW");
    return v;
  }
  if (base_tps.size() < 2) {
    v.reason = few(base_tps.size(), "BASE");
    return v;
  }
  if (next_tps.size() < 2) {
    v.reason = few(next_tps.size(), "NEW");
    return v;
  }
  const double floor_p = smallest_possible_p(base_tps.size(), next_tps.size());
  if (floor_p >= alpha) {
    v.reason = absl::StrFormat("%d vs %d repetitions: the smallest possible p is %.3f", base_tps.size(),
                               next_tps.size(), floor_p);
    return v;
  }
  v.p = mann_whitney_p(base_tps, next_tps);
  v.kind = v.p < alpha ? NoiseVerdict::Kind::kExceedsNoise : NoiseVerdict::Kind::kWithinNoise;
  return v;
}

}  // namespace walbench
