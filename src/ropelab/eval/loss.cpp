#include "ropelab/eval/loss.h"

#include "ropelab/ops/cross_entropy/cross_entropy.h"

namespace ropelab {

LossTotals evaluate_loss(const Task& task, const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  LossTotals totals;
  for (const auto& indices : plan_batches(examples, max_tokens, true, 0)) {
    auto batch = task.collate(examples, indices, device);
    auto [loss, nll] = smoothed_loss(model.logits(batch), batch.target_out, label_smoothing, kPadId);
    totals.add(loss.item<double>(), nll.item<double>(), static_cast<double>(batch.target_tokens));
  }
  model->train(was_training);
  return totals;
}

}  // namespace ropelab
