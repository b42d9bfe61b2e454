#pragma once
/// Student's t distribution for intervals whose unit is a seed (Student 1908): with n
/// seeds' values, mean ± t(0.975, n - 1) s / sqrt(n). The CDF is the regularised incomplete
/// beta function, I_x(df / 2, 1 / 2) with x = df / (df + t^2), evaluated by its continued
/// fraction (Abramowitz and Stegun 26.5.8); the quantile inverts it by bisection.
/// tests/golden/student_t_golden.py checks both against SciPy.

#include <cstdint>
#include <vector>

namespace ropelab {

/// P(T <= t) for T ~ Student's t with `df` > 0 degrees of freedom.
double student_t_cdf(double t, double df);

/// The t with P(T <= t) = p, 0 < p < 1.
double student_t_quantile(double p, double df);

/// A mean over seeds with its 95% t interval.
struct SeedInterval {
  double mean = 0, low = 0, high = 0;
  int64_t n = 0;
};

/// The mean of `values` and its 95% Student-t interval (NaN ends for fewer than two values).
SeedInterval seed_interval(const std::vector<double>& values);

}  // namespace ropelab
