#pragma once
/// Passkey retrieval of a trained language model (passkey.h): greedy continuations of
/// generated documents at each (length, depth), scored by whether they give the key.

#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/task/task.h"

namespace ropelab {

struct PasskeyGrid {
  std::vector<int64_t> lengths{128, 256, 512, 1024, 2048};
  std::vector<double> depths{0, 0.25, 0.5, 0.75, 1};
  int64_t documents = 20;  // per cell
  int64_t digits = 5;
  uint64_t seed = 1;
};

/// Accuracy per (length, depth), lengths outer. A cell the model cannot evaluate (a
/// context beyond a learned position table) carries the error instead of a score.
std::vector<PasskeyCell> evaluate_passkey(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                                          const PasskeyGrid& grid, const torch::Device& device);

/// RUN-style outputs: the table (passkey.csv) and the heat map (passkey.svg) at `stem`.
void write_passkey_results(const std::string& stem, const std::vector<PasskeyCell>& cells, const PasskeyGrid& grid,
                           const std::string& title, const std::string& caption);

}  // namespace ropelab
