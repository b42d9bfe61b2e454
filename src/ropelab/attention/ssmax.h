#pragma once
/// Scalable-Softmax (SSMax; Nakanishi 2025): attention over n keys as softmax(s log n . z)
/// rather than softmax(z), z a query's logits q.k / sqrt(Dh) and s learnable, so that the
/// largest weight need not fade as n grows. Here n is the number of keys a query of a causal
/// sequence sees, and s (one per head, in each layer) multiplies the query itself: every
/// kernel, its backward pass and cached decoding then compute SSMax unchanged. A logit bias
/// (ALiBi, a forget gate) is added unscaled.

#include <torch/torch.h>

#include "ropelab/ops/attention/key_visibility.h"

namespace ropelab {

/// log n for the queries at token indices offset, ..., offset + length - 1 of a causal
/// sequence (length) float: n = i + 1, or with a window W and S sinks (visibility)
/// min(i + 1, W) + min(S, max(0, i + 1 - W)).
torch::Tensor ssmax_log_key_counts(int64_t offset, int64_t length, const KeyVisibility& visibility,
                                   const torch::Device& device);

/// Queries q (B, H, T, Dh) multiplied by s (H) times log n (T), in s's type and rounded to
/// q's once (a bf16 query is not scaled by a bf16 factor). Checks that the call is causal
/// and that log n covers q's rows.
torch::Tensor ssmax_scaled_queries(const torch::Tensor& s, const torch::Tensor& log_n, bool causal,
                                   const torch::Tensor& q);

}  // namespace ropelab
