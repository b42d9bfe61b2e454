#pragma once
/// Label-smoothed cross-entropy (Vaswani et al. 2017, 5.4; Szegedy et al. 2016).
/// Smoothing is torch's variant: eps/V on every class, the target included.

#include <torch/torch.h>

#include <utility>

namespace ropelab {

/// Label-smoothed loss and un-smoothed NLL, both summed over non-pad targets.
/// logits (B, T, V), target (B, T) -> {smoothed_sum, nll_sum}. On the CPU (float,
/// double) fused row loops (cross_entropy_cpu.h) compute it without materialising
/// log-probabilities: a max pass and an exp-sum pass forward, one pass backward;
/// elsewhere smoothed_loss_reference.
std::pair<torch::Tensor, torch::Tensor> smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target,
                                                      double label_smoothing, int64_t pad_id);
/// The same with ATen ops (log_softmax, gather, mean): any device, the reference.
std::pair<torch::Tensor, torch::Tensor> smoothed_loss_reference(const torch::Tensor& logits,
                                                                const torch::Tensor& target, double label_smoothing,
                                                                int64_t pad_id);

}  // namespace ropelab
