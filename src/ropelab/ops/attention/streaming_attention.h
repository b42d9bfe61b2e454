#pragma once
/// Exact scaled dot-product attention in memory linear in the sequence length, for the
/// CPU (Rabe and Staats 2021, "Self-attention Does Not Need O(n^2) Memory"; Dao et al.
/// 2022, "FlashAttention"): query tiles x key/value tiles with an online softmax (running
/// max and sum per row), the output accumulated in the input's type (fp32 or fp64). The
/// forward keeps only the output and each row's log-sum-exp; the backward recomputes the
/// probabilities tile by tile (P = exp(S - lse)), uses d = rowsum(dO * O), and adds up
/// dQ, dK and dV without any buffer larger than a few tiles per thread (plus per-task
/// dK/dV/bias-table partial sums of O(T) size, reduced in a fixed order afterwards).
///
/// Tiles whose keys a query tile cannot see (causal, window) are skipped whole; only tiles
/// across the diagonal, the window's edge or padding are masked element by element.
///
/// Position biases (ops/attention/score_bias.h) are added per tile, never as a (Tq, Tk)
/// tensor: a relative table (H, Tq + Tk - 1) read along its diagonals (ALiBi, Kerple, T5 buckets, any bias of
/// key_pos - query_pos; position/encoders.h), with its gradient summed per diagonal, and
/// FIRE's MLP bias from its per-distance and per-row parts (FireTileBias), and the forget
/// gate's decay (Lin et al. 2025, "Forgetting Transformer") from its cumulative log values c
/// (B, H, Tk): c[a] - c[j] = sum of log f_l over l in (j, a], whose gradient is minus the
/// column sums of dS at j (a row's own c[a] leaves its softmax unchanged). A dense (1|B, H, Tq, Tk) bias is also taken
/// (its memory is then the caller's).
///
/// Parallel over batch x heads x query tiles in the forward (largest tiles first, taken
/// dynamically by the threads); over batch x heads x query-tile groups in the backward,
/// with as many groups per (batch, head) as it takes to occupy every thread.
///
/// The kernel's parts, one concept a file: streaming_problem.h (shapes, masks, scheduling),
/// streaming_bias.h (the bias per tile), fire_pieces.h (FIRE's linear pieces),
/// streaming_forward.cpp and streaming_backward.cpp (the passes), streaming_attention.cpp
/// (the autograd Function and the entry points).

#include <torch/torch.h>

#include <utility>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// Whether the streaming kernel can run: CPU tensors of float or double with the BLAS
/// routine for that type, unit last strides, and a bias of q's type in the accepted shapes.
bool streaming_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const ScoreBias& bias = {});

/// q (B, H, Tq, Dh), k and v (B, H, Tk, Dh); key_padding_mask (B, Tk) bool or undefined,
/// true at padded keys. `bias` (score_bias.h) is added to the scaled logits; of `options`
/// the kernel reads the visibility (key_visibility.h) and the tiles. Differentiable in q, k,
/// v and every bias tensor. -> (B, H, Tq, Dh), a permuted view of a contiguous
/// (B, Tq, H, Dh) tensor.
torch::Tensor streaming_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& key_padding_mask, const ScoreBias& bias = {},
                                      const KernelOptions& options = {});

/// The forward alone (no gradient), also giving each row's log-sum-exp of its visible logits
/// (B, H, Tq), +1e30 for a row that sees no key: attention over disjoint key sets then
/// merges exactly (the window and the sinks of attention/softmax.h).
std::pair<torch::Tensor, torch::Tensor> streaming_attention_cpu_lse(const torch::Tensor& q, const torch::Tensor& k,
                                                                    const torch::Tensor& v,
                                                                    const torch::Tensor& key_padding_mask,
                                                                    const ScoreBias& bias = {},
                                                                    const KernelOptions& options = {});

}  // namespace ropelab
