// The two-stage bootstrap of a ratio and Holm's adjustment against tests/golden/bootstrap_golden.json,
// which tests/golden/bootstrap_golden.py computes from their definitions with NumPy.
#include "ropelab/metrics/cluster_bootstrap.h"

#include <cmath>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::golden;

namespace {

RatioClusters clusters_of(const nlohmann::json& j) {
  RatioClusters out;
  for (const auto& c : j) {
    out.emplace_back();
    for (const auto& item : c) out.back().push_back({item[0].get<double>(), item[1].get<double>()});
  }
  return out;
}

double or_nan(const nlohmann::json& j) { return j.is_null() ? std::nan("") : j.get<double>(); }

}  // namespace

TEST(ClusterBootstrap, MatchesTheIndependentReference) {
  for (const auto& c : golden("bootstrap_golden.json").at("bootstrap")) {
    SCOPED_TRACE("seed " + std::to_string(c.at("seed").get<int64_t>()));
    const auto r = cluster_bootstrap(clusters_of(c.at("clusters")), c.at("resamples"), c.at("seed"));
    EXPECT_NEAR(r.estimate, c.at("estimate").get<double>(), 1e-12);
    EXPECT_NEAR(r.low, c.at("low").get<double>(), 1e-12);
    EXPECT_NEAR(r.high, c.at("high").get<double>(), 1e-12);
    EXPECT_NEAR(r.p_value, c.at("p_value").get<double>(), 1e-12);
    EXPECT_EQ(r.resamples, c.at("resamples").get<int64_t>());
  }
}

TEST(ClusterBootstrap, SeesAClearEffectAndNoneWhereThereIsNone) {
  // every item gains 0.1 nats a token, give or take: the interval excludes 0
  RatioClusters effect(3);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 20; ++i) effect[c].push_back({(0.1 + 0.01 * ((i * 7 + c) % 5 - 2)) * 100, 100});
  const auto r = cluster_bootstrap(effect, 1000, 1);
  EXPECT_TRUE(r.excludes_zero());
  EXPECT_LT(r.p_value, 0.01);
  // gains of both signs that cancel: the interval holds 0
  RatioClusters none(1);
  for (int i = 0; i < 40; ++i) none[0].push_back({(i % 2 ? 1.0 : -1.0) * (1 + i % 3), 10});
  const auto z = cluster_bootstrap(none, 1000, 1);
  EXPECT_FALSE(z.excludes_zero());
  EXPECT_GT(z.p_value, 0.2);
  EXPECT_EQ(z.denominator, 400);
}

TEST(ClusterBootstrap, HolmMatchesTheIndependentReference) {
  for (const auto& c : golden("bootstrap_golden.json").at("holm")) {
    std::vector<double> p;
    for (const auto& v : c.at("p")) p.push_back(or_nan(v));
    const auto adjusted = holm_adjust(p);
    ASSERT_EQ(adjusted.size(), p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      const double expected = or_nan(c.at("adjusted")[i]);
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(adjusted[i]));
      else
        EXPECT_NEAR(adjusted[i], expected, 1e-15);
    }
  }
}

TEST(ClusterBootstrap, PercentileInterpolatesAsNumPy) {
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 2.5), 1.1);
  EXPECT_DOUBLE_EQ(percentile({7}, 97.5), 7);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}
