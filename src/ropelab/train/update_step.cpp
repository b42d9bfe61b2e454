// One optimizer update and its pieces: the learning-rate schedules, the loss scale of fp16,
// and update_step (losses, gradients summed over the ranks, clipping, Adam).
#include <cmath>

#include "ropelab/model/precision.h"
#include "ropelab/ops/adam/adam.h"
#include "ropelab/ops/cross_entropy/cross_entropy.h"
#include "ropelab/train/trainer.h"

namespace ropelab {

double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));  // guard step 0
  const double w = static_cast<double>(o.warmup());
  switch (o.lr_schedule()) {
    case LrSchedule::noam:
      return o.lr() * std::pow(static_cast<double>(d_model), -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
    case LrSchedule::inverse_sqrt:
      return s < w ? o.lr() * s / w : o.lr() * std::sqrt(w / s);
    case LrSchedule::constant:
      return o.lr();
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled LrSchedule");
}

namespace {

/// Drops every gradient (PyTorch's zero_grad(set_to_none=True)): the next backward pass then
/// stores its gradients instead of adding them to zeros, and no pass writes the zeros.
void drop_gradients(torch::optim::Optimizer& optimizer) {
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) p.mutable_grad() = torch::Tensor();
}

}  // namespace

void update_loss_scale(LossScale& scale, bool finite) {
  if (!finite) {
    scale.scale /= 2, scale.good = 0;
  } else if (++scale.good >= kLossScaleGrowth) {
    scale.scale *= 2, scale.good = 0;
  }
}

LossTotals update_step(const TaskModel& model, torch::optim::Adam& optimizer, const std::vector<Batch>& batches,
                       const TrainOptions& options, double lr, DataParallel* group, bool* stop, LossScale* loss_scale) {
  const double scale = loss_scale ? loss_scale->scale : 1.0;
  LossTotals totals;
  bool finite = true;
  for (const auto& batch : batches) {
    if (batch.sentences == 0) continue;  // a rank's empty shard of a small batch
    torch::Tensor loss, nll;
    {
      PrecisionScope precision(options.precision(), batch.target_out.device());  // forward and loss only
      std::tie(loss, nll) = smoothed_loss(model.logits(batch), batch.target_out, options.label_smoothing(), kPadId);
    }
    const double value = loss.item<double>();
    if (!std::isfinite(value)) {  // no backward: the gradient would be poisoned too
      finite = false;
      totals.nonfinite_loss = true;
      continue;
    }
    (loss_scale ? loss * scale : loss).backward();
    totals.add(value, nll.item<double>(), static_cast<double>(batch.target_tokens));
  }
  if (group) {  // sum gradients, statistics and stop votes over the ranks
    std::vector<torch::Tensor> sums;
    for (auto& p : model->parameters()) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      sums.push_back(p.grad());
    }
    auto stats = torch::tensor({totals.loss, totals.nll, totals.tokens, stop && *stop ? 1.0 : 0.0, finite ? 0.0 : 1.0},
                               torch::kDouble)
                     .to(sums.front().device());
    sums.push_back(stats);
    group->all_reduce_sum(sums);
    stats = stats.cpu();
    const bool nonfinite_loss = totals.nonfinite_loss;  // this rank's
    totals = LossTotals();
    totals.nonfinite_loss = nonfinite_loss;
    totals.add(stats[0].item<double>(), stats[1].item<double>(), stats[2].item<double>());
    if (stop) *stop = stats[3].item<double>() > 0;
    finite = stats[4].item<double>() == 0;
  }
  // Gradients of summed losses -> per-token mean over the whole update, and clipping: both
  // one factor on the gradients, applied inside Adam's pass (ops/adam/adam.h).
  const double mean = 1.0 / std::max(totals.tokens, 1.0) / scale;  // the loss scale undone here too
  // The gradient norm (before clipping), the same on every rank: non-finite skips the update.
  std::vector<torch::Tensor> norms;
  for (const auto& p : model->parameters())
    if (p.grad().defined()) norms.push_back(p.grad().norm());
  const double norm = norms.empty() ? 0.0 : torch::stack(norms).norm().item<double>() * mean;
  if (loss_scale && finite) {  // a finite loss whose scaled gradients overflowed: a smaller scale
    totals.overflow = !std::isfinite(norm);
    update_loss_scale(*loss_scale, !totals.overflow);
  }
  if (!finite || !std::isfinite(norm)) {
    drop_gradients(optimizer);
    totals.skipped = true;
    return totals;
  }
  double grad_scale = mean;
  if (options.clip_norm() > 0 && options.clip_norm() / (norm + 1e-6) < 1.0)  // clip_grad_norm_'s rule
    grad_scale *= options.clip_norm() / (norm + 1e-6);
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  adam_step(optimizer, grad_scale);
  drop_gradients(optimizer);
  return totals;
}

}  // namespace ropelab
