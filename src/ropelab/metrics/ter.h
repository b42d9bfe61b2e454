#pragma once
/// TER (Snover et al. 2006) as sacreBLEU 2.x's Tercom-compatible implementation (ter.cpp).
/// Per-sentence statistics as in bleu.h.

#include <cstdint>
#include <string>
#include <vector>

namespace ropelab {

struct TerOptions {
  /// sacreBLEU's default: case-insensitive (case:lc).
  bool case_sensitive = false;
};

/// Per line: the fewest edits (shifts included) to any reference, and the references'
/// average length in words.
struct TerStats {
  double edits = 0, ref_len = 0;
};

struct TerScore {
  double score = 0;  // 100 * edits / ref_len
  double edits = 0, ref_len = 0;
  std::string signature;
  /// "TER = 57.14"
  std::string format() const;
};

TerScore corpus_ter(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                    const TerOptions& options = {});
std::vector<TerStats> ter_sentence_stats(const std::vector<std::string>& hyps,
                                         const std::vector<std::vector<std::string>>& refs,
                                         const TerOptions& options = {});
TerScore ter_from_stats(const TerStats& total, const TerOptions& options, size_t nrefs);

/// Tercom's edit count for one pair of word sequences (sacreBLEU's translation_edit_rate):
/// block shifts, greedily the one that saves most, then a beam-limited edit distance.
/// Returns the edits; the reference length is ref.size().
int64_t translation_edits(const std::vector<std::string>& hyp, const std::vector<std::string>& ref);

}  // namespace ropelab
