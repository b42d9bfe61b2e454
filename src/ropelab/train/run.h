#pragma once
/// A run directory: everything needed to resume, evaluate or translate.
///   RUN/config.yaml      the merged, effective config
///   RUN/vocab.txt | spm.model   the tokenizer
///   RUN/checkpoint_last.pt, RUN/checkpoint_best.pt, RUN/checkpoint_STEP.pt (the newest few)
///   RUN/metrics.jsonl    one JSON object per log or validation event

#include "ropelab/config/config.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/model/transformer.h"

#include <memory>
#include <string>
#include <vector>

namespace ropelab {

struct RunPaths {
  explicit RunPaths(std::string dir);
  std::string dir, config, last, best, metrics;
  /// "best" | "last" | a file path -> the checkpoint file.
  std::string checkpoint(const std::string& which) const;
  /// RUN/checkpoint_STEP.pt, kept for the newest train.keep_checkpoints validations.
  std::string numbered(int64_t step) const;
  /// The numbered checkpoints present, oldest first.
  std::vector<std::string> numbered_checkpoints() const;
};

/// The Seq2Seq model a config describes, for a vocabulary of `vocab_size`.
Seq2Seq build_model(const Config& config, int64_t vocab_size);

/// A trained run loaded for inference, in eval mode on `device`.
struct LoadedRun {
  Config config;
  std::unique_ptr<Tokenizer> tokenizer;
  Seq2Seq model{nullptr};
};
LoadedRun open_run(const std::string& dir, const std::string& checkpoint, const torch::Device& device);

}  // namespace ropelab
