#pragma once
/// Translating and scoring a split with a trained run (`ropelab eval`, `ropelab translate`).

#include "ropelab/eval/metrics.h"
#include "ropelab/train/run.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ropelab {

struct TranslateOptions {
  DecodeOptions decode;
  /// Source-token budget per decoding batch (beams multiply it).
  int64_t max_tokens = 2048;
  /// false: recompute the decoder over the whole prefix each step (the seed tutorial's way).
  bool use_cache = true;
};

/// Translates `lines` in batches of similar length; returns one line per input, in order.
/// Empty lines stay empty. Lines over data.max_len tokens are truncated and counted
/// in `*truncated`.
std::vector<std::string> translate_lines(LoadedRun& run, const std::vector<std::string>& lines,
                                         const TranslateOptions& options, const torch::Device& device,
                                         int64_t* truncated = nullptr);

struct EvalReport {
  /// A language-model run: only perplexity (and tokens, chunks in `sentences`) is set.
  bool language_model = false;
  int64_t tokens = 0;
  std::vector<std::string> hypotheses;
  BleuScore bleu;
  ChrfScore chrf;
  double perplexity = 0;  // teacher-forced, un-smoothed
  double exact_match = 0; // fraction of hypotheses equal to their reference
  int64_t sentences = 0, truncated = 0, skipped_empty = 0;
  double decode_seconds = 0;
  /// The report as one JSON object.
  std::string json(const std::string& split, const std::string& checkpoint) const;
};

/// Translates the split at `path` (the run's data format), scores it against its
/// targets with BLEU and chrF, and computes teacher-forced perplexity. For a language
/// model: perplexity of the text at `path` in consecutive data.context-token chunks.
EvalReport evaluate_split(LoadedRun& run, const std::string& path, const TranslateOptions& options,
                          const torch::Device& device);

}  // namespace ropelab
