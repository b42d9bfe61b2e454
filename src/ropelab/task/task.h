#pragma once
/// The task seam: everything that differs between what ropelab trains (translation,
/// language modelling, and tasks to come) sits behind two interfaces.
///   Task        data (tokenizer texts, token store, examples, batches), the model it
///               builds, decoding lines
///   TaskModel   the built model as training (teacher-forced logits), decoding (a
///               DecoderState for the searches) and checkpoints (the module) see it
/// The trainer, evaluator, searches and apps call these and never ask which task runs.
/// Each task has a row in the task registry (task/task_registry.h): its traits and the
/// evaluation protocols it offers, which eval/ runs.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ropelab/data/batching.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/decode/search.h"
#include "ropelab/options/config.h"

namespace ropelab {

/// A task's model. `->` reaches the module itself (parameters, devices, checkpoints).
class TaskModel {
 public:
  virtual ~TaskModel() = default;
  virtual torch::nn::Module& module() const = 0;
  torch::nn::Module* operator->() const { return &module(); }
  /// Teacher-forced logits (B, T, V) for a batch its task collated.
  torch::Tensor logits(const Batch& batch) const { return project(hidden(batch)); }
  /// The teacher-forced decoder output (B, T, D) that the output projection turns into
  /// logits: evaluation projects it a few positions at a time, so that a long window never
  /// holds all its (B, T, V) logits. With `outputs` in (0, T), the last `outputs` positions'
  /// alone (B, outputs, D), which the model then computes alone (StackInputs::outputs).
  virtual torch::Tensor hidden(const Batch& batch, int64_t outputs = 0) const = 0;
  /// hidden states (..., D) -> logits (..., V)
  virtual torch::Tensor project(const torch::Tensor& hidden) const = 0;
  /// Starts decoding a batch of inputs (see Task::decode_inputs): the decoder state, the
  /// start tokens and each row's output limit (options.max_len_a/b of the input length).
  virtual Decoding start_decoding(const Batch& inputs, const DecodeOptions& options, bool use_cache) const = 0;
};

/// Decoding lines of text (`ropelab translate`, `ropelab generate`, `ropelab eval`).
struct DecodeRequest {
  SearchOptions search;
  /// Input-token budget per decoding batch (beams multiply it).
  int64_t max_tokens = 2048;
  /// false: recompute the decoder over the whole prefix each step (the reference).
  bool use_cache = true;
};

/// A setting a task cannot work from: its dotted key, its value and what is wrong
/// ("data.format", "text", "holds no pairs for task translation (expected tsv or
/// parallel)"); an empty key when there is none.
struct SettingProblem {
  std::string key, value, what;
};

class Task {
 public:
  explicit Task(Config config) : config_(std::move(config)) {}
  virtual ~Task() = default;
  const Config& config() const { return config_; }

  // --- data ---
  /// Streams every training text the tokenizer learns from.
  virtual void tokenizer_texts(const std::function<void(const std::string&)>& emit) const = 0;
  /// Tokenizes the training split into a token store at `path`; returns one line saying
  /// what was kept and skipped (the counts of the store's writer).
  virtual std::string write_training_store(const Tokenizer& tokenizer, const std::string& path) const = 0;
  /// Maps the store written at `path`.
  virtual std::unique_ptr<TokenStore> open_training_store(const Tokenizer& tokenizer,
                                                          const std::string& path) const = 0;
  /// The teacher-forced examples of the split at `path` (validation, perplexity);
  /// `*skipped` counts what could not be used (empty lines or sides).
  virtual std::vector<Example> read_examples(const std::string& path, const Tokenizer& tokenizer,
                                             int64_t* skipped = nullptr) const = 0;
  /// The training log's data line: `train` examples in the store (with the summary
  /// write_training_store returned) and `valid` validation examples.
  virtual std::string describe_data(size_t train, const std::string& store_summary, size_t valid) const = 0;
  /// Pads the examples at `indices` into a training or evaluation batch.
  virtual Batch collate(const ExampleSet& examples, const std::vector<size_t>& indices,
                        const torch::Device& device) const = 0;

  // --- model ---
  virtual std::shared_ptr<TaskModel> build_model(int64_t vocab_size) const = 0;

  // --- decoding ---
  /// What the model is called in messages ("translator", "language model").
  virtual std::string model_noun() const = 0;
  /// The name users give decoding for this task ("translate", "generate").
  virtual std::string decode_command() const = 0;
  /// The lines a split at `path` gives to decode_lines (source sentences, prompts).
  virtual std::vector<std::string> decode_inputs(const std::string& path) const = 0;
  /// Decodes each line (a source sentence, a prompt); one output line per input, in
  /// order. Inputs over the task's length limit are truncated and counted in `*truncated`.
  virtual std::vector<std::string> decode_lines(const TaskModel& model, const Tokenizer& tokenizer,
                                                const std::vector<std::string>& lines, const DecodeRequest& request,
                                                const torch::Device& device, int64_t* truncated = nullptr) const = 0;
  /// Decodes one line as decode_lines does, handing its output to `emit` piece by piece as
  /// the tokens are chosen (`ropelab generate`, flushed per token); `emit` returning false
  /// stops the search. Returns whether the line ran to its end. The default hands over
  /// decode_lines' output whole.
  virtual bool stream_line(const TaskModel& model, const Tokenizer& tokenizer, const std::string& line,
                           const DecodeRequest& request, const torch::Device& device,
                           const std::function<bool(const std::string&)>& emit) const;

 protected:
  /// config.model with the vocabulary's size and padding id.
  TransformerOptions model_options(int64_t vocab_size) const {
    return TransformerOptions(config_.model).vocab_size(vocab_size).pad_id(kPadId);
  }
  Config config_;
};

/// The task `config.task` names, made by its row of the task registry.
std::unique_ptr<Task> make_task(const Config& config);

}  // namespace ropelab
