// BLEU, chrF, TER and the 13a tokenizer against sacreBLEU itself: tests/golden/sacrebleu_golden.json holds each
// case's inputs and sacreBLEU's outputs, written by tests/golden/sacrebleu_golden.py from a sacreBLEU checkout.
#include "ropelab/metrics/metrics.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "../test_util.h"
#include "ropelab/build_config.h"

using namespace ropelab;
using nlohmann::json;

namespace {

constexpr double kTolerance = 1e-6;

const json& golden() { return ropelab::testing::golden("sacrebleu_golden.json"); }

/// The case called `name` in the golden file's `section` ("tokenize_13a", "bleu", "chrf" or "ter").
const json& golden_case(const std::string& section, const std::string& name) {
  for (const auto& c : golden().at(section))
    if (c.at("name").get<std::string>() == name) return c;
  throw std::out_of_range("sacrebleu_golden.json has no " + section + " case " + name);
}

using Lines = std::vector<std::string>;
using RefSets = std::vector<std::vector<std::string>>;

BleuScore bleu_of(const json& c) {
  BleuOptions o;
  o.smoothing = parse_bleu_smoothing(c.at("smooth").get<std::string>());
  o.lowercase = c.at("lowercase").get<bool>();
  return corpus_bleu(c.at("hyps").get<Lines>(), c.at("refs").get<RefSets>(), o);
}

ChrfScore chrf_of(const json& c) {
  ChrfOptions o;
  o.lowercase = c.at("lowercase").get<bool>();
  o.word_order = c.at("word_order").get<int>();
  return corpus_chrf(c.at("hyps").get<Lines>(), c.at("refs").get<RefSets>(), o);
}

}  // namespace

TEST(Metrics, Tokenize13a) {
  const auto& cases = golden().at("tokenize_13a");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases)
    EXPECT_EQ(tokenize_13a(c.at("input").get<std::string>()), c.at("output").get<std::string>())
        << c.at("name").get<std::string>();
}

TEST(Metrics, BleuMatchesSacrebleu) {
  const auto& cases = golden().at("bleu");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto s = bleu_of(c);
    EXPECT_NEAR(s.score, c.at("score").get<double>(), kTolerance);
    const auto precisions = c.at("precisions").get<std::vector<double>>();
    ASSERT_EQ(precisions.size(), s.precisions.size());
    for (size_t n = 0; n < precisions.size(); ++n) EXPECT_NEAR(s.precisions[n], precisions[n], kTolerance) << n + 1;
    EXPECT_NEAR(s.bp, c.at("bp").get<double>(), kTolerance);
    EXPECT_NEAR(s.ratio, c.at("ratio").get<double>(), kTolerance);
    EXPECT_EQ(s.hyp_len, c.at("hyp_len").get<int64_t>());
    EXPECT_EQ(s.ref_len, c.at("ref_len").get<int64_t>());
    EXPECT_EQ(s.format(), c.at("format").get<std::string>());
  }
}

TEST(Metrics, BleuIsZeroWhenNoNgramMatches) {
  // sacreBLEU 2.x scores 0 before any smoothing when no n-gram of any order matches (its issue #141).
  for (const char* smooth : {"exp", "none", "floor", "add-k"}) {
    BleuOptions o;
    o.smoothing = parse_bleu_smoothing(smooth);
    const auto s = corpus_bleu({"aa bb cc dd ee ff gg"}, {{"the cat sat on the mat today"}}, o);
    EXPECT_EQ(s.score, 0.0) << smooth;
    EXPECT_EQ(s.format(), "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)") << smooth;
    EXPECT_EQ(corpus_bleu({"a b c d"}, {{"e f g h"}}, o).score, 0.0) << smooth;
  }
  const auto& c = golden_case("bleu", "no_match_aa_exp");
  EXPECT_EQ(c.at("hyps").get<Lines>(), Lines{"aa bb cc dd ee ff gg"});
  EXPECT_EQ(c.at("score").get<double>(), 0.0);
}

TEST(Metrics, ChrfMatchesSacrebleu) {
  const auto& cases = golden().at("chrf");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto s = chrf_of(c);
    EXPECT_NEAR(s.score, c.at("score").get<double>(), kTolerance);
    EXPECT_EQ(s.format(), c.at("format").get<std::string>());
    // the signature up to the version, which names ropelab instead of sacreBLEU
    const auto signature = c.at("signature").get<std::string>();
    EXPECT_EQ(s.signature.substr(0, s.signature.find("version:")), signature.substr(0, signature.find("version:")));
  }
  // chrF++ is among the cases
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const json& c) { return c.at("word_order") == 2; }));
}

