#pragma once
/// The evaluation protocols of the task registry as typed values, and running one on a
/// split (`ropelab eval`). A task offers protocols (TaskTraits::protocols); evaluation asks
/// for one and never for a task.

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "ropelab/task/task_registry.h"

namespace ropelab {

/// What one evaluation of a split reports (run/eval_files.h writes its files).
struct EvalReport {
  /// The report's fields, in this order, after split and checkpoint.
  nlohmann::ordered_json fields;
  std::string file_tag;                 // the split's name plus what sets the protocol (".ctx128")
  std::vector<std::string> hypotheses;  // the decoded outputs of each input line, when any
  /// Per evaluated item (a language model's windows), statistics for paired tests between
  /// runs, under the header `item_columns`.
  std::vector<std::string> item_columns;
  std::vector<std::vector<double>> items;
  /// The mean loss per position of the window (WindowPerplexity::per_position).
  std::vector<double> position_loss, position_tokens;
  std::string summary;                // printed to stdout
  std::vector<std::string> warnings;  // printed to stderr
  /// Reports of the same passes under another protocol, written before this one (context
  /// gain: the window perplexity of its full pass, with the loss by position).
  std::vector<EvalReport> companions;
};

/// ProtocolKind::translation_quality: the split's sources decoded and scored against its
/// references (eval/translation_quality.h).
struct TranslationQuality {};

/// ProtocolKind::window_perplexity: perplexity in windows of `context` tokens (0:
/// data.context), consecutive or sliding by `stride` (0: the context) and scoring each
/// window's last `stride` tokens; `per_position`: also the mean loss at each position of
/// the window (eval/window_perplexity.h).
struct WindowPerplexity {
  int64_t context = 0;
  int64_t stride = 0;
  bool per_position = false;
};

/// ProtocolKind::context_gain: the loss of every token with only the last `window` keys
/// visible minus its loss with the whole window of `context` tokens (0: data.context),
/// by the token's position in the window, in buckets [W, 2W), [2W, 4W), ... up to the
/// context: the nats per token that keys farther than the window bring
/// (eval/context_gain.h).
struct ContextGain {
  int64_t context = 0;
  int64_t window = 0;
};

/// The protocols `ropelab eval` runs (passkey retrieval has its own command).
using EvalProtocol = std::variant<TranslationQuality, WindowPerplexity, ContextGain>;

ProtocolKind protocol_kind(const EvalProtocol& protocol);

/// The protocol `ropelab eval` runs on the run in `run_dir`: context gain over a window of
/// `gain_window` keys when that is set (> 0; no stride or positions then), else window
/// perplexity with these settings where its task offers it, else translation quality, for
/// which the window settings must be unset (0, false): otherwise std::runtime_error naming
/// the flags.
EvalProtocol eval_protocol(const Task& task, const WindowPerplexity& window, int64_t gain_window,
                           const std::string& run_dir);

/// Runs `protocol` on the split at `path` (`name` as the user gave it); std::runtime_error
/// when the run's task does not offer it.
EvalReport evaluate(const Task& task, const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                    const std::string& path, const DecodeRequest& request, const EvalProtocol& protocol,
                    const torch::Device& device);

}  // namespace ropelab
