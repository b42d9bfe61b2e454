#include "ropelab/eval/passkey_eval.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

namespace ropelab {

std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device,
                                          const PasskeyProgress& progress) {
  DecodeRequest request;  // greedy, the key's digits and a little more
  request.search.decode = DecodeOptions().beam(1).max_len_a(0).max_len_b(grid.digits + 2);
  request.search.sample = false;
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<PasskeyCell> cells;
  const size_t total = grid.lengths.size() * grid.depths.size();
  uint64_t index = 0;  // one document stream over the grid: no two cells share a document
  for (const auto length : grid.lengths)
    for (const auto depth : grid.depths) {
      PasskeyCell cell;
      cell.length = length;
      cell.depth = depth;
      std::vector<PasskeyDocument> documents;
      std::vector<std::string> prompts;
      PasskeyOptions options;
      options.length = length;
      options.depth = depth;
      options.digits = grid.digits;
      for (int64_t k = 0; k < grid.documents; ++k) {
        documents.push_back(make_passkey_document(options, grid.seed, index++));
        prompts.push_back(documents.back().prompt);
      }
      try {
        const auto outputs = task.decode_lines(model, tokenizer, prompts, request, device);
        for (size_t k = 0; k < documents.size(); ++k) cell.correct += passkey_retrieved(outputs[k], documents[k].key);
        cell.documents = static_cast<int64_t>(documents.size());
      } catch (const c10::Error& e) {  // the message, without LibTorch's C++ backtrace
        cell.error = e.what_without_backtrace();
      } catch (const std::exception& e) {
        cell.error = e.what();
      }
      cells.push_back(cell);
      if (progress) progress(cells.back(), cells.size(), total);
    }
  return cells;
}

}  // namespace ropelab
