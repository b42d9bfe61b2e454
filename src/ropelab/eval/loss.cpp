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
    // each target's NLL, logsumexp - target logit (no log-probability tensor), 0 at padding;
    // summed per row and per position in double, then brought to the host once
    const auto target = batch.target_out.clamp_min(0).unsqueeze(-1);
    const auto mask = batch.target_out.ne(kPadId);
    // in fp32 at least, as the loss above (bf16 logits under mixed precision)
    const auto wide = logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat);
    const auto token_nll = ((wide.logsumexp(-1) - wide.gather(-1, target).squeeze(-1)) * mask).to(torch::kDouble);
    const auto counts = mask.to(torch::kDouble);
    if (per_example) {
      const auto rows = torch::stack({token_nll.sum(1), counts.sum(1)}, 1).cpu();  // (B, 2)
      const auto r = rows.accessor<double, 2>();
      for (size_t b = 0; b < indices.size(); ++b)
        (*per_example)[indices[b]] = {r[static_cast<int64_t>(b)][0], r[static_cast<int64_t>(b)][1]};
    }
    if (per_position) {
      const auto columns = torch::stack({token_nll.sum(0), counts.sum(0)}, 1).cpu();  // (T, 2)
      const auto c = columns.accessor<double, 2>();
      if (per_position->size() < static_cast<size_t>(columns.size(0)))
        per_position->resize(static_cast<size_t>(columns.size(0)));
      for (int64_t j = 0; j < columns.size(0); ++j)
        (*per_position)[static_cast<size_t>(j)].nll += c[j][0],
            (*per_position)[static_cast<size_t>(j)].tokens += c[j][1];
    }
  }
  model->train(was_training);
  return totals;
}

}  // namespace ropelab
