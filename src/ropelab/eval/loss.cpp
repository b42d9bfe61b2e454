#include "ropelab/eval/loss.h"

#include "ropelab/ops/cross_entropy/cross_entropy.h"

namespace ropelab {

LossTotals evaluate_loss(const Task& task, const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device, std::vector<ExampleLoss>* per_example,
                         std::vector<ExampleLoss>* per_position) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  LossTotals totals;
  if (per_example) per_example->assign(examples.size(), {});
  if (per_position) per_position->clear();
  for (const auto& indices : plan_batches(examples, max_tokens, true, 0)) {
    auto batch = task.collate(examples, indices, device);
    const auto logits = model.logits(batch);
    auto [loss, nll] = smoothed_loss(logits, batch.target_out, label_smoothing, kPadId);
    totals.add(loss.item<double>(), nll.item<double>(), static_cast<double>(batch.target_tokens));
    if (!per_example && !per_position) continue;
    // each target's NLL in double, 0 at padding
    const auto mask = batch.target_out.ne(kPadId);
    const auto log_p =
        logits.to(torch::kDouble).log_softmax(-1).gather(-1, batch.target_out.clamp_min(0).unsqueeze(-1)).squeeze(-1);
    const auto token_nll = (-log_p * mask).cpu();
    const auto counts = mask.cpu();
    if (per_example) {
      const auto row_nll = token_nll.sum(1), row_tokens = counts.sum(1);
      for (size_t b = 0; b < indices.size(); ++b)
        (*per_example)[indices[b]] = {row_nll[static_cast<int64_t>(b)].item<double>(),
                                      static_cast<double>(row_tokens[static_cast<int64_t>(b)].item<int64_t>())};
    }
    if (per_position) {
      const auto column_nll = token_nll.sum(0), column_tokens = counts.sum(0);
      const auto length = static_cast<size_t>(column_nll.size(0));
      if (per_position->size() < length) per_position->resize(length);
      for (size_t j = 0; j < length; ++j) {
        (*per_position)[j].nll += column_nll[static_cast<int64_t>(j)].item<double>();
        (*per_position)[j].tokens += static_cast<double>(column_tokens[static_cast<int64_t>(j)].item<int64_t>());
      }
    }
  }
  model->train(was_training);
  return totals;
}

}  // namespace ropelab
