// Paired bootstrap resampling and approximate randomisation against sacreBLEU's PairedTest:
// tests/golden/sacrebleu_golden.json holds, per test, the systems, sacreBLEU's results and
// the draws its NumPy generator made for the seed, which are handed to ropelab's tests here.
#include "ropelab/metrics/significance.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "../test_util.h"

using namespace ropelab;
using nlohmann::json;

namespace {

constexpr double kTolerance = 1e-6;
/// sacreBLEU sums the bootstrap statistics in float32, and TER's ratio of float32 sums is a
/// float32 division: its resampled scores carry float32 rounding (about 4e-7 relative).
constexpr double kResampledTolerance = 1e-5;

const json& paired_cases() { return ropelab::testing::golden("sacrebleu_golden.json").at("paired"); }

Resamples parse_resamples(const json& rows) {
  Resamples out;
  for (const auto& row : rows) {
    std::istringstream in(row.get<std::string>());
    auto& draw = out.emplace_back();
    for (uint32_t i; in >> i;) draw.push_back(i);
  }
  return out;
}

Flips parse_flips(const json& rows) {
  Flips out;
  for (const auto& row : rows) {
    auto& flip = out.emplace_back();
    for (char c : row.get<std::string>()) flip.push_back(c == '1');
  }
  return out;
}

const json& result_of(const json& c, const std::string& system, const std::string& metric) {
  for (const auto& r : c.at("results"))
    if (r.at("system") == system && r.at("metric") == metric) return r;
  throw std::out_of_range("no result for " + system + " " + metric);
}

std::string without_version(const std::string& signature) { return signature.substr(0, signature.find("version:")); }

}  // namespace

TEST(Significance, PairedTestsMatchSacrebleuGivenItsDraws) {
  ASSERT_EQ(paired_cases().size(), 2u);
  std::set<std::string> seen_tests;
  std::set<size_t> seen_ref_counts;
  int significant = 0, not_significant = 0;
  for (const auto& c : paired_cases()) {
    const auto test = c.at("test").get<std::string>();
    seen_tests.insert(test);
    const auto refs = c.at("refs").get<std::vector<std::vector<std::string>>>();
    seen_ref_counts.insert(refs.size());
    const auto& systems = c.at("systems");
    const auto baseline_draws = parse_resamples(c.at("baseline_resamples"));
    const auto draws = parse_resamples(c.at("resamples"));
    PairedTestOptions options;
    options.test = test == "bs" ? PairedTest::bootstrap : PairedTest::randomization;
    options.samples = c.at("samples").get<int64_t>();
    options.confidence_samples = c.at("confidence_samples").get<int64_t>();
    options.seed = c.at("seed").get<uint64_t>();
    for (const auto& name : c.at("metrics").get<std::vector<std::string>>()) {
      SCOPED_TRACE(test + " " + name);
      const auto metric = make_text_metric(name);
      EXPECT_EQ(without_version(with_test_fields(metric->signature(refs.size()), options)),
                without_version(c.at("signatures").at(name).get<std::string>()));
      const auto base = metric->sentence_stats(systems[0].at("hyps").get<std::vector<std::string>>(), refs);
      const auto& base_expected = result_of(c, systems[0].at("name").get<std::string>(), name);
      const auto base_confidence = estimate_confidence(resampled_scores(*metric, base, baseline_draws));
      EXPECT_NEAR(base_confidence.mean, base_expected.at("mean").get<double>(), kResampledTolerance);
      EXPECT_NEAR(base_confidence.half_width, base_expected.at("ci").get<double>(), kResampledTolerance);
      for (size_t s = 1; s < systems.size(); ++s) {
        const auto system_name = systems[s].at("name").get<std::string>();
        SCOPED_TRACE(system_name);
        const auto stats = metric->sentence_stats(systems[s].at("hyps").get<std::vector<std::string>>(), refs);
        const auto r = test == "bs" ? paired_bootstrap(*metric, base, stats, draws)
                                    : paired_randomization(*metric, base, stats, parse_flips(c.at("flips")), &draws);
        const auto& expected = result_of(c, system_name, name);
        EXPECT_NEAR(r.score, expected.at("score").get<double>(), kTolerance);
        EXPECT_DOUBLE_EQ(r.p_value, expected.at("p_value").get<double>());
        ASSERT_TRUE(r.confidence.has_value());
        EXPECT_NEAR(r.confidence->mean, expected.at("mean").get<double>(), kResampledTolerance);
        EXPECT_NEAR(r.confidence->half_width, expected.at("ci").get<double>(), kResampledTolerance);
        (r.p_value < 0.05 ? significant : not_significant) += 1;
      }
    }
  }
  EXPECT_EQ(seen_tests, (std::set<std::string>{"ar", "bs"}));
  EXPECT_EQ(seen_ref_counts, (std::set<size_t>{1, 2}));
  // the cases exercise both verdicts
  EXPECT_GT(significant, 0);
  EXPECT_GT(not_significant, 0);
}

