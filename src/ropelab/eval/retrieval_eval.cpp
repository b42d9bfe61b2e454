#include "ropelab/eval/retrieval_eval.h"

#include <c10/util/Exception.h>

#include <memory>

namespace ropelab {

std::vector<double> RetrievalGrid::cell_depths() const {
  return retrieval_has_depth(task.task) ? depths : std::vector<double>{0};
}

std::vector<bool> answers_given(const TaskModel& model, const Tokenizer& tokenizer, const RetrievalDocument& document,
                                const torch::Device& device) {
  // EOS (the boundary a document follows), then the text in pieces cut at the answers' edges
  std::vector<int64_t> ids{kEosId};
  std::vector<std::pair<size_t, size_t>> spans;  // each answer's tokens [begin, end) in `ids`
  size_t cursor = 0;
  auto append = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    const auto piece = tokenizer.encode(document.text.substr(begin, end - begin));
    ids.insert(ids.end(), piece.begin(), piece.end());
  };
  for (const auto& a : document.answers) {
    append(cursor, a.begin);
    const size_t first = ids.size();
    append(a.begin, a.end);
    spans.emplace_back(first, ids.size());
    cursor = a.end;
  }
  // the inputs up to the last answer's last token; token t is predicted at position t - 1
  const auto inputs = static_cast<int64_t>(spans.back().second) - 1;
  Batch batch;
  batch.target_in =
      torch::tensor(std::vector<int64_t>(ids.begin(), ids.begin() + inputs), torch::kLong).unsqueeze(0).to(device);
  std::vector<int64_t> rows, expected;
  for (const auto& [begin, end] : spans)
    for (size_t t = begin; t < end; ++t) rows.push_back(static_cast<int64_t>(t) - 1), expected.push_back(ids[t]);
  torch::NoGradGuard no_grad;
  const auto hidden = model.hidden(batch);  // (1, inputs, D)
  const auto index = torch::tensor(rows, torch::kLong).to(device);
  const auto chosen = model.project(hidden[0].index_select(0, index)).argmax(-1).cpu();  // (answer tokens,)
  const auto c = chosen.accessor<int64_t, 1>();
  std::vector<bool> given;
  size_t k = 0;
  for (const auto& [begin, end] : spans) {
    bool all = true;
    for (size_t t = begin; t < end; ++t, ++k) all = all && c[static_cast<int64_t>(k)] == expected[k];
    given.push_back(all);
  }
  return given;
}

std::vector<PasskeyCell> evaluate_retrieval(const TaskModel& model, const Tokenizer& tokenizer,
                                            const RetrievalGrid& grid, const torch::Device& device,
                                            const std::function<void(const PasskeyCell&, size_t, size_t)>& progress) {
  std::unique_ptr<Haystack> haystack;
  if (grid.task.task != RetrievalTask::mqar) haystack = std::make_unique<Haystack>(grid.corpus);
  const auto depths = grid.cell_depths();
  const size_t total = grid.lengths.size() * depths.size();
  model->eval();
  std::vector<PasskeyCell> cells;
  for (const auto length : grid.lengths)
    for (const auto depth : depths) {
      PasskeyCell cell;
      cell.length = length, cell.depth = depth;
      auto options = grid.task;
      options.length = length, options.depth = depth;
      const auto c = static_cast<uint64_t>(cells.size());  // its documents: c * documents ... of the stream
      try {
        for (int64_t k = 0; k < grid.documents; ++k) {
          const auto d = make_retrieval_document(options, haystack.get(), grid.seed,
                                                 c * static_cast<uint64_t>(grid.documents) + static_cast<uint64_t>(k));
          for (const bool given : answers_given(model, tokenizer, d, device)) cell.correct += given, ++cell.documents;
        }
      } catch (const c10::Error& e) {  // a context the model cannot take: the cell says why
        const std::string what = e.what_without_backtrace();
        cell = PasskeyCell{length, depth, 0, 0, what.empty() ? "an exception without a message" : what};
      }
      cells.push_back(cell);
      if (progress) progress(cells.back(), cells.size(), total);
    }
  return cells;
}

}  // namespace ropelab
