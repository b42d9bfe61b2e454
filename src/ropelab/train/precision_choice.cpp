#include "ropelab/train/precision_choice.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ropelab/ops/cross_entropy/cross_entropy.h"
#include "ropelab/util/clock.h"

namespace ropelab {

namespace {

/// One forward, loss and backward; the time until the gradients exist (a read of a loss and
/// of a gradient waits for a device's queue).
double timed_pass(const TaskModel& model, const Batch& batch, double label_smoothing, Precision precision) {
  const auto device = batch.target_out.device();
  const double start = now_seconds();
  torch::Tensor loss;
  {
    PrecisionScope scope(precision, device);
    loss = smoothed_loss(model.logits(batch), batch.target_out, label_smoothing, kPadId).first;
  }
  loss.backward();
  for (const auto& p : model->parameters())
    if (p.grad().defined()) {
      (void)p.grad().sum().item<double>();
      break;
    }
  const double seconds = now_seconds() - start;
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  return seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string PrecisionTrial::describe() const {
  char line[240];
  std::snprintf(line, sizeof line,
                "train.precision auto: %s (forward and backward of the first batch, median of %d%s: fp32 %.4f s, "
                "bf16 %.4f s, bf16 at %.2fx fp32's speed)",
                to_string(chosen).c_str(), rounds,
                ranks > 1 ? (", summed over " + std::to_string(ranks) + " ranks").c_str() : "", fp32_seconds,
                bf16_seconds, bf16_seconds > 0 ? fp32_seconds / bf16_seconds : 0.0);
  return line;
}

Precision faster_precision(double fp32_seconds, double bf16_seconds) {
  return bf16_seconds < fp32_seconds ? Precision::bf16 : Precision::fp32;
}

PrecisionTrial time_precisions(const TaskModel& model, const Batch& batch, double label_smoothing, int rounds) {
  TORCH_CHECK(rounds > 0, "time_precisions: rounds must be positive");
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  timed_pass(model, batch, label_smoothing, Precision::fp32);  // warm-up: allocations, first-call costs
  timed_pass(model, batch, label_smoothing, Precision::bf16);
  std::vector<double> fp32, bf16;
  for (int r = 0; r < rounds; ++r) {  // alternating, each first in every other round
    const bool fp32_first = r % 2 == 0;
    auto& first = fp32_first ? fp32 : bf16;
    auto& second = fp32_first ? bf16 : fp32;
    first.push_back(timed_pass(model, batch, label_smoothing, fp32_first ? Precision::fp32 : Precision::bf16));
    second.push_back(timed_pass(model, batch, label_smoothing, fp32_first ? Precision::bf16 : Precision::fp32));
  }
  PrecisionTrial trial;
  trial.rounds = rounds;
  trial.fp32_seconds = median(fp32);
  trial.bf16_seconds = median(bf16);
  trial.chosen = faster_precision(trial.fp32_seconds, trial.bf16_seconds);
  return trial;
}

}  // namespace ropelab
