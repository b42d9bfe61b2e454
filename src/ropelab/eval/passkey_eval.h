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

/// RUN-style outputs at `stem`: the table (passkey.csv), the accuracy per length
/// (passkey.json, write_passkey_summary) and the heat map (passkey.svg).
void write_passkey_results(const std::string& stem, const std::vector<PasskeyCell>& cells, const PasskeyGrid& grid,
                           const std::string& title, const std::string& caption);

}  // namespace ropelab
