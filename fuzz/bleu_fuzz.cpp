// libFuzzer target: sacreBLEU's 13a tokenizer, BLEU and chrF. The input, split into lines,
// is a hypothesis and a reference per line pair. Scores are finite and within [0, 100],
// hypotheses equal to their references score BLEU 100 once a line has 4 tokens, and
// lowercasing is idempotent.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "fuzz_util.h"
#include "ropelab/eval/metrics.h"

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
  return 0;
}
