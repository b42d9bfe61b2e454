#pragma once
/// The streaming attention algorithm (streaming_attention.h) in chunks of ATen operations,
/// so that it runs on any device LibTorch has: CUDA, and the CPU (where the tiled kernel is
/// faster; this form is its device-agnostic twin and is tested there against the same float64
/// golden run). Query chunks x key chunks with an online softmax; the forward keeps the
/// output and each row's log-sum-exp, the backward recomputes each chunk's probabilities
/// (P = exp(S - lse)), uses d = rowsum(dO * O) and adds up dQ, dK and dV chunk by chunk. No
/// tensor larger than one chunk's scores over every batch row and head exists, beside the
/// O(T) inputs, outputs and gradients (and a dense bias, which is the caller's).
///
/// Chunks whose keys no query of the chunk can see (causal, window) are skipped whole; the
/// others are masked from position indices made on the device. Position biases are added per
/// chunk, never as a (Tq, Tk) tensor: a relative table (H, Tq + Tk - 1) read along its
/// diagonals by a strided view, FIRE's MLP over its factored form (fire_tile_bias.h), the
/// forget gate's c[a] - c[j] from its cumulative log values, a dense bias by slicing. Their gradients are summed per
/// chunk in a fixed order (diagonal sums by the skew of a padded view, no atomics), so the result does not depend on
/// scheduling.

#include <torch/torch.h>

#include <utility>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// Whether the chunked form can run: q, k, v (B, H, T, Dh) of one floating type on one device,
/// k and v of q's batch and heads, and a bias of q's type (or float, for fp16 and bf16) and
/// device in the shapes of score_bias.h. fp16 and bf16 are computed in float, chunk by chunk
/// (the copies of q, k and v in float are O(T)), and the output returned in q's type.
bool chunked_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const ScoreBias& bias = {});

/// The query positions per chunk for `batch_heads` = B x H (or FIRE's hidden units, if more).
int64_t chunk_queries(const AttentionChunks& chunks, int64_t batch_heads, int64_t tq, int64_t tk);

/// (Tq, Tk) positions [i0, i0 + rows) x [j0, j0 + cols): a (rows, cols) bool tensor on
/// `device`, true where the query may not see the key under `visibility` (causal, window,
/// sinks; key_visibility.h).
torch::Tensor hidden_keys(const KeyVisibility& visibility, int64_t tq, int64_t tk, int64_t i0, int64_t rows, int64_t j0,
                          int64_t cols, const torch::Device& device);

/// As streaming_attention_cpu (streaming_attention.h), on q's device: q (B, H, Tq, Dh), k and
/// v (B, H, Tk, Dh); key_padding_mask (B, Tk) true at padded keys, or undefined; `bias`
/// (score_bias.h) added to the scaled logits; of `options` the visibility and the chunks.
/// Differentiable in q, k, v and every bias tensor. -> (B, H, Tq, Dh)
torch::Tensor chunked_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& key_padding_mask, const ScoreBias& bias = {},
                                const KernelOptions& options = {});

/// chunked_attention, also giving each row's log-sum-exp of its visible logits (B, H, Tq),
/// +float max for a row that sees no key; the output and the log-sum-exp are both
/// differentiable, so that attention over disjoint key sets merges exactly (the window and
/// the sinks of attention/softmax.h).
std::pair<torch::Tensor, torch::Tensor> chunked_attention_lse(const torch::Tensor& q, const torch::Tensor& k,
                                                              const torch::Tensor& v,
                                                              const torch::Tensor& key_padding_mask,
                                                              const ScoreBias& bias = {},
                                                              const KernelOptions& options = {});

}  // namespace ropelab
