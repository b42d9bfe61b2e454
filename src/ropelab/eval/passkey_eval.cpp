#include "ropelab/eval/passkey_eval.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

#include "ropelab/report/plot.h"

namespace ropelab {

std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device) {
  DecodeRequest request;  // greedy, the key's digits and a little more
  request.search.decode = DecodeOptions().beam(1).max_len_a(0).max_len_b(grid.digits + 2);
  request.search.sample = false;
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<PasskeyCell> cells;
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
    }
  return cells;
}

void write_passkey_results(const std::string& stem, const std::vector<PasskeyCell>& cells, const PasskeyGrid& grid,
                           const std::string& title, const std::string& caption) {
  write_passkey_table(stem + ".csv", cells);
  write_passkey_summary(stem + ".json", cells);
  std::vector<std::string> columns, rows;
  for (auto l : grid.lengths) columns.push_back(std::to_string(l));
  std::vector<std::vector<double>> values(
      grid.depths.size(), std::vector<double>(grid.lengths.size(), std::numeric_limits<double>::quiet_NaN()));
  for (size_t d = 0; d < grid.depths.size(); ++d) {
    char label[32];
    std::snprintf(label, sizeof label, "%g%%", 100 * grid.depths[d]);
    rows.push_back(label);
  }
  for (size_t l = 0; l < grid.lengths.size(); ++l)
    for (size_t d = 0; d < grid.depths.size(); ++d) {
      const auto& c = cells.at(l * grid.depths.size() + d);
      if (c.error.empty()) values[d][l] = c.accuracy();
    }
  HeatMapOptions plot;
  plot.title = title;
  plot.x_label = "document length (characters)";
  plot.y_label = "depth of the key";
  plot.caption = caption;
  write_heat_map(stem + ".svg", columns, rows, values, plot);
}

}  // namespace ropelab
