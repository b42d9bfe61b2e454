#include "ropelab/task/task.h"

namespace ropelab {

bool Task::stream_line(const TaskModel& model, const Tokenizer& tokenizer, const std::string& line,
                       const DecodeRequest& request, const torch::Device& device,
                       const std::function<bool(const std::string&)>& emit) const {
  return emit(decode_lines(model, tokenizer, {line}, request, device).at(0));
}

}  // namespace ropelab
