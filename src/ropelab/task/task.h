#pragma once
/// The task seam: everything that differs between what ropelab trains (translation,
/// language modelling, and tasks to come) sits behind two interfaces.
///   Task        data (tokenizer texts, token store, examples, batches), the model it
///               builds, decoding lines, evaluation of a split and its report
///   TaskModel   the built model as training (teacher-forced logits), decoding (a
///               DecoderState for the searches) and checkpoints (the module) see it
/// The trainer, evaluator, searches and apps call these and never ask which task runs.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ropelab/config/config.h"
#include "ropelab/config/experiment.h"
#include "ropelab/data/batching.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/decode/search.h"
#include "ropelab/eval/paired_items.h"

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
  /// holds all its (B, T, V) logits.
  virtual torch::Tensor hidden(const Batch& batch) const = 0;
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

/// What `ropelab eval` reports for one split.
struct EvalReport {
  /// Written to RUN/eval.<file_tag>.json, in this order, after split and checkpoint.
  nlohmann::ordered_json fields;
  std::string file_tag;                 // the split's name plus what sets the protocol (".ctx128")
  std::vector<std::string> hypotheses;  // written to RUN/hyp.<split>.txt when not empty
  /// Per evaluated item (a language model's windows), statistics for paired tests between
  /// runs, written to RUN/eval.<file_tag>.items.tsv under the header `item_columns`.
  std::vector<std::string> item_columns;
  std::vector<std::vector<double>> items;
  /// The mean loss per position of the window (EvalProtocol::per_position): written to
  /// RUN/eval.<file_tag>.positions.csv and drawn in .positions.svg.
  std::vector<double> position_loss, position_tokens;
  std::string summary;                // printed to stdout
  std::vector<std::string> warnings;  // printed to stderr
};

/// How a language model's perplexity is measured (`ropelab eval --context --stride
/// --per-position`); a translation task ignores it.
struct EvalProtocol {
  int64_t context = 0;        // window length; 0: data.context
  int64_t stride = 0;         // sliding windows scoring their last `stride` tokens; 0: = context
  bool per_position = false;  // also the mean loss at each position of the window
};

/// One evaluation `ropelab ablate` runs on the test split and the table columns it reads.
struct AblationEval {
  std::string file;               // RUN/eval.test....json, RUN/passkey.json
  std::vector<std::string> args;  // `ropelab ARGS --run RUN`: {"eval", "--split", "test", ...}
  std::vector<std::pair<std::string, std::string>> columns;  // {json key, column name}
  std::string items_file;      // what ablation_items reads (RUN/hyp.test.txt, RUN/eval....items.tsv); "": none
  std::string positions_file;  // language models' plain evaluations: per-position losses (--per-position)
  int64_t context = 0;         // language models: the evaluation context
};

/// What `ropelab eval --set K=V ...` adds to its report's name, so that evaluations of one
/// run under other settings keep their own: ".set_yarn_8" for --set ...type=yarn --set
/// ...factor=8; "" without overrides.
std::string evaluation_tag(const std::vector<std::string>& overrides);

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

  // --- decoding and evaluation ---
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
  /// Evaluates the split at `path` (`name` as the user gave it), measured as `protocol`
  /// says where the task takes one (takes_eval_context).
  virtual EvalReport evaluate(const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                              const std::string& path, const DecodeRequest& request, const EvalProtocol& protocol,
                              const torch::Device& device) const = 0;
  /// Whether evaluation takes a context length (`ropelab eval --context`).
  virtual bool takes_eval_context() const = 0;
  /// The test evaluations of an ablation run, as the experiment file asks.
  virtual std::vector<AblationEval> ablation_evals(const TestEvaluations& asked) const = 0;
  /// A finished ablation run's test outputs as items for paired tests between runs, per
  /// column (from the files ablation_evals names as items_file).
  virtual std::vector<PairedItems> ablation_items(const std::string& run_dir, const TestEvaluations& asked) const = 0;

 protected:
  /// config.model with the vocabulary's size and padding id.
  TransformerOptions model_options(int64_t vocab_size) const {
    return TransformerOptions(config_.model).vocab_size(vocab_size).pad_id(kPadId);
  }
  Config config_;
};

/// The task `config.task` names (a plain switch; see task.cpp).
std::unique_ptr<Task> make_task(const Config& config);

}  // namespace ropelab
