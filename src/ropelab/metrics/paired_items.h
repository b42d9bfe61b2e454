#pragma once
/// What a finished evaluation offers paired tests between runs (`ropelab ablate`): per
/// results-table column, a metric and each evaluated item's sufficient statistics
/// (translation: each test sentence's BLEU statistics; language models: each evaluation
/// window's NLL and token count), plus the small table file LM evaluations leave them in.

#include <memory>
#include <string>
#include <vector>

#include "ropelab/metrics/metrics.h"

namespace ropelab {

struct PairedItems {
  std::string column;  // the results-table column it tests ("test_bleu", "test_ppl@128")
  std::shared_ptr<const CorpusMetric> metric;
  std::vector<double> stats;  // items x metric->width(), flattened
  /// Language models: each item's unit for a bootstrap (its document, or its own index for
  /// a block of a stream); empty: every item is its own unit.
  std::vector<int64_t> units;
  size_t items() const { return metric && metric->width() ? stats.size() / metric->width() : 0; }
};

/// Perplexity from summed [NLL, tokens]: exp(NLL / tokens); named "ppl".
std::shared_ptr<const CorpusMetric> perplexity_metric();
/// A mean per token from summed [value, tokens]: value / tokens (context gain in nats per
/// token); named "nats/token".
std::shared_ptr<const CorpusMetric> per_token_metric();

/// The header of a table write_item_table wrote (its column names); throws naming the file.
std::vector<std::string> read_item_header(const std::string& path);

/// Writes a tab-separated table: a header of `columns`, then one row per item, doubles in
/// their shortest exact form.
void write_item_table(const std::string& path, const std::vector<std::string>& columns,
                      const std::vector<std::vector<double>>& rows);
/// Reads a table write_item_table wrote, checking its header is `columns`; rows flattened.
/// Throws std::runtime_error naming the file and line otherwise.
std::vector<double> read_item_table(const std::string& path, const std::vector<std::string>& columns);

}  // namespace ropelab
