#include "ropelab/metrics/student_t.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ropelab {

namespace {

/// The continued fraction of the incomplete beta function (modified Lentz's method).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // the even step, then the odd one
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d, c = 1 + aa / c;
    d = std::abs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = std::abs(c) < kTiny ? kTiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d, c = 1 + aa / c;
    d = std::abs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = std::abs(c) < kTiny ? kTiny : c;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < kEpsilon) break;
  }
  return h;
}

/// The regularised incomplete beta function I_x(a, b), given x and y = 1 - x (each computed
/// where it is accurate: 1 - x loses digits as x nears 1).
double incomplete_beta(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(y));
  // the fraction converges fast below the mean; above it, the symmetry I_x(a, b) = 1 - I_y(b, a)
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, y) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf: degrees of freedom must be positive");
  // P(T > |t|)
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: p must be in (0, 1)");
  double low = -1, high = 1;
  while (student_t_cdf(low, df) > p) low *= 2;
  while (student_t_cdf(high, df) < p) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-14 * std::max(1.0, std::abs(low)); ++i) {
    const double middle = (low + high) / 2;
    (student_t_cdf(middle, df) < p ? low : high) = middle;
  }
  return (low + high) / 2;
}

SeedInterval seed_interval(const std::vector<double>& values) {
  SeedInterval out;
  out.n = static_cast<int64_t>(values.size());
  if (values.empty()) return out;
  for (double v : values) out.mean += v;
  out.mean /= static_cast<double>(values.size());
  if (values.size() < 2) {
    out.low = out.high = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  double squares = 0;
  for (double v : values) squares += (v - out.mean) * (v - out.mean);
  const double n = static_cast<double>(values.size());
  const double half = student_t_quantile(0.975, n - 1) * std::sqrt(squares / (n - 1) / n);
  out.low = out.mean - half, out.high = out.mean + half;
  return out;
}

}  // namespace ropelab
