#pragma once
/// The tests behind an ablation's claims (significance.csv, and the marks and test tables
/// of results.md), for every pair the experiment compares: each variant against the
/// baseline (`baseline:`, else the first variant) and each pair of `pairs:`.
///   two_stage_bootstrap   language models and retrieval: the difference variant - baseline
///                         of a column, paired by seed and evaluation unit, with its 95%
///                         interval and p-value from the bootstrap that resamples seeds,
///                         then units within them (metrics/cluster_bootstrap.h): nats per token
///                         for perplexity (the log of the perplexities' ratio) and context
///                         gain, accuracy for retrieval (units: its depth cells); and each
///                         variant's context gain against 0 the same way
///   paired_bootstrap      translation: sacreBLEU's paired bootstrap of BLEU, chrF and TER
///                         over test sentences, per seed and over the seeds pooled
/// Holm's step-down adjustment (Holm 1979) runs over the table's family: every
/// two-stage test and every pooled paired test (per-seed rows are descriptive and
/// carry no adjusted p-value).

#include <string>
#include <utility>
#include <vector>

#include "ropelab/experiment/results.h"

namespace ropelab {

struct SignificanceRow {
  std::string variant;
  std::string baseline;  // the variant compared against; "0" for a gain tested against none
  std::string column;
  std::string test;   // two_stage_bootstrap | paired_bootstrap
  std::string seeds;  // the seeds the test used, "1 2 3"; paired_bootstrap: one seed, or "pooled"
  double baseline_score = kNaN, score = kNaN;  // the column's value over those seeds
  /// variant - baseline: nats/token (perplexity, gain), accuracy (retrieval), or the
  /// metric's points (translation); with its 95% interval (two-stage tests only)
  double difference = kNaN, low = kNaN, high = kNaN;
  double p_value = kNaN, p_holm = kNaN;
  std::string note;  // why no test was run, if none was
  bool significant() const { return p_holm < 0.05; }
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
};

/// Every test of the experiment's comparisons over `results`, with Holm's adjusted p-values.
/// `pairs`: (variant, baseline), in the order they are reported.
std::vector<SignificanceRow> significance_rows(const std::vector<std::pair<std::string, std::string>>& pairs,
                                               const std::vector<std::string>& order,
                                               const std::vector<RunResult>& results);

/// The pairs an experiment compares: each variant of `order` against `baseline` (the first
/// variant when empty), then `extra`; a pair with a variant that has no finished run gets a
/// row of significance.csv that says so.
std::vector<std::pair<std::string, std::string>> compared_pairs(
    const std::vector<std::string>& order, const std::string& baseline,
    const std::vector<std::pair<std::string, std::string>>& extra);

/// significance.csv: one row per test, RFC 4180 text fields.
std::string significance_csv(const std::vector<SignificanceRow>& rows);

/// results.md's sections of tests: the two-stage tests against each baseline and the
/// context gains against 0 (with Holm's p-values), then the translation tests per seed.
std::string significance_markdown(const std::vector<SignificanceRow>& rows);

}  // namespace ropelab
