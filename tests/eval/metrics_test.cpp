// BLEU and chrF against an independent Python implementation of sacreBLEU's algorithm
// (tests/golden/sacrebleu_ref.py; expected values below are its output).
#include "ropelab/eval/metrics.h"

#include "../test_util.h"

using namespace ropelab;

namespace {

const std::vector<std::string> kHyps = {"The cat sat on the mat.",
                                        "¿Dónde está la estación?",
                                        "It costs 1,000.50 dollars.",
                                        "He said &quot;yes&quot;.",
                                        "",
                                        "x",
                                        "completely unrelated words here",
                                        "“Quoted” text, more."};
const std::vector<std::string> kRef1 = {"The cat sat on a mat.",
                                        "¿Dónde está la estación de tren?",
                                        "It costs 1,000.50 dollars!",
                                        "He said \"yes\".",
                                        "Nothing here.",
                                        "x y",
                                        "the reference says something else",
                                        "\"Quoted\" text, more."};
const std::vector<std::string> kRef2 = {"A cat was sitting on the mat.",
                                        "¿Dónde queda la estación?",
                                        "The price is 1,000.50 dollars.",
                                        "He answered yes.",
                                        "",
                                        "x",
                                        "entirely different",
                                        "“Quoted” text, more!"};

double bleu(const std::vector<std::string>& h, const std::vector<std::vector<std::string>>& r, BleuSmoothing s,
            bool lowercase = false) {
  BleuOptions o;
  o.smoothing = s;
  o.lowercase = lowercase;
  return corpus_bleu(h, r, o).score;
}

}  // namespace

TEST(Metrics, Tokenize13a) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Hello, world!", "Hello , world !"},
      {"It costs $1,000.50 (approx.) -- see p. 3-4.", "It costs $ 1,000.50 ( approx . ) -- see p . 3 - 4 ."},
      {"He said &quot;no&quot; &amp; left &lt;now&gt;.", "He said \" no \" & left < now > ."},
      {"a <skipped> b", "a b"},
      {"¿Dónde está la estación? ¡Allí!", "¿Dónde está la estación ? ¡Allí !"},
      {"“Quoted” text… and ‘single’ ones.", "“Quoted” text… and ‘single’ ones ."},
      {"e-mail 3-D x-ray 2020-2021", "e-mail 3 - D x-ray 2020 - 2021"},
      {"end.", "end ."},
      {"", ""},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(tokenize_13a(in), out) << in;
}

TEST(Metrics, BleuMatchesReference) {
  EXPECT_NEAR(bleu(kHyps, {kRef1}, BleuSmoothing::exp), 48.420136, 1e-4);
  EXPECT_NEAR(bleu(kHyps, {kRef1}, BleuSmoothing::add_k), 49.796527, 1e-4);
  EXPECT_NEAR(bleu(kHyps, {kRef1, kRef2}, BleuSmoothing::exp), 78.321780, 1e-4);
  EXPECT_NEAR(bleu(kHyps, {kRef1, kRef2}, BleuSmoothing::add_k), 79.298128, 1e-4);
  EXPECT_NEAR(bleu(kHyps, {kRef1, kRef2}, BleuSmoothing::exp, true), 77.637681, 1e-4);
  EXPECT_NEAR(bleu({kHyps[0], kHyps[1]}, {{kRef1[0], kRef1[1]}}, BleuSmoothing::exp), 48.406886, 1e-4);
  EXPECT_NEAR(bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}}, BleuSmoothing::exp), 100.0, 1e-9);
}

TEST(Metrics, BleuSmoothingVariants) {
  const std::vector<std::string> h = {"a b x y", "c"};
  const std::vector<std::vector<std::string>> r = {{"a b c d", "c d"}};
  EXPECT_NEAR(bleu(h, r, BleuSmoothing::exp), 27.375913, 1e-4);
  EXPECT_NEAR(bleu(h, r, BleuSmoothing::none), 0.0, 1e-4);
  EXPECT_NEAR(bleu(h, r, BleuSmoothing::floor), 14.559320, 1e-4);
  EXPECT_NEAR(bleu(h, r, BleuSmoothing::add_k), 38.715387, 1e-4);
  EXPECT_NEAR(bleu({"a b c d"}, {{"e f g h"}}, BleuSmoothing::exp), 7.986789, 1e-4);  // no matches at all
}

TEST(Metrics, ChrfMatchesReference) {
  EXPECT_NEAR(corpus_chrf(kHyps, {kRef1}).score, 56.210953, 1e-4);
  EXPECT_NEAR(corpus_chrf(kHyps, {kRef1, kRef2}).score, 63.478966, 1e-4);
  EXPECT_NEAR(corpus_chrf({kHyps[0], kHyps[1]}, {{kRef1[0], kRef1[1]}}).score, 74.602258, 1e-4);
  EXPECT_NEAR(corpus_chrf({"abc"}, {{"xyz"}}).score, 0.0, 1e-9);
}

TEST(Metrics, FormatAndSignatureLikeSacrebleu) {
  auto s = corpus_bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}});
  EXPECT_EQ(s.format(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");
  EXPECT_EQ(s.signature.rfind("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:", 0), 0u) << s.signature;
  auto c = corpus_chrf({"abc"}, {{"abc"}});
  EXPECT_EQ(c.format(), "chrF2 = 100.00");
  EXPECT_EQ(c.signature.rfind("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:", 0), 0u) << c.signature;
}

TEST(Metrics, MismatchedLineCountsAreAnError) {
  auto message = ropelab::testing::error_of([] { corpus_bleu({"a", "b"}, {{"a"}}); });
  EXPECT_EQ(message, "reference 1 has 1 lines but the hypotheses have 2");
}
