#pragma once
/// Corpus-level BLEU, chrF, chrF++ and TER (bleu.h, chrf.h, ter.h) behind one interface of
/// per-line sufficient statistics whose sums over any set of lines give that set's corpus
/// score: what `ropelab score -m` and the paired significance tests (significance.h) use.

#include <memory>
#include <string>
#include <vector>

#include "ropelab/metrics/bleu.h"
#include "ropelab/metrics/chrf.h"
#include "ropelab/metrics/corpus_metric.h"
#include "ropelab/metrics/ter.h"
#include "ropelab/metrics/tokenize.h"

namespace ropelab {

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

}  // namespace ropelab
