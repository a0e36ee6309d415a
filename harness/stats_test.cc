// The exact Mann-Whitney U test behind compare's noise marks (pairing_noise.h): known exact
// p-values, ties, and a brute-force enumeration of every split as the reference.
#include "harness/pairing_noise.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace walbench {
namespace {

// Reference p: enumerate every choice of which pooled values are BASE, rank sums with mid-ranks
// computed directly (the mean of the 1-based positions each value occupies in sorted order).
double brute_force_p(const std::vector<double>& base, const std::vector<double>& next) {
  std::vector<double> pooled = base;
  pooled.insert(pooled.end(), next.begin(), next.end());
  std::vector<double> sorted = pooled;
  std::sort(sorted.begin(), sorted.end());
  auto mid_rank = [&](double v) {
    const auto lo = std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin();
    const auto hi = std::upper_bound(sorted.begin(), sorted.end(), v) - sorted.begin();
    return (static_cast<double>(lo + 1) + static_cast<double>(hi)) / 2;
  };
  double observed = 0;
  for (double v : base) observed += mid_rank(v);
  const size_t n = pooled.size(), k = base.size();
  std::vector<bool> pick(n, false);
  std::fill(pick.begin(), pick.begin() + static_cast<long>(k), true);
  double total = 0, lower = 0, upper = 0;
  do {
    double sum = 0;
    for (size_t i = 0; i < n; ++i)
      if (pick[i]) sum += mid_rank(pooled[i]);
    ++total;
    if (sum <= observed + 1e-9) ++lower;
    if (sum >= observed - 1e-9) ++upper;
  } while (std::prev_permutation(pick.begin(), pick.end()));
  return std::min(1.0, 2 * std::min(lower, upper) / total);
}

TEST_CASE("Mann-Whitney U: exact p-values of fully separated samples", "[compare][stats]") {
  CHECK(mann_whitney_p({1, 2, 3, 4}, {5, 6, 7, 8}) == Approx(2.0 / 70));
  CHECK(mann_whitney_p({5, 6, 7, 8}, {1, 2, 3, 4}) == Approx(2.0 / 70));  // two-sided
  CHECK(mann_whitney_p({1, 2, 3}, {4, 5, 6}) == Approx(0.1));
  CHECK(mann_whitney_p({10, 11, 12, 13, 14}, {1, 2, 3, 4, 5}) == Approx(2.0 / 252));
  CHECK(smallest_possible_p(4, 4) == Approx(2.0 / 70));
  CHECK(smallest_possible_p(3, 3) == Approx(0.1));
  CHECK(smallest_possible_p(3, 4) == Approx(2.0 / 35));
  CHECK(smallest_possible_p(1, 1) == 1.0);
}

TEST_CASE("Mann-Whitney U: overlapping samples and ties", "[compare][stats]") {
  // {1,2,4} vs {3,5,6}: W = 7; subsets of {1..6} of size 3 with sum <= 7: {1,2,3}, {1,2,4}.
  CHECK(mann_whitney_p({1, 2, 4}, {3, 5, 6}) == Approx(0.2));
  // Ties: {1,2,2} vs {2,3,4}; mid-ranks 1, 3, 3, 3, 5, 6; W = 7; three of the 20 splits reach
  // W <= 7 (1 plus two of the tied 3s): p = 2 * 3/20.
  CHECK(mann_whitney_p({1, 2, 2}, {2, 3, 4}) == Approx(0.3));
  // Everything tied: no evidence at all.
  CHECK(mann_whitney_p({5, 5, 5, 5}, {5, 5, 5, 5}) == Approx(1.0));
  // Separated despite ties inside each sample: still the most extreme split.
  CHECK(mann_whitney_p({1, 1, 2, 2}, {7, 7, 8, 8}) == Approx(2.0 / 70));
  // Identical samples: p = 1.
  CHECK(mann_whitney_p({1, 2, 3, 4}, {1, 2, 3, 4}) == Approx(1.0));
}

TEST_CASE("Mann-Whitney U agrees with a brute-force enumeration, ties included", "[compare][stats]") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n1 = 1 + rng() % 7, n2 = 1 + rng() % 7;
    const int levels = 2 + static_cast<int>(rng() % 6);  // few levels: many ties
    std::vector<double> a(n1), b(n2);
    for (double& v : a) v = static_cast<double>(rng() % levels);
    for (double& v : b) v = static_cast<double>(rng() % levels) + (trial % 3 == 0 ? 1.5 : 0.0);
    INFO("trial " << trial << ": n1=" << n1 << " n2=" << n2);
    CHECK(mann_whitney_p(a, b) == Approx(brute_force_p(a, b)).epsilon(1e-12));
  }
}

TEST_CASE("noise verdict: significant, within the noise, or n/a with the reason", "[compare][stats]") {
  const NoiseVerdict sep = noise_verdict({100, 101, 102, 103}, {110, 111, 112, 113});
  CHECK(sep.kind == NoiseVerdict::Kind::kExceedsNoise);
  CHECK(sep.p == Approx(2.0 / 70));

  const NoiseVerdict mixed = noise_verdict({100, 103, 105, 108}, {101, 104, 106, 107});
  CHECK(mixed.kind == NoiseVerdict::Kind::kWithinNoise);
  CHECK(mixed.p >= kNoiseAlpha);

  const NoiseVerdict three = noise_verdict({100, 101, 102}, {110, 111, 112});
  CHECK(three.kind == NoiseVerdict::Kind::kNoVerdict);
  CHECK(three.reason == "3 vs 3 repetitions: the smallest possible p is 0.100");

  const NoiseVerdict three_four = noise_verdict({100, 101, 102}, {110, 111, 112, 113});
  CHECK(three_four.kind == NoiseVerdict::Kind::kNoVerdict);
  CHECK(three_four.reason == "3 vs 4 repetitions: the smallest possible p is 0.057");

  // 3 vs 5 can reach 2/56 = 0.036.
  CHECK(noise_verdict({1, 2, 3}, {4, 5, 6, 7, 8}).kind == NoiseVerdict::Kind::kExceedsNoise);

  // A single repetition never gets a verdict, however many the other side has.
  std::vector<double> many(50);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 100 + static_cast<double>(i);
  const NoiseVerdict one = noise_verdict({1}, many);
  CHECK(one.kind == NoiseVerdict::Kind::kNoVerdict);
  CHECK(one.reason == "1 repetition in BASE");
  CHECK(noise_verdict(many, {1}).reason == "1 repetition in NEW");
  CHECK(noise_verdict({}, many).reason == "no repetition with a tps in BASE");
  CHECK(noise_verdict({1}, {2}).reason == "1 repetition in BASE and in NEW");
}

}  // namespace
}  // namespace walbench
