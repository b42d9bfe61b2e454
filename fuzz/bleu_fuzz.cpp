// libFuzzer target: sacreBLEU's 13a tokenizer, BLEU, chrF, chrF++, TER and the paired tests.
// The input, split into lines, is a hypothesis and a reference per line pair. Scores are
// finite and within [0, 100] (TER: at least 0, and no more edits than the longer side has
// words), hypotheses equal to their references score BLEU 100 once a line has 4 tokens and
// TER 0, every metric's summed sentence statistics give its corpus score, p-values lie in
// (0, 1], and lowercasing is idempotent.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "fuzz_util.h"
#include "ropelab/metrics/metrics.h"
#include "ropelab/metrics/significance.h"

using namespace ropelab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> hyps, refs;
  for (std::string line; std::getline(in, line);) (hyps.size() == refs.size() ? hyps : refs).push_back(line);
  refs.resize(hyps.size());
  size_t longest = 0;  // tokens of the longest hypothesis
  for (const auto& h : hyps) {
    std::istringstream tokens(tokenize_13a(h));
    size_t n = 0;
    for (std::string t; tokens >> t;) ++n;
    longest = std::max(longest, n);
    const auto lower = lowercase_utf8(h);
    fuzz::check(lowercase_utf8(lower) == lower, "lowercasing is idempotent");
  }
  for (const bool lowercase : {false, true}) {
    BleuOptions options;
    options.lowercase = lowercase;
    const auto bleu = corpus_bleu(hyps, {refs}, options);
    fuzz::check(std::isfinite(bleu.score) && bleu.score >= 0 && bleu.score <= 100 + 1e-9, "BLEU in [0, 100]");
    const auto chrf = corpus_chrf(hyps, {refs});
    fuzz::check(std::isfinite(chrf.score) && chrf.score >= 0 && chrf.score <= 100 + 1e-9, "chrF in [0, 100]");
    auto pp = chrf_plus_plus();
    pp.lowercase = lowercase;
    const auto chrfpp = corpus_chrf(hyps, {refs}, pp);
    fuzz::check(std::isfinite(chrfpp.score) && chrfpp.score >= 0 && chrfpp.score <= 100 + 1e-9, "chrF++ in [0, 100]");
  }
  if (longest >= 4) fuzz::check(std::abs(corpus_bleu(hyps, {hyps}).score - 100) < 1e-9, "BLEU of identical text");
  const auto ter = corpus_ter(hyps, {refs});
  fuzz::check(std::isfinite(ter.score) && ter.score >= 0, "TER finite and at least 0");
  fuzz::check(corpus_ter(hyps, {hyps}).edits == 0, "TER of identical text");
  const auto lines = ter_sentence_stats(hyps, {refs});
  // against empty references TER's edits are the hypothesis' words
  const auto hyp_words = ter_sentence_stats(hyps, {std::vector<std::string>(hyps.size())});
  for (size_t i = 0; i < hyps.size(); ++i)
    fuzz::check(lines[i].edits <= std::max(hyp_words[i].edits, lines[i].ref_len),
                "TER: no more edits than the longer side has words");
  if (hyps.empty()) return 0;
  for (const auto& name : text_metric_names()) {
    const auto metric = make_text_metric(name);
    const auto stats = metric->sentence_stats(hyps, {refs});
    const double score = metric->score(column_sums(stats, metric->width()).data());
    fuzz::check(std::isfinite(score), "summed sentence statistics give a finite score");
    const auto other = metric->sentence_stats(refs, {hyps});
    for (auto test : {PairedTest::bootstrap, PairedTest::randomization}) {
      PairedTestOptions o;
      o.test = test;
      o.samples = 20;
      o.confidence_samples = 10;
      const auto results = run_paired_test({metric.get()}, {{stats}, {other}}, o);
      fuzz::check(results[1][0].p_value > 0 && results[1][0].p_value <= 1, "p-value in (0, 1]");
      fuzz::check(std::abs(results[0][0].score - score) < 1e-9, "the baseline keeps its corpus score");
    }
  }
  return 0;
}
