#pragma once
/// Corpus-level BLEU (Papineni et al. 2002) compatible with sacreBLEU 2.x defaults (Post
/// 2018): the 13a tokenizer, exp smoothing, max order 4, closest reference length, corpus
/// statistics. Inputs are detokenized lines; references are given as one vector per
/// reference set. Per-sentence statistics whose sums over any set of sentences give that
/// set's score (bleu_sentence_stats, bleu_from_stats) are what the paired significance
/// tests resample (significance.h).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ropelab {

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

/// One BleuStats per line: its length, the closest reference length, matches and totals.
std::vector<BleuStats> bleu_sentence_stats(const std::vector<std::string>& hyps,
                                           const std::vector<std::vector<std::string>>& refs,
                                           const BleuOptions& options = {});
/// BLEU of summed statistics (`nrefs` for the signature).
BleuScore bleu_from_stats(const BleuStats& total, const BleuOptions& options, size_t nrefs);

std::string to_string(BleuSmoothing smoothing);
BleuSmoothing parse_bleu_smoothing(const std::string& name);

}  // namespace ropelab
