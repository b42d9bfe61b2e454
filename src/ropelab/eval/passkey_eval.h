#pragma once
/// Passkey retrieval of a trained language model (passkey.h): greedy continuations of
/// generated documents at each (length, depth), scored by whether they give the key.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/task/task.h"

namespace ropelab {

/// Told of each cell as it is scored: the cell, how many cells are done, and of how many.
using PasskeyProgress = std::function<void(const PasskeyCell& cell, size_t done, size_t total)>;

/// Accuracy per (length, depth), lengths outer. A cell the model cannot evaluate (a
/// context beyond a learned position table) carries the error instead of a score.
std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device,
                                          const PasskeyProgress& progress = {});

}  // namespace ropelab
