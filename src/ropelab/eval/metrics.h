#pragma once
/// Corpus-level BLEU, chrF and chrF++, compatible with sacreBLEU 2.x defaults (Post 2018):
/// BLEU with the 13a tokenizer, exp smoothing, max order 4, closest reference length,
/// corpus statistics; chrF with character order 6, beta 2, whitespace excluded; chrF++ with
/// word order 2 besides, words split off one leading or trailing ASCII punctuation mark.
/// Inputs are detokenized lines; references are given as one vector per reference set.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ropelab {

/// sacreBLEU's 13a tokenizer (mteval-v13a): drops <skipped>, joins "-\n", unescapes
/// &quot; &amp; &lt; &gt;, splits punctuation, and splits . and , unless next to a digit.
std::string tokenize_13a(const std::string& line);

/// Python's str.lower() for the scripts in Unicode's simple case mapping (via towlower
/// in a UTF-8 locale).
std::string lowercase_utf8(const std::string& text);

enum class BleuSmoothing { none, floor, add_k, exp };

struct BleuOptions {
  BleuSmoothing smoothing = BleuSmoothing::exp;
  /// floor: 0.1 by default; add-k: 1 by default (sacreBLEU's defaults).
  double smooth_value = -1.0;
  bool lowercase = false;
};

struct BleuStats {
  int64_t hyp_len = 0, ref_len = 0;
  std::array<int64_t, 4> matches{}, totals{};
};

struct BleuScore {
  double score = 0;
  std::array<double, 4> precisions{};
  double bp = 0, ratio = 0;
  int64_t hyp_len = 0, ref_len = 0;
  std::string signature;
  /// "BLEU = 50.20 88.9/71.4/40.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 9 ref_len = 9)"
  std::string format() const;
};

/// refs[k][i] is reference k of line i. Throws std::invalid_argument if counts differ.
BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options = {});

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

/// Several chrF variants that differ only in word_order (chrF and chrF++), in one pass over
/// the corpus: the n-grams are counted once. Scores in the order of `variants`.
std::vector<ChrfScore> corpus_chrf(const std::vector<std::string>& hyps,
                                   const std::vector<std::vector<std::string>>& refs,
                                   const std::vector<ChrfOptions>& variants);

std::string to_string(BleuSmoothing smoothing);
BleuSmoothing parse_bleu_smoothing(const std::string& name);

}  // namespace ropelab
