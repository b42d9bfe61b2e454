#pragma once
/// Corpus-level chrF and chrF++ (Popović 2015, 2017) compatible with sacreBLEU 2.x
/// defaults: character order 6, beta 2, whitespace excluded; chrF++ with word order 2
/// besides, words split off one leading or trailing ASCII punctuation mark. Per-sentence
/// statistics as in bleu.h.

#include <cstddef>
#include <string>
#include <vector>

namespace ropelab {

struct ChrfOptions {
  int char_order = 6;
  /// Word n-gram orders added to the character ones: 2 is chrF++ (Popović 2017).
  int word_order = 0;
  double beta = 2.0;
  bool lowercase = false;
};

/// chrF++: sacreBLEU's CHRF(word_order=2).
inline ChrfOptions chrf_plus_plus() {
  ChrfOptions o;
  o.word_order = 2;
  return o;
}

struct ChrfScore {
  double score = 0;
  int word_order = 0;
  std::string signature;
  /// "chrF2 = 52.34", "chrF2++ = 50.12"
  std::string format() const;
};

ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options = {});

/// The number of chrF statistics per line: [hypothesis, reference, matches] per order.
inline size_t chrf_stats_width(const ChrfOptions& o) { return static_cast<size_t>(3 * (o.char_order + o.word_order)); }
/// Per variant, the statistics of each line (rows of chrf_stats_width, flattened), taken
/// from the reference with the best sentence-level score, as sacreBLEU does.
std::vector<std::vector<double>> chrf_sentence_stats(const std::vector<std::string>& hyps,
                                                     const std::vector<std::vector<std::string>>& refs,
                                                     const std::vector<ChrfOptions>& variants);
/// chrF of summed statistics (chrf_stats_width(options) of them).
ChrfScore chrf_from_stats(const double* sums, const ChrfOptions& options, size_t nrefs);

/// Several chrF variants that differ only in word_order (chrF and chrF++), in one pass over
/// the corpus: the n-grams are counted once. Scores in the order of `variants`.
std::vector<ChrfScore> corpus_chrf(const std::vector<std::string>& hyps,
                                   const std::vector<std::vector<std::string>>& refs,
                                   const std::vector<ChrfOptions>& variants);

}  // namespace ropelab
