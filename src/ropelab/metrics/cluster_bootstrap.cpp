#include "ropelab/metrics/cluster_bootstrap.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ropelab/util/random.h"

namespace ropelab {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return BootstrapInterval::kNaN;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (rank - static_cast<double>(below)) * (values[above] - values[below]);
}

BootstrapInterval cluster_bootstrap(const RatioClusters& clusters, int64_t resamples, uint64_t seed) {
  if (resamples <= 0) throw std::invalid_argument("cluster_bootstrap: resamples must be positive");
  BootstrapInterval out;
  double numerator = 0;
  size_t items = 0;
  for (const auto& c : clusters)
    for (const auto& i : c) numerator += i.numerator, out.denominator += i.denominator, ++items;
  if (items == 0) throw std::invalid_argument("cluster_bootstrap: no items");
  if (out.denominator == 0) return out;
  out.estimate = numerator / out.denominator;
  SplitMix64 rng(seed);
  std::vector<double> estimates;
  estimates.reserve(static_cast<size_t>(resamples));
  const auto n = static_cast<uint32_t>(clusters.size());
  for (int64_t r = 0; r < resamples; ++r) {
    double num = 0, den = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const auto& cluster = clusters[rng.below(n)];
      const auto size = static_cast<uint32_t>(cluster.size());
      for (uint32_t i = 0; i < size; ++i) {
        const auto& item = cluster[rng.below(size)];
        num += item.numerator, den += item.denominator;
      }
    }
    if (den != 0) estimates.push_back(num / den);
  }
  out.resamples = static_cast<int64_t>(estimates.size());
  if (estimates.empty()) return out;
  out.low = percentile(estimates, 2.5);
  out.high = percentile(estimates, 97.5);
  // the resamples on the other side of 0 (0 itself counted on both)
  const auto beyond =
      std::count_if(estimates.begin(), estimates.end(), [&](double e) { return out.estimate >= 0 ? e <= 0 : e >= 0; });
  out.p_value = std::min(1.0, 2.0 * static_cast<double>(beyond + 1) / static_cast<double>(estimates.size() + 1));
  return out;
}

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p_values.size(); ++i)
    if (!std::isnan(p_values[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> out(p_values.size(), BootstrapInterval::kNaN);
  const auto m = static_cast<double>(order.size());
  double running = 0;
  for (size_t j = 0; j < order.size(); ++j) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(j)) * p_values[order[j]]));
    out[order[j]] = running;
  }
  return out;
}

}  // namespace ropelab
