#pragma once
/// Corpus-level BLEU, chrF, chrF++ and TER, compatible with sacreBLEU 2.x defaults (Post 2018):
/// BLEU with the 13a tokenizer, exp smoothing, max order 4, closest reference length,
/// corpus statistics; chrF with character order 6, beta 2, whitespace excluded; chrF++ with
/// word order 2 besides, words split off one leading or trailing ASCII punctuation mark;
/// TER (Snover et al. 2006) as sacreBLEU's Tercom-compatible implementation (ter.cpp).
/// Inputs are detokenized lines; references are given as one vector per reference set.
///
/// Each metric is also available as per-sentence sufficient statistics whose sums over
/// any set of sentences give that set's corpus score (*_sentence_stats, *_from_stats):
/// what the paired significance tests resample (significance.h).

#include <array>
#include <cstdint>
#include <memory>
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

/// One BleuStats per line: its length, the closest reference length, matches and totals.
std::vector<BleuStats> bleu_sentence_stats(const std::vector<std::string>& hyps,
                                           const std::vector<std::vector<std::string>>& refs,
                                           const BleuOptions& options = {});
/// BLEU of summed statistics (`nrefs` for the signature).
BleuScore bleu_from_stats(const BleuStats& total, const BleuOptions& options, size_t nrefs);

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

std::string to_string(BleuSmoothing smoothing);
BleuSmoothing parse_bleu_smoothing(const std::string& name);

// --- metrics as sufficient statistics -------------------------------------------------------

/// A corpus metric as a function of per-item statistics summed over a corpus: `width`
/// numbers per line (or per evaluation window) whose column sums give the score.
class CorpusMetric {
 public:
  virtual ~CorpusMetric() = default;
  /// sacreBLEU's name for it: "BLEU", "chrF2", "chrF2++", "TER".
  virtual std::string name() const = 0;
  virtual size_t width() const = 0;
  /// The score of `width()` summed statistics.
  virtual double score(const double* sums) const = 0;
};

/// A metric of hypotheses against references.
class TextMetric : public CorpusMetric {
 public:
  /// Per line, width() statistics, flattened.
  virtual std::vector<double> sentence_stats(const std::vector<std::string>& hyps,
                                             const std::vector<std::vector<std::string>>& refs) const = 0;
  /// The score line sacreBLEU prints ("BLEU = 15.86 48.1/21.0/11.0/6.0 (BP = ...)", "TER = 70.12").
  virtual std::string line(const double* sums) const = 0;
  virtual std::string signature(size_t nrefs) const = 0;
};

/// The options every text metric is made with.
struct TextMetricOptions {
  bool lowercase = false;  // BLEU and chrF; TER is case-insensitive unless `case_sensitive_ter`
  bool case_sensitive_ter = false;
  BleuSmoothing smoothing = BleuSmoothing::exp;
};

/// The metric `-m` names: "bleu", "chrf", "chrf++" (chrF with word order 2) or "ter".
/// Throws std::invalid_argument naming the known ones otherwise.
std::unique_ptr<TextMetric> make_text_metric(const std::string& name, const TextMetricOptions& options = {});
/// The names make_text_metric knows, in that order.
const std::vector<std::string>& text_metric_names();

/// The sentence statistics of each named metric (names as make_text_metric takes them),
/// computed concurrently, one thread per metric; chrF and chrF++ share one pass.
std::vector<std::vector<double>> text_metric_stats(const std::vector<std::string>& names,
                                                   const TextMetricOptions& options,
                                                   const std::vector<std::string>& hyps,
                                                   const std::vector<std::vector<std::string>>& refs);

/// Column sums of `stats` (rows of `width`).
std::vector<double> column_sums(const std::vector<double>& stats, size_t width);

/// Throws std::invalid_argument unless there is a reference set and each has a line per hypothesis.
void check_line_counts(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs);
/// "version:ropelab-X.Y.Z", the last field of every signature.
std::string metric_version_tag();
/// printf's %.Nf.
std::string format_fixed(double value, int digits);

}  // namespace ropelab
