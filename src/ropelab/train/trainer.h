#pragma once
/// `ropelab train`: tokenizer, data, model, optimization loop, validation and checkpoints
/// for the encoder-decoder translator (Vaswani et al. 2017, section 5).

#include "ropelab/config/config.h"
#include "ropelab/data/corpus.h"
#include "ropelab/train/distributed.h"
#include "ropelab/train/run.h"

#include <string>

namespace ropelab {

/// lr at optimizer update `step` (1-based) for the configured schedule.
double learning_rate(const TrainOptions& options, int64_t d_model, int64_t step);

/// Label-smoothed loss and un-smoothed NLL, both summed over non-pad targets.
/// Smoothing is torch's variant: eps/V on every class, the target included.
/// logits (B, T, V), target (B, T) -> {smoothed_sum, nll_sum}. On the CPU a fused kernel
/// (train/loss_rows.h) computes it without materialising log-probabilities.
std::pair<torch::Tensor, torch::Tensor> smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target,
                                                      double label_smoothing, int64_t pad_id);
/// The same with ATen ops (log_softmax, gather, mean): any device, the reference.
std::pair<torch::Tensor, torch::Tensor> smoothed_loss_reference(const torch::Tensor& logits,
                                                                const torch::Tensor& target, double label_smoothing,
                                                                int64_t pad_id);

/// Summed loss statistics over a data set.
struct LossTotals {
  double loss = 0, nll = 0, tokens = 0;
  /// update_step: the update was skipped (a non-finite loss or gradient).
  bool skipped = false;
  void add(double l, double n, double t) { loss += l, nll += n, tokens += t; }
  double mean_loss() const { return loss / tokens; }
  /// exp(mean un-smoothed NLL per non-pad target token)
  double perplexity() const { return std::exp(nll / tokens); }
};

/// Pads `indices` of `examples` into a batch for the model's task (collate or collate_lm).
Batch make_batch(const TaskModel& model, const ExampleSet& examples, const std::vector<size_t>& indices,
                 const torch::Device& device);

/// Teacher-forced loss over `examples` in eval mode, batched by `max_tokens`.
LossTotals evaluate_loss(const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device);
LossTotals evaluate_loss(const TaskModel& model, const std::vector<Example>& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device);

/// One optimizer update over `batches` (gradient accumulation): forward, smoothed loss,
/// backward, gradients scaled to a per-target-token mean over the whole update,
/// clipping, then Adam at learning rate `lr`. Returns the summed statistics.
/// With a data-parallel `group`, `batches` are this rank's shards: gradients and
/// statistics are summed over the ranks first (so the update equals one process on the
/// whole batches), and `*stop` (when given) becomes true if any rank asked to stop.
/// A non-finite loss (on any rank) or gradient norm skips the update: no optimizer step,
/// gradients cleared, `skipped` set.
LossTotals update_step(const TaskModel& model, torch::optim::Adam& optimizer, const std::vector<Batch>& batches,
                       const TrainOptions& options, double lr, DataParallel* group = nullptr, bool* stop = nullptr);

/// Trains from `config` into `run_dir`; with `resume`, continues the run found there.
void train(const Config& config, const std::string& run_dir, bool resume);

}  // namespace ropelab
