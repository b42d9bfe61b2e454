#pragma once
/// FIRE's bias in factored form, as the streaming attention kernel reads it
/// (ops/attention/streaming_attention.h) and position/encoders.h's FireEncoder makes it.

#include <torch/torch.h>

namespace ropelab {

/// FIRE's bias (Li et al. 2024) as the kernel evaluates it per tile: query i (aligned with
/// key a = i + Tk - Tq) and key j of head h get
///   mlp_h(psi[|j - a|] * inv_norm[i]),  mlp_h(x) = sum_k w2[h][k] relu(w1[k] x + b1[k]) + b2[h].
/// The MLP of a scalar is piecewise linear in x with breakpoints -b1[k] / w1[k] shared by the
/// heads; psi is non-decreasing in the distance, so along a row each linear piece covers a
/// run of keys, found from per-row distance thresholds computed once per call: a bias
/// element costs one multiply-add. The gradients of all six tensors are sums per piece,
/// per distance and per row, made in the backward. All of q's type.
struct FireTileBias {
  torch::Tensor psi;       // (max(Tq, Tk)) psi of the distance 0, 1, ...: non-decreasing, >= 0
  torch::Tensor inv_norm;  // (Tq) > 0: each query's normaliser, inverted
  torch::Tensor w1, b1;    // (K) the hidden layer of one input
  torch::Tensor w2;        // (H, K) the output layer's weight
  torch::Tensor b2;        // (H) its bias
  bool defined() const { return psi.defined(); }
};

}  // namespace ropelab
