#pragma once
/// A run directory: everything needed to resume, evaluate or translate.
///   RUN/config.yaml      the merged, effective config
///   RUN/vocab.txt | spm.model   the tokenizer
///   RUN/checkpoint_last.pt, RUN/checkpoint_best.pt, RUN/checkpoint_STEP.pt (the newest few)
///   RUN/metrics.jsonl    one JSON object per log or validation event

#include "ropelab/config/config.h"
#include "ropelab/data/corpus.h"
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

/// The model a task trains: a Seq2Seq translator or a decoder-only language model.
/// `->` and `*` reach the module itself (parameters, devices, checkpoints).
class TaskModel {
 public:
  TaskModel() = default;
  TaskModel(Seq2Seq model) : seq2seq(std::move(model)) {}
  TaskModel(LanguageModel model) : lm(std::move(model)) {}
  torch::nn::Module* operator->() const;
  torch::nn::Module& operator*() const { return *operator->(); }
  /// Teacher-forced logits (B, T, V) for a batch of the model's task.
  torch::Tensor logits(const Batch& batch) const;
  /// The translator; throws std::runtime_error when this is a language model.
  Seq2Seq& translator();

  Seq2Seq seq2seq{nullptr};
  LanguageModel lm{nullptr};
};

/// Source coordinates for `model`'s encoder: the data's N-d positions when its position
/// encoder has N axes (N > 1), else undefined (token order).
torch::Tensor encoder_positions(const Seq2Seq& model, const torch::Tensor& data_positions);

/// The model a config's task describes, for a vocabulary of `vocab_size`.
TaskModel build_model(const Config& config, int64_t vocab_size);

/// A trained run loaded for inference, in eval mode on `device`.
struct LoadedRun {
  Config config;
  std::unique_ptr<Tokenizer> tokenizer;
  TaskModel model;
};
LoadedRun open_run(const std::string& dir, const std::string& checkpoint, const torch::Device& device);

}  // namespace ropelab