TEST(Significance, IdenticalSystemsGetTheSmallestPValueAsInSacrebleu) {
  // sacreBLEU counts only differences strictly above the observed one: with identical
  // outputs none is, and p = 1 / (n + 1) (the golden "same" system shows it too).
  const auto metric = make_text_metric("bleu");
  const std::vector<std::string> hyps{"a b c d e", "f g h", "i j k l"};
  const auto stats = metric->sentence_stats(hyps, {{"a b c d x", "f g h", "i j k"}});
  EXPECT_DOUBLE_EQ(paired_bootstrap(*metric, stats, stats, draw_resamples(3, 99, 1)).p_value, 0.01);
  EXPECT_DOUBLE_EQ(paired_randomization(*metric, stats, stats, draw_flips(3, 99, 1)).p_value, 0.01);
}

TEST(Significance, DrawsAreSeededAndUniform) {
  const auto a = draw_resamples(50, 400, 7), b = draw_resamples(50, 400, 7), c = draw_resamples(50, 400, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int64_t> counts(50, 0);
  for (const auto& r : a) {
    ASSERT_EQ(r.size(), 50u);
    for (auto i : r) ++counts.at(i);
  }
  // 400 draws per item expected; a binomial sd of about 20
  for (auto n : counts) EXPECT_NEAR(static_cast<double>(n), 400.0, 100.0);
  const auto flips = draw_flips(130, 200, 7);
  EXPECT_EQ(flips, draw_flips(130, 200, 7));
  int64_t ones = 0;
  for (const auto& f : flips) {
    ASSERT_EQ(f.size(), 130u);
    for (auto x : f) ones += x;
  }
  EXPECT_NEAR(static_cast<double>(ones) / (130.0 * 200.0), 0.5, 0.02);
}

TEST(Significance, RunPairedTestGivesTheBaselineAConfidenceAndNoPValue) {
  const auto metric = make_text_metric("chrf");
  const std::vector<std::vector<std::string>> refs{{"the cat sat on the mat", "a dog", "it rains today"}};
  std::vector<std::vector<std::vector<double>>> stats;
  for (const auto& hyps : std::vector<std::vector<std::string>>{{"the cat sat on a mat", "a dog", "it rained today"},
                                                                {"a cat on the mat", "dog", "rain today"}})
    stats.push_back({metric->sentence_stats(hyps, refs)});
  for (const auto test : {PairedTest::bootstrap, PairedTest::randomization}) {
    PairedTestOptions options;
    options.test = test;
    options.samples = 200;
    const auto results = run_paired_test({metric.get()}, stats, options);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(std::isnan(results[0][0].p_value));
    EXPECT_TRUE(results[0][0].confidence.has_value());
    EXPECT_GT(results[0][0].score, results[1][0].score);
    EXPECT_GT(results[1][0].p_value, 0.0);
    EXPECT_LE(results[1][0].p_value, 1.0);
    EXPECT_EQ(run_paired_test({metric.get()}, stats, options)[1][0].p_value, results[1][0].p_value);  // seeded
  }
  EXPECT_EQ(ropelab::testing::error_of([&] { run_paired_test({metric.get()}, {stats[0]}, {}); }),
            "a paired test needs a baseline and at least one system");
}
