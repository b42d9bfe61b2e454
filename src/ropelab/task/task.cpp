#include "ropelab/task/task.h"

#include "ropelab/task/language_model_task.h"
#include "ropelab/task/translation_task.h"

namespace ropelab {

std::unique_ptr<Task> make_task(const Config& config) {
  switch (config.task) {
    case TaskType::translation:
      return std::make_unique<TranslationTask>(config);
    case TaskType::lm:
      return std::make_unique<LanguageModelTask>(config);
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled TaskType");
}

}  // namespace ropelab
