#pragma once
/// Passkey retrieval of a trained language model (passkey.h): greedy continuations of
/// generated documents at each (length, depth), scored by whether they give the key.

#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/task/task.h"

namespace ropelab {

/// Accuracy per (length, depth), lengths outer. A cell the model cannot evaluate (a
/// context beyond a learned position table) carries the error instead of a score.
std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device);

}  // namespace ropelab
