// The noise verdict of `walbench compare BASE NEW`: does a cell's change exceed the spread of its
// repetitions?
//
// Test: exact two-sided Mann-Whitney U (Wilcoxon rank-sum) over the repetitions' tps of the two
// cells, alpha 0.05, as Google Benchmark's compare.py does (it uses scipy's mannwhitneyu). Written
// here because no Debian C++ package we build with offers a rank test (Boost.Math has the
// distributions but no rank-sum test; Abseil and the rest have none).
//
// Exactness. The p-value comes from the permutation distribution of the rank sum: every way of
// choosing which n1 of the N = n1 + n2 pooled values belong to BASE is equally likely under "no
// change". Tied values get mid-ranks (the mean of the ranks they span), so the distribution is
// the exact conditional one given the ties; doubled mid-ranks are integers, so the distribution
// is counted by a subset-sum table (counts per rank sum), not by enumeration. Two-sided:
// p = min(1, 2 * min(P(W <= w), P(W >= w))), W the rank sum of BASE, w its observed value (R's
// wilcox.test(exact = TRUE) for data without ties).
//
// No verdict. With n1 vs n2 repetitions and no ties the smallest p any data can give is
// 2 / C(n1 + n2, n1) (the samples fully separated): 0.1 for 3 vs 3, 2/70 = 0.029 for 4 vs 4,
// 2/35 = 0.057 for 3 vs 4. When that is not below alpha, or a side has a single repetition, the
// test cannot say anything and `compare` prints "n/a" with the reason instead of a p-value.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace walbench {

inline constexpr double kNoiseAlpha = 0.05;

// Exact two-sided p-value of the Mann-Whitney U test (mid-ranks for ties). Both samples must be
// non-empty. 1.0 when every value is tied.
double mann_whitney_p(const std::vector<double>& base, const std::vector<double>& next);

// The smallest two-sided p-value samples of these sizes can reach: 2 / C(n1 + n2, n1), capped
// at 1.
double smallest_possible_p(size_t n1, size_t n2);

struct NoiseVerdict {
  enum class Kind {
    kExceedsNoise,  // p < alpha
    kWithinNoise,   // p >= alpha
    kNoVerdict,     // too few repetitions for any p below alpha; see reason
  };
  Kind kind = Kind::kNoVerdict;
  double p = -1;       // the exact p-value; -1 for kNoVerdict
  std::string reason;  // kNoVerdict only: "1 repetition in BASE", "3 vs 3 repetitions: the
                       // smallest possible p is 0.100"
};

// The verdict for one pair of cells, from the tps of their repetitions (the ones that have a
// tps). A side with fewer than two repetitions never gets a verdict.
NoiseVerdict noise_verdict(const std::vector<double>& base_tps, const std::vector<double>& next_tps,
                           double alpha = kNoiseAlpha);

}  // namespace walbench