TEST(Metrics, ChrfAndChrfPlusPlusInOnePassMatchSacrebleu) {
  const auto& cases = golden().at("chrf");
  int pairs = 0;
  for (const auto& c : cases) {
    if (c.at("word_order") != 0) continue;
    const auto name = c.at("name").get<std::string>();
    SCOPED_TRACE(name);
    const auto& pp = golden_case("chrf", name + "_chrf++");
    ChrfOptions plain, plus = chrf_plus_plus();
    plain.lowercase = plus.lowercase = c.at("lowercase").get<bool>();
    const auto both =
        corpus_chrf(c.at("hyps").get<Lines>(), c.at("refs").get<RefSets>(), std::vector<ChrfOptions>{plus, plain});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_NEAR(both[0].score, pp.at("score").get<double>(), kTolerance);
    EXPECT_NEAR(both[1].score, c.at("score").get<double>(), kTolerance);
    ++pairs;
  }
  EXPECT_GE(pairs, 8);
}

TEST(Metrics, FormatAndSignatureLikeSacrebleu) {
  auto s = corpus_bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}});
  EXPECT_EQ(s.format(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");
  EXPECT_EQ(s.signature.rfind("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:", 0), 0u) << s.signature;
  auto c = corpus_chrf({"abc"}, {{"abc"}});
  EXPECT_EQ(c.format(), "chrF2 = 100.00");
  EXPECT_EQ(c.signature.rfind("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:", 0), 0u) << c.signature;
}

TEST(Metrics, TerMatchesSacrebleu) {
  const auto& cases = golden().at("ter");
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    TerOptions o;
    o.case_sensitive = c.at("case_sensitive").get<bool>();
    const auto hyps = c.at("hyps").get<Lines>();
    const auto refs = c.at("refs").get<RefSets>();
    const auto s = corpus_ter(hyps, refs, o);
    EXPECT_NEAR(s.score, c.at("score").get<double>(), kTolerance);
    EXPECT_EQ(s.edits, c.at("edits").get<double>());
    EXPECT_NEAR(s.ref_len, c.at("ref_len").get<double>(), kTolerance);
    EXPECT_EQ(s.format(), c.at("format").get<std::string>());
    const auto signature = c.at("signature").get<std::string>();
    EXPECT_EQ(s.signature.substr(0, s.signature.find("version:")), signature.substr(0, signature.find("version:")));
    // line by line: the edits found for each sentence, not only their sum
    const auto lines = ter_sentence_stats(hyps, refs, o);
    const auto expected = c.at("sentence_stats").get<std::vector<std::vector<double>>>();
    ASSERT_EQ(lines.size(), expected.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].edits, expected[i][0]) << "line " << i;
      EXPECT_NEAR(lines[i].ref_len, expected[i][1], kTolerance) << "line " << i;
    }
  }
}

TEST(Metrics, TextMetricsScoreTheirSummedSentenceStats) {
  const auto& c = golden_case("bleu", "two_refs_exp");
  const auto hyps = c.at("hyps").get<Lines>();
  const auto refs = c.at("refs").get<RefSets>();
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"bleu", {"BLEU", corpus_bleu(hyps, refs).format()}},
      {"chrf", {"chrF2", corpus_chrf(hyps, refs).format()}},
      {"chrf++", {"chrF2++", corpus_chrf(hyps, refs, chrf_plus_plus()).format()}},
      {"ter", {"TER", corpus_ter(hyps, refs).format()}}};
  ASSERT_EQ(text_metric_names().size(), expected.size());
  for (const auto& name : text_metric_names()) {
    SCOPED_TRACE(name);
    const auto metric = make_text_metric(name);
    EXPECT_EQ(metric->name(), expected.at(name).first);
    const auto stats = metric->sentence_stats(hyps, refs);
    ASSERT_EQ(stats.size(), hyps.size() * metric->width());
    const auto sums = column_sums(stats, metric->width());
    EXPECT_EQ(metric->line(sums.data()), expected.at(name).second);
    EXPECT_EQ(metric->signature(2).rfind("nrefs:2|", 0), 0u) << metric->signature(2);
  }
  EXPECT_EQ(ropelab::testing::error_of([] { make_text_metric("meteor"); }),
            "unknown metric 'meteor' (known: bleu, chrf, chrf++, ter)");
}

TEST(Metrics, MismatchedLineCountsAreAnError) {
  auto message = ropelab::testing::error_of([] { corpus_bleu({"a", "b"}, {{"a"}}); });
  EXPECT_EQ(message, "reference 1 has 1 lines but the hypotheses have 2");
}
