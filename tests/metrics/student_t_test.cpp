// Student's t CDF, quantiles and seed intervals against SciPy (tests/golden/student_t_golden.py).
#include "ropelab/metrics/student_t.h"

#include <cmath>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::golden;

TEST(StudentT, CdfAndQuantilesMatchSciPy) {
  const auto& g = golden("student_t_golden.json");
  for (const auto& c : g.at("cdf"))
    EXPECT_NEAR(student_t_cdf(c.at("t"), c.at("df")), c.at("cdf").get<double>(), 1e-12)
        << "t " << c.at("t") << " df " << c.at("df");
  for (const auto& q : g.at("quantile"))
    EXPECT_NEAR(student_t_quantile(q.at("p"), q.at("df")), q.at("t").get<double>(),
                1e-11 * std::max(1.0, std::abs(q.at("t").get<double>())))
        << "p " << q.at("p") << " df " << q.at("df");
}

TEST(StudentT, SeedIntervalsMatchSciPy) {
  for (const auto& c : golden("student_t_golden.json").at("intervals")) {
    const auto r = seed_interval(c.at("values").get<std::vector<double>>());
    EXPECT_NEAR(r.mean, c.at("mean").get<double>(), 1e-12);
    EXPECT_NEAR(r.low, c.at("low").get<double>(), 1e-9);
    EXPECT_NEAR(r.high, c.at("high").get<double>(), 1e-9);
  }
  const auto one = seed_interval({0.5});
  EXPECT_EQ(one.mean, 0.5);
  EXPECT_TRUE(std::isnan(one.low) && std::isnan(one.high));
  EXPECT_EQ(seed_interval({}).n, 0);
}
