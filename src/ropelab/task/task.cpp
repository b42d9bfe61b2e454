#include "ropelab/task/task.h"

#include <cctype>

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

bool Task::stream_line(const TaskModel& model, const Tokenizer& tokenizer, const std::string& line,
                       const DecodeRequest& request, const torch::Device& device,
                       const std::function<bool(const std::string&)>& emit) const {
  return emit(decode_lines(model, tokenizer, {line}, request, device).at(0));
}

std::string evaluation_tag(const std::vector<std::string>& overrides) {
  if (overrides.empty()) return "";
  std::string tag = ".set";
  for (const auto& o : overrides) {
    tag += '_';
    for (char c : o.substr(o.find('=') + 1))
      tag += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ? c : '-';
  }
  return tag;
}

}  // namespace ropelab
