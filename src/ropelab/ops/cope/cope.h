#pragma once
/// Contextual Position Encoding's attention probabilities (Golovneva et al. 2024, "Contextual
/// Position Encoding: Learning to Count What's Important", eq. 3-5), from the two products
/// with the query that attention computes by matrix multiplication:
///   scores (B, H, n, Tk) = q_i . k_j / sqrt(Dh),  at_columns (B, H, n, P) = q_i . E[c] / sqrt(Dh),
///   hidden: bool, broadcastable to (B, 1, n, Tk), true where query i may not see key j.
/// Gates g_ij = sigmoid(scores_ij) of the visible keys sum from key j to the row's end into
/// the position p_ij = min(sum, P - 1); the logit adds at_columns interpolated at p_ij
/// between its columns floor(p) and ceil(p); softmax over the visible keys.
/// -> probs (B, H, n, Tk), 0 at hidden keys, a row with no visible key all 0.
/// Differentiable (once) in scores and at_columns.

#include <torch/torch.h>

namespace ropelab {

/// On the CPU, for float and double, fused row loops (cope_cpu.h): one pass each way over a
/// row, storing only the positions and probabilities; elsewhere cope_probabilities_reference.
torch::Tensor cope_probabilities(const torch::Tensor& scores, const torch::Tensor& at_columns,
                                 const torch::Tensor& hidden);

/// The same in ATen ops, differentiated by autograd (any device and floating dtype): the
/// reference.
torch::Tensor cope_probabilities_reference(const torch::Tensor& scores, const torch::Tensor& at_columns,
                                           const torch::Tensor& hidden);

}  // namespace ropelab
