#include "ropelab/task/task_registry.h"

#include <algorithm>

#include "ropelab/task/language_model_task.h"
#include "ropelab/task/translation_task.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

template <class T>
std::unique_ptr<Task> make(const Config& config) {
  return std::make_unique<T>(config);
}

}  // namespace

const char* protocol_name(ProtocolKind kind) {
  switch (kind) {
    case ProtocolKind::translation_quality:
      return "translation quality";
    case ProtocolKind::window_perplexity:
      return "window perplexity";
    case ProtocolKind::context_gain:
      return "context gain";
    case ProtocolKind::passkey:
      return "passkey retrieval";
    case ProtocolKind::retrieval:
      return "retrieval";
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled ProtocolKind");
}

bool TaskTraits::offers(ProtocolKind kind) const {
  return std::find(protocols.begin(), protocols.end(), kind) != protocols.end();
}

const std::vector<TaskTraits>& task_registry() {
  static const std::vector<TaskTraits> rows{
      {TaskType::translation,
       "translation",
       true,
       {ProtocolKind::translation_quality},
       &make<TranslationTask>,
       &TranslationTask::data_problem,
       false},
      {TaskType::lm,
       "lm",
       false,
       {ProtocolKind::window_perplexity, ProtocolKind::context_gain, ProtocolKind::passkey, ProtocolKind::retrieval},
       &make<LanguageModelTask>,
       &LanguageModelTask::data_problem,
       true},
  };
  return rows;
}

const TaskTraits& task_traits(TaskType type) {
  for (const auto& row : task_registry())
    if (row.type == type) return row;
  TORCH_INTERNAL_ASSERT(false, "TaskType ", static_cast<int>(type), " has no row in the task registry");
}

std::string to_string(TaskType type) { return task_traits(type).name; }

TaskType parse_task(const std::string& name) { return parse_row_name(task_registry(), name, "task"); }

std::unique_ptr<Task> make_task(const Config& config) { return task_traits(config.task).make(config); }

}  // namespace ropelab
