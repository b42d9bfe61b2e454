#pragma once
/// Paired significance tests between systems scored on the same items, computed as
/// sacreBLEU 2.x computes them from per-item sufficient statistics (metrics.h):
///   paired bootstrap resampling (Koehn 2004): every resample draws the items with
///     replacement, the same draw for both systems; the p-value is the share of resamples
///     whose centred absolute difference exceeds the observed one, (c + 1) / (n + 1);
///   paired approximate randomisation (Riezler and Maxwell 2005): every trial swaps each
///     item's outputs between the two systems with probability 1/2; the p-value is the
///     share of trials whose absolute difference exceeds the observed one, (c + 1) / (n + 1).
/// A 95% confidence interval comes from bootstrap resamples as sacreBLEU estimates it: the
/// mean of the resampled scores and half the distance between the 2.5% and 97.5% order
/// statistics.
///
/// The random draws are ropelab's own (a seeded SplitMix64 stream, the same on every
/// platform), not NumPy's: p-values and intervals agree with sacreBLEU's up to sampling
/// noise, and exactly when given the same draws (tests/metrics/significance_test.cpp).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ropelab/metrics/metrics.h"

namespace ropelab {

/// resamples[r][k]: the item drawn k-th in resample r (each resample has as many draws as items).
using Resamples = std::vector<std::vector<uint32_t>>;
/// flips[t][i] != 0: trial t swaps item i between the systems.
using Flips = std::vector<std::vector<uint8_t>>;

Resamples draw_resamples(size_t items, size_t count, uint64_t seed);
Flips draw_flips(size_t items, size_t trials, uint64_t seed);

struct Confidence {
  double mean = 0;        // mean of the resampled scores
  double half_width = 0;  // the 95% interval is mean ± half_width
};

/// The metric's score on each resample of `stats` (items x metric.width(), flattened).
std::vector<double> resampled_scores(const CorpusMetric& metric, const std::vector<double>& stats,
                                     const Resamples& resamples);
Confidence estimate_confidence(std::vector<double> scores);
/// (number of statistics > observed + 1) / (number of statistics + 1).
double p_value_above(const std::vector<double>& statistics, double observed);

struct PairedResult {
  double score = 0;
  std::optional<Confidence> confidence;                       // the bootstrap mean and interval, where estimated
  double p_value = std::numeric_limits<double>::quiet_NaN();  // NaN for the baseline
};

/// The system's score, its bootstrap confidence and its p-value against the baseline.
PairedResult paired_bootstrap(const CorpusMetric& metric, const std::vector<double>& baseline,
                              const std::vector<double>& system, const Resamples& resamples);
/// The system's score and its p-value against the baseline; with `confidence` resamples
/// (not null), its bootstrap confidence too.
PairedResult paired_randomization(const CorpusMetric& metric, const std::vector<double>& baseline,
                                  const std::vector<double>& system, const Flips& flips,
                                  const Resamples* confidence = nullptr);

enum class PairedTest { bootstrap, randomization };

struct PairedTestOptions {
  PairedTest test = PairedTest::bootstrap;
  /// Resamples (bootstrap) or trials (randomisation); 0: sacreBLEU's 1000 or 10000.
  int64_t samples = 0;
  /// Bootstrap resamples for the randomisation test's confidence intervals (0: none).
  int64_t confidence_samples = 1000;
  uint64_t seed = 12345;
  int64_t resolved_samples() const { return samples > 0 ? samples : test == PairedTest::bootstrap ? 1000 : 10000; }
};

/// results[system][metric] for systems (statistics[system][metric]) against the first, the
/// baseline, whose result has a confidence interval and no p-value.
std::vector<std::vector<PairedResult>> run_paired_test(const std::vector<const CorpusMetric*>& metrics,
                                                       const std::vector<std::vector<std::vector<double>>>& statistics,
                                                       const PairedTestOptions& options);

/// sacreBLEU's signature fields of the test, "bs:1000|seed:12345" or "bs:1000|ar:10000|seed:12345",
/// inserted after "nrefs:N|" in a metric signature.
std::string with_test_fields(const std::string& signature, const PairedTestOptions& options);

}  // namespace ropelab
