#pragma once
/// Retrieval documents mixed into a language model's training text (data.retrieval): after
/// each line of the text, as many generated documents (data/retrieval.h) as keep their share
/// of the tokens at data.retrieval.ratio. The documents come from the training seed, so each
/// seed trains on a set of its own, and from streams apart from those evaluation draws.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ropelab/data/options.h"
#include "ropelab/data/retrieval.h"

namespace ropelab {

/// The first problem of `options` as the key under data.retrieval, its value and what is
/// wrong ("ratio", "1.5", "must be in [0, 1)"); an empty key when there is none.
struct MixProblem {
  std::string key, value, what;
};
MixProblem retrieval_mix_problem(const RetrievalMixOptions& options);

class RetrievalMix {
 public:
  /// `corpus`: the haystack when options.corpus is "" (the training text). Throws naming the
  /// file when a haystack cannot be read.
  RetrievalMix(const RetrievalMixOptions& options, const std::string& corpus, uint64_t seed);
  ~RetrievalMix();
  /// After a text line of `tokens` tokens: hands `emit` documents until they hold their
  /// share; `emit` returns each document's tokens.
  void after_line(int64_t tokens, const std::function<int64_t(const std::string&)>& emit);
  int64_t documents() const { return documents_; }
  /// "(N retrieval documents, P% of the tokens)": for the training log's data line.
  std::string summary() const;

 private:
  RetrievalMixOptions options_;
  std::vector<RetrievalTask> tasks_;
  std::unique_ptr<Haystack> haystack_;
  uint64_t seed_;
  SplitMix64 shapes_;
  int64_t documents_ = 0, text_tokens_ = 0, mixed_tokens_ = 0;
};

}  // namespace ropelab
