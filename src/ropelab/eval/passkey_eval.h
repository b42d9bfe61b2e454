#pragma once
/// Passkey retrieval of a trained language model (passkey.h): greedy continuations of
/// generated documents at each (length, depth), scored by whether they give the key.

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/task/task.h"

namespace ropelab {

/// Told of each cell as it is scored: the cell, how many cells are done, and of how many.
using PasskeyProgress = std::function<void(const PasskeyCell& cell, size_t done, size_t total)>;

/// A model's continuations of prompts, one output (the prompt and its continuation) each.
/// An exception is a cell the model cannot take; its message becomes the cell's error.
using PasskeyContinuations = std::function<std::vector<std::string>(const std::vector<std::string>& prompts)>;

/// Accuracy per (length, depth), lengths outer: `grid.documents` documents a cell, cell c's
/// the documents c * grid.documents ... of the grid's stream, so that no two cells share one.
/// `scored`: the grid's first cells already scored (an evaluation stopped part-way,
/// passkey.h's partial file), taken as they are but for those that carry an error, which are
/// scored again (the error may have been passing, a device out of memory); the other cells
/// are scored with the documents they would have had. Throws std::invalid_argument when
/// they are not the grid's first cells.
std::vector<PasskeyCell> score_passkey_grid(const PasskeyGrid& grid, const PasskeyContinuations& continue_prompts,
                                            const PasskeyProgress& progress = {},
                                            const std::vector<PasskeyCell>& scored = {});

/// score_passkey_grid with the model's greedy continuations. A cell the model cannot
/// evaluate (a context beyond a learned position table) carries the error instead of a score.
std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device,
                                          const PasskeyProgress& progress = {},
                                          const std::vector<PasskeyCell>& scored = {});

/// Scores a grid from its progress and the cells scored before (evaluate_passkey, or
/// score_passkey_grid with continuations of one's own).
using PasskeyScorer =
    std::function<std::vector<PasskeyCell>(const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored)>;

/// A passkey evaluation that can stop and go on (`ropelab passkey eval`): the cells of the
/// partial file at `partial` (passkey.h) written under `key` are taken back, the file is
/// rewritten after each cell scored, so that a stopped evaluation loses at most the cell it
/// was at, and `log` gets a line on what was taken back (or why nothing was) and one per cell
/// as it is scored. The caller removes the file (remove_passkey_partial) once its results
/// are written.
std::vector<PasskeyCell> score_passkey_resuming(const PasskeyGrid& grid, const std::string& partial,
                                                const std::string& key, const PasskeyScorer& score, std::ostream& log);

/// Removes an evaluation's partial file once its results are written; a file that cannot be
/// removed is a warning on `log` (the next evaluation of the same checkpoint takes its cells).
void remove_passkey_partial(const std::string& partial, std::ostream& log);

}  // namespace ropelab
