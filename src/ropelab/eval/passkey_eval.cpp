#include "ropelab/eval/passkey_eval.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "ropelab/util/clock.h"

namespace ropelab {

std::vector<PasskeyCell> score_passkey_grid(const PasskeyGrid& grid, const PasskeyContinuations& continue_prompts,
                                            const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored) {
  const size_t total = grid.lengths.size() * grid.depths.size();
  if (scored.size() > total)
    throw std::invalid_argument(std::to_string(scored.size()) + " cells scored already, but the grid has " +
                                std::to_string(total));
  std::vector<PasskeyCell> cells;
  for (const auto length : grid.lengths)
    for (const auto depth : grid.depths) {
      const size_t c = cells.size();  // the cell's number: its documents are c * documents ... of the stream
      if (c < scored.size()) {        // a cell scored before: it must be this cell, whole
        const auto& s = scored[c];
        const auto mismatch = passkey_cell_mismatch(grid, c, s);
        if (!mismatch.empty()) throw std::invalid_argument("scored cell " + std::to_string(c + 1) + ": " + mismatch);
        if (s.error.empty()) {  // a cell that failed is scored again: its error may have passed (memory)
          cells.push_back(s);
          continue;
        }
      }
      PasskeyCell cell;
      cell.length = length;
      cell.depth = depth;
      PasskeyOptions options;
      options.length = length;
      options.depth = depth;
      options.digits = grid.digits;
      std::vector<PasskeyDocument> documents;
      std::vector<std::string> prompts;
      for (int64_t k = 0; k < grid.documents; ++k) {
        const auto index = static_cast<uint64_t>(c) * static_cast<uint64_t>(grid.documents) + static_cast<uint64_t>(k);
        documents.push_back(make_passkey_document(options, grid.seed, index));
        prompts.push_back(documents.back().prompt);
      }
      // the reason a cell failed; never empty, since an empty error is what says "evaluated"
      const auto reason = [](const char* what) { return *what ? std::string(what) : "an exception without a message"; };
      std::vector<std::string> outputs;
      try {
        outputs = continue_prompts(prompts);
      } catch (const c10::Error& e) {  // the message, without LibTorch's C++ backtrace
        cell.error = reason(e.what_without_backtrace());
      } catch (const std::exception& e) {
        cell.error = reason(e.what());
      }
      if (cell.error.empty()) {  // a continuation per prompt is the callback's contract, not the model's
        TORCH_INTERNAL_ASSERT(outputs.size() == prompts.size(), "passkey: ", outputs.size(), " continuations of ",
                              prompts.size(), " prompts");
        for (size_t k = 0; k < documents.size(); ++k) cell.correct += passkey_retrieved(outputs[k], documents[k].key);
        cell.documents = static_cast<int64_t>(documents.size());
      }
      cells.push_back(cell);
      if (progress) progress(cells.back(), cells.size(), total);
    }
  return cells;
}

std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device,
                                          const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored) {
  DecodeRequest request;  // greedy, the key's digits and a little more
  request.search.decode = DecodeOptions().beam(1).max_len_a(0).max_len_b(grid.digits + 2);
  request.search.sample = false;
  torch::NoGradGuard no_grad;
  model->eval();
  return score_passkey_grid(
      grid,
      [&](const std::vector<std::string>& prompts) {
        return task.decode_lines(model, tokenizer, prompts, request, device);
      },
      progress, scored);
}

std::vector<PasskeyCell> score_passkey_resuming(const PasskeyGrid& grid, const std::string& partial,
                                                const std::string& key, const PasskeyScorer& score, std::ostream& log) {
  bool other = false;
  const auto scored = read_passkey_partial(partial, key, grid, &other);
  if (other)
    log << "passkey: " << partial
        << " holds the cells of another grid, checkpoint or setting: scoring every cell (they are replaced)"
        << std::endl;
  const auto failed =
      std::count_if(scored.begin(), scored.end(), [](const PasskeyCell& c) { return !c.error.empty(); });
  if (!scored.empty())
    log << "passkey: " << scored.size() - static_cast<size_t>(failed) << " of "
        << grid.lengths.size() * grid.depths.size() << " cells scored before, from " << partial
        << (failed ? " (" + std::to_string(failed) + " that failed are scored again)" : std::string()) << std::endl;
  // a line per cell as it is scored: a grid to 32k characters takes the better part of an
  // hour on one core
  const double start = now_seconds();
  auto so_far = scored;  // the grid's first cells: a failed cell scored again takes its own place
  const auto progress = [&](const PasskeyCell& cell, size_t done, size_t total) {
    if (done <= so_far.size())
      so_far[done - 1] = cell;
    else
      so_far.push_back(cell);
    write_passkey_partial(partial, key, so_far);
    log << "passkey: cell " << done << "/" << total << ", length " << cell.length << " depth " << cell.depth << ": "
        << (cell.error.empty() ? std::to_string(cell.correct) + "/" + std::to_string(cell.documents) + " found" : "n/a")
        << ", " << format_duration(now_seconds() - start) << std::endl;
  };
  return score(progress, scored);
}

void remove_passkey_partial(const std::string& partial, std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::remove(partial, ec) && ec)
    log << "passkey: warning: " << partial << " could not be removed (" << ec.message()
        << "); the next evaluation of this checkpoint takes its cells" << std::endl;
}

}  // namespace ropelab
