#pragma once
/// A ratio of sums and its bootstrap interval over items grouped in clusters: the items are
/// an evaluation's units (documents, or fixed blocks of a long one), the clusters the
/// seeds of a model. Each resample draws clusters with replacement and, within each drawn
/// cluster, its items with replacement (the two-stage bootstrap of Davison and Hinkley
/// 1997, 2.4), so that an interval speaks of both the documents and the seeds. One cluster
/// is the plain bootstrap over items.
///   estimate   sum(numerator) / sum(denominator) over every item of every cluster
///   low, high  the 2.5% and 97.5% percentiles of the resampled estimates, interpolated
///              linearly between order statistics (NumPy's default percentile)
///   p_value    two-sided, for "the ratio is 0", the test the percentile interval inverts:
///              twice the share of resampled estimates on the far side of 0 from the
///              estimate, 2 (c + 1) / (n + 1) at most 1, so that p < 0.05 where the 95%
///              interval excludes 0 (up to the resampling)
/// The draws come from a seeded SplitMix64 stream (util/random.h), the same on every
/// platform; tests/golden/bootstrap_golden.py computes the same intervals independently.

#include <cstdint>
#include <limits>
#include <vector>

namespace ropelab {

/// One item's share of the ratio: a window's summed loss difference and its tokens, say.
struct RatioItem {
  double numerator = 0, denominator = 0;
};

/// clusters[c][i]: item i of cluster c.
using RatioClusters = std::vector<std::vector<RatioItem>>;

struct BootstrapInterval {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double estimate = kNaN, low = kNaN, high = kNaN, p_value = kNaN;
  double denominator = 0;  // summed over every item (the tokens a gain is measured on)
  int64_t resamples = 0;   // those whose denominator was not 0, which alone are kept
  /// Whether the interval excludes 0 (the p-value is then below 0.05 too, up to resampling).
  bool excludes_zero() const { return low > 0 || high < 0; }
};

/// Draw r, in order, for cluster slot k: the cluster drawn is below(C); then, for each of
/// its items in turn, the item drawn is below(its size). Every draw is one SplitMix64
/// number. `resamples` > 0; throws std::invalid_argument on no items at all.
BootstrapInterval cluster_bootstrap(const RatioClusters& clusters, int64_t resamples, uint64_t seed);

/// The percentile `q` in [0, 100] of `values` (sorted here), linear between order statistics.
double percentile(std::vector<double> values, double q);

/// Holm's step-down adjustment (Holm 1979) of a family of p-values, in their order: the
/// i-th smallest becomes max over j <= i of min(1, (m - j + 1) p_(j)). NaN stays NaN and
/// is not counted in m.
std::vector<double> holm_adjust(const std::vector<double>& p_values);

}  // namespace ropelab
