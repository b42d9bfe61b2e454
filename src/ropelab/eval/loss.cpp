#include "ropelab/eval/loss.h"

#include "ropelab/ops/cross_entropy/cross_entropy.h"

namespace ropelab {

LossTotals evaluate_loss(const Task& task, const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device, std::vector<ExampleLoss>* per_example) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  LossTotals totals;
  if (per_example) per_example->assign(examples.size(), {});
  for (const auto& indices : plan_batches(examples, max_tokens, true, 0)) {
    auto batch = task.collate(examples, indices, device);
    const auto logits = model.logits(batch);
    auto [loss, nll] = smoothed_loss(logits, batch.target_out, label_smoothing, kPadId);
    totals.add(loss.item<double>(), nll.item<double>(), static_cast<double>(batch.target_tokens));
    if (!per_example) continue;
    // each row's NLL over its non-pad targets, in double
    const auto mask = batch.target_out.ne(kPadId);
    const auto log_p =
        logits.to(torch::kDouble).log_softmax(-1).gather(-1, batch.target_out.clamp_min(0).unsqueeze(-1));
    const auto row_nll = (-log_p.squeeze(-1) * mask).sum(1).cpu();
    const auto row_tokens = mask.sum(1).cpu();
    for (size_t b = 0; b < indices.size(); ++b)
      (*per_example)[indices[b]] = {row_nll[static_cast<int64_t>(b)].item<double>(),
                                    static_cast<double>(row_tokens[static_cast<int64_t>(b)].item<int64_t>())};
  }
  model->train(was_training);
  return totals;
}

}  // namespace ropelab
