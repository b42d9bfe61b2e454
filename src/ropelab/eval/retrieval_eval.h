#pragma once
/// The retrieval probes of data/retrieval.h scored on a trained language model (ProtocolKind::
/// retrieval, `ropelab retrieval eval`): exact match of every answer, by length and, where
/// the task has one, by the asked needle's depth.
///
/// An answer counts as given when the model's greedy continuation of the text before it is
/// the answer itself, its terminator included (" 12345." is not " 123456"). One teacher-
/// forced pass of the document decides that for all its answers at once: greedy decoding
/// reproduces an answer exactly when the most likely token at each of its positions, given
/// the answer's tokens before it, is the answer's token (tested against the greedy search).
/// The text is tokenized piece by piece at the answers' edges, so each answer is whole tokens.

#include <functional>
#include <string>
#include <vector>

#include "ropelab/data/retrieval.h"
#include "ropelab/eval/passkey.h"
#include "ropelab/task/task.h"

namespace ropelab {

/// What `ropelab retrieval eval` measures: `documents` documents per length x depth (per
/// length for a task without a depth), drawn from the stream `seed`, the needles hidden in
/// `corpus`.
struct RetrievalGrid {
  RetrievalOptions task;  // the task and its sizes; length and depth are set per cell
  std::vector<int64_t> lengths{512, 1024, 2048};
  std::vector<double> depths{0, 0.25, 0.5, 0.75, 1};  // taken only by tasks with a depth
  int64_t documents = 20;
  uint64_t seed = 1;
  std::string corpus;  // the haystack's text (not read by mqar)
  /// The depths of the cells: `depths`, or {0} for a task without one (its cells' depth).
  std::vector<double> cell_depths() const;
};

/// Whether `model` gives each answer of `document`, in order (see above).
std::vector<bool> answers_given(const TaskModel& model, const Tokenizer& tokenizer, const RetrievalDocument& document,
                                const torch::Device& device);

/// The cells of `grid` (lengths outer): per cell, `correct` answers of `documents` answers
/// scored (one per document but for mqar, whose documents ask several). A cell the model
/// cannot take (a context beyond a learned table) carries the error. `progress` is told of
/// each cell as it is scored.
std::vector<PasskeyCell> evaluate_retrieval(
    const TaskModel& model, const Tokenizer& tokenizer, const RetrievalGrid& grid, const torch::Device& device,
    const std::function<void(const PasskeyCell&, size_t, size_t)>& progress = {});

}  // namespace ropelab
