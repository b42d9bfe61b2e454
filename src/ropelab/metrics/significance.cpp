#include "ropelab/metrics/significance.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ropelab/util/random.h"

namespace ropelab {

namespace {

void check_stats(const CorpusMetric& metric, const std::vector<double>& stats, const char* what) {
  if (metric.width() == 0 || stats.size() % metric.width() != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(stats.size()) +
                                " statistics are not whole rows of " + std::to_string(metric.width()) + " for " +
                                metric.name());
}

/// Both systems' statistics whole rows of the metric, item for item.
void check_pair(const CorpusMetric& metric, const std::vector<double>& baseline, const std::vector<double>& system) {
  check_stats(metric, baseline, "baseline");
  check_stats(metric, system, "system");
  if (baseline.size() != system.size())
    throw std::invalid_argument("paired test: the systems have different numbers of items");
}

double score_of(const CorpusMetric& metric, const std::vector<double>& stats) {
  return metric.score(column_sums(stats, metric.width()).data());
}

}  // namespace

Resamples draw_resamples(size_t items, size_t count, uint64_t seed) {
  SplitMix64 rng(seed);
  Resamples out(count, std::vector<uint32_t>(items));
  for (auto& r : out)
    for (auto& i : r) i = rng.below(static_cast<uint32_t>(items));
  return out;
}

Flips draw_flips(size_t items, size_t trials, uint64_t seed) {
  SplitMix64 rng(seed ^ 0x5DEECE66DULL);  // a stream apart from draw_resamples' for the same seed
  Flips out(trials, std::vector<uint8_t>(items));
  for (auto& t : out)
    for (size_t i = 0; i < items; i += 64) {
      const uint64_t bits = rng.next();
      for (size_t k = 0; k < 64 && i + k < items; ++k) t[i + k] = static_cast<uint8_t>((bits >> k) & 1U);
    }
  return out;
}

std::vector<double> resampled_scores(const CorpusMetric& metric, const std::vector<double>& stats,
                                     const Resamples& resamples) {
  check_stats(metric, stats, "resampling");
  const size_t w = metric.width(), items = stats.size() / w;
  std::vector<double> scores, sums(w);
  scores.reserve(resamples.size());
  for (const auto& draw : resamples) {
    if (draw.size() != items)
      throw std::invalid_argument("a resample has " + std::to_string(draw.size()) + " draws for " +
                                  std::to_string(items) + " items");
    std::fill(sums.begin(), sums.end(), 0.0);
    for (uint32_t i : draw) {
      if (i >= items)
        throw std::invalid_argument("a resample draws item " + std::to_string(i) + " of " + std::to_string(items));
      const double* row = stats.data() + static_cast<size_t>(i) * w;
      for (size_t c = 0; c < w; ++c) sums[c] += row[c];
    }
    scores.push_back(metric.score(sums.data()));
  }
  return scores;
}

Confidence estimate_confidence(std::vector<double> scores) {
  if (scores.empty()) throw std::invalid_argument("no resampled scores to estimate a confidence interval from");
  std::sort(scores.begin(), scores.end());
  const size_t n = scores.size(), lower = n / 40, upper = n - lower - 1;
  Confidence c;
  for (double s : scores) c.mean += s;
  c.mean /= static_cast<double>(n);
  c.half_width = 0.5 * (scores[upper] - scores[lower]);
  return c;
}

double p_value_above(const std::vector<double>& statistics, double observed) {
  const auto above = std::count_if(statistics.begin(), statistics.end(), [&](double s) { return s > observed; });
  return static_cast<double>(above + 1) / static_cast<double>(statistics.size() + 1);
}

PairedResult paired_bootstrap(const CorpusMetric& metric, const std::vector<double>& baseline,
                              const std::vector<double>& system, const Resamples& resamples) {
  check_pair(metric, baseline, system);
  PairedResult r;
  r.score = score_of(metric, system);
  const double observed = std::abs(score_of(metric, baseline) - r.score);
  const auto base_scores = resampled_scores(metric, baseline, resamples);
  const auto sys_scores = resampled_scores(metric, system, resamples);
  r.confidence = estimate_confidence(sys_scores);
  // The differences centred on their mean: their spread under the null hypothesis.
  std::vector<double> diffs(sys_scores.size());
  double mean = 0;
  for (size_t k = 0; k < diffs.size(); ++k) mean += diffs[k] = std::abs(sys_scores[k] - base_scores[k]);
  mean /= static_cast<double>(diffs.size());
  for (auto& d : diffs) d -= mean;
  r.p_value = p_value_above(diffs, observed);
  return r;
}

PairedResult paired_randomization(const CorpusMetric& metric, const std::vector<double>& baseline,
                                  const std::vector<double>& system, const Flips& flips, const Resamples* confidence) {
  check_pair(metric, baseline, system);
  const size_t w = metric.width(), items = baseline.size() / w;
  PairedResult r;
  const auto base_sums = column_sums(baseline, w), sys_sums = column_sums(system, w);
  r.score = metric.score(sys_sums.data());
  const double observed = std::abs(metric.score(base_sums.data()) - r.score);
  // Trial sums from the differences of the swapped items: a = baseline with the swapped
  // items' rows replaced by the system's, b = the rest.
  std::vector<double> a(w), b(w), diffs;
  diffs.reserve(flips.size());
  for (const auto& flip : flips) {
    if (flip.size() != items)
      throw std::invalid_argument("a randomisation trial has " + std::to_string(flip.size()) + " swaps for " +
                                  std::to_string(items) + " items");
    a = base_sums, b = sys_sums;
    for (size_t i = 0; i < items; ++i) {
      if (!flip[i]) continue;
      const double *x = baseline.data() + i * w, *y = system.data() + i * w;
      for (size_t c = 0; c < w; ++c) a[c] += y[c] - x[c], b[c] += x[c] - y[c];
    }
    diffs.push_back(std::abs(metric.score(a.data()) - metric.score(b.data())));
  }
  r.p_value = p_value_above(diffs, observed);
  if (confidence != nullptr) r.confidence = estimate_confidence(resampled_scores(metric, system, *confidence));
  return r;
}

std::vector<std::vector<PairedResult>> run_paired_test(const std::vector<const CorpusMetric*>& metrics,
                                                       const std::vector<std::vector<std::vector<double>>>& statistics,
                                                       const PairedTestOptions& options) {
  if (statistics.size() < 2) throw std::invalid_argument("a paired test needs a baseline and at least one system");
  const auto& base = statistics[0];
  if (base.size() != metrics.size())
    throw std::invalid_argument("paired test: statistics for " + std::to_string(base.size()) + " metrics, " +
                                std::to_string(metrics.size()) + " metrics");
  const size_t items = metrics.empty() ? 0 : base[0].size() / metrics[0]->width();
  const auto samples = static_cast<size_t>(options.resolved_samples());
  const bool bootstrap = options.test == PairedTest::bootstrap;
  const auto resamples = draw_resamples(
      items, bootstrap ? samples : static_cast<size_t>(std::max<int64_t>(0, options.confidence_samples)), options.seed);
  const auto flips = bootstrap ? Flips{} : draw_flips(items, samples, options.seed);
  std::vector<std::vector<PairedResult>> results(statistics.size(), std::vector<PairedResult>(metrics.size()));
  for (size_t m = 0; m < metrics.size(); ++m) {
    auto& baseline = results[0][m];
    baseline.score = score_of(*metrics[m], base[m]);
    if (!resamples.empty())
      baseline.confidence = estimate_confidence(resampled_scores(*metrics[m], base[m], resamples));
    for (size_t s = 1; s < statistics.size(); ++s)
      results[s][m] = bootstrap ? paired_bootstrap(*metrics[m], base[m], statistics[s][m], resamples)
                                : paired_randomization(*metrics[m], base[m], statistics[s][m], flips,
                                                       resamples.empty() ? nullptr : &resamples);
  }
  return results;
}

std::string with_test_fields(const std::string& signature, const PairedTestOptions& options) {
  std::string fields;
  const bool bootstrap = options.test == PairedTest::bootstrap;
  if (bootstrap || options.confidence_samples > 0)
    fields += "bs:" + std::to_string(bootstrap ? options.resolved_samples() : options.confidence_samples) + "|";
  if (!bootstrap) fields += "ar:" + std::to_string(options.resolved_samples()) + "|";
  fields += "seed:" + std::to_string(options.seed) + "|";
  const auto bar = signature.find('|');
  return bar == std::string::npos ? fields + signature
                                  : signature.substr(0, bar + 1) + fields + signature.substr(bar + 1);
}

}  // namespace ropelab
