#pragma once
/// The task registry: one row per task ropelab trains, saying how the task is made, what
/// its model reads, and which evaluation protocols it offers. Callers read a row's traits
/// and protocols (eval/protocols.h runs them); none asks which task it holds.

#include <memory>
#include <string>
#include <vector>

#include "ropelab/task/task.h"

namespace ropelab {

/// The evaluation protocols a task can offer; their typed values are in eval/protocols.h.
enum class ProtocolKind {
  /// decoding the split's sources: BLEU, chrF, chrF++ and TER against its references (with
  /// paired significance between runs), teacher-forced perplexity, exact match
  translation_quality,
  /// perplexity of the split's text in windows {context, stride, RoPE scaling at
  /// evaluation}, and the mean loss at each position of the window
  window_perplexity,
  /// the nats per token that keys beyond a window of W bring, by position bucket, with
  /// bootstrap intervals over documents {context, window} (`ropelab eval --context-gain`)
  context_gain,
  /// retrieval of a key hidden in filler text {lengths, depths} (`ropelab passkey eval`)
  passkey,
  /// the retrieval probes of data/retrieval.h {task, lengths, depths} (`ropelab retrieval eval`)
  retrieval,
};

/// A protocol's name in messages ("window perplexity").
const char* protocol_name(ProtocolKind kind);

struct TaskTraits {
  TaskType type;
  const char* name;              // config.task's value
  bool encoder_decoder = false;  // a source side read by an encoder, and cross attention
  /// In the order `ropelab eval` (the first of translation_quality and window_perplexity)
  /// and ablations run them.
  std::vector<ProtocolKind> protocols;
  std::unique_ptr<Task> (*make)(const Config& config) = nullptr;
  /// The first data setting the task cannot work from (config/validate.cpp reports it).
  SettingProblem (*data_problem)(const Config& config) = nullptr;
  /// Trains on windows of data.context tokens: settings measured in tokens (FIRE's
  /// threshold, the scalings' original length) default to data.context.
  bool windowed = false;

  bool offers(ProtocolKind kind) const;
};

/// Every task, one row each.
const std::vector<TaskTraits>& task_registry();
/// The row of `type`.
const TaskTraits& task_traits(TaskType type);
/// config.task's spelling: the row's name ("translation", "lm").
std::string to_string(TaskType task);
/// The row named `name`; an unknown name fails listing the registry's names.
TaskType parse_task(const std::string& name);

}  // namespace ropelab
