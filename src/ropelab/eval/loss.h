#pragma once
/// Teacher-forced loss and perplexity of a task's model over a data set (validation
/// during training, perplexity in `ropelab eval`).

#include <cmath>

#include "ropelab/task/task.h"

namespace ropelab {

/// Summed loss statistics over a data set.
struct LossTotals {
  double loss = 0, nll = 0, tokens = 0;
  /// update_step: the update was skipped (a non-finite loss or gradient).
  bool skipped = false;
  /// update_step: a batch's loss was non-finite (else a skip came from the gradient norm).
  bool nonfinite_loss = false;
  /// update_step with a loss scale: the scaled gradients overflowed (skipped is set too);
  /// the scale was halved. Expected now and then in fp16 training, not a divergence.
  bool overflow = false;
  void add(double l, double n, double t) { loss += l, nll += n, tokens += t; }
  double mean_loss() const { return loss / tokens; }
  /// exp(mean un-smoothed NLL per non-pad target token)
  double perplexity() const { return std::exp(nll / tokens); }
};

/// One example's un-smoothed NLL sum and its number of target tokens.
struct ExampleLoss {
  double nll = 0, tokens = 0;
};

/// Teacher-forced loss over `examples` in eval mode, batched by `max_tokens`. With
/// `per_example`, also each example's NLL and tokens (in the examples' order), for paired
/// tests over evaluation windows; with `per_position`, the NLL and tokens summed per
/// position in the batch rows (a language model's position in its window); with
/// `per_token`, each example's NLL at each target position of its batch (a language
/// model's prediction from window position j at index j), NaN where nothing is scored.
LossTotals evaluate_loss(const Task& task, const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device,
                         std::vector<ExampleLoss>* per_example = nullptr,
                         std::vector<ExampleLoss>* per_position = nullptr,
                         std::vector<std::vector<double>>* per_token = nullptr);

}  // namespace ropelab
