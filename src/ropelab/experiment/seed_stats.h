#pragma once
/// Statistics over the seeds of a variant, for the ablation's tables and plots.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ropelab/experiment/results.h"
#include "ropelab/util/svg_plot.h"

namespace ropelab::seed_stats {

/// Mean and sample standard deviation over seeds (sd NaN for a single value).
struct Spread {
  double mean = 0, sd = std::numeric_limits<double>::quiet_NaN();
};
inline Spread mean_sd(const std::vector<double>& values) {
  Spread s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() < 2) return s;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(sq / static_cast<double>(values.size() - 1));
  return s;
}

/// Adds a point at `x`: the mean of `values` with its sd as the band (none for no values).
inline void add_point(Series& line, double x, const std::vector<double>& values) {
  if (values.empty()) return;
  const auto s = mean_sd(values);
  line.x.push_back(x), line.y.push_back(s.mean), line.spread.push_back(s.sd);
}

/// The finite values of `column` over the runs of `variant` (one per seed that has it).
inline std::vector<double> finite_values(const std::vector<RunResult>& results, const std::string& variant,
                                         const std::string& column) {
  std::vector<double> values;
  for (const auto& r : results) {
    const auto it = r.metrics.find(column);
    if (r.variant == variant && it != r.metrics.end() && std::isfinite(it->second)) values.push_back(it->second);
  }
  return values;
}

}  // namespace ropelab::seed_stats
