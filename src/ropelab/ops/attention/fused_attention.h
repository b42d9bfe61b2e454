#pragma once
/// Scaled dot-product attention fused for the CPU: one task per (batch, head) under
/// at::parallel_for, each calling BLAS directly on strided views of q, k, v (no copies
/// out of the fused QKV projection, no (B*H)-long loop of tiny dispatched matmuls as in
/// LibTorch 1.13's CPU bmm), masks applied inside the softmax, output written straight
/// into the (B, Tq, H, Dh) layout the output projection reads. Backward is fused the
/// same way. A position encoder's logit bias is added per (head, row) inside the kernel,
/// from a relative table (H, Tq + Tk - 1) or a dense (1|B, H, Tq, Tk) tensor, with its
/// gradient. Float and double; no attention dropout (callers fall back:
/// attention/backend.cpp). One CPU build and no dispatch table (ops/dispatch.h): its
/// matrix products are BLAS calls, and BLAS picks its own instruction set.

#include <torch/torch.h>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// Whether the fused kernel can run: CPU tensors of float or double, a BLAS with
/// sgemm_/dgemm_ loaded, last dimensions of unit stride, and a bias of q's type in the
/// shapes of score_bias.h.
bool fused_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const ScoreBias& bias = {});

/// q (B, H, Tq, Dh), k and v (B, H, Tk, Dh); key_padding_mask (B, Tk) bool or undefined.
/// Query i sees key j when options.visibility shows it (key_visibility.h) and key j is not
/// padding; a query that sees no key gets a zero output. `bias` is added to the scaled
/// logits: a dense and a relative bias per (head, row) inside the kernel, FIRE's and a
/// forget gate's summed with them into one dense tensor first (ScoreBias::to_dense).
/// -> (B, H, Tq, Dh), a permuted view of a contiguous (B, Tq, H, Dh) tensor.
torch::Tensor fused_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& key_padding_mask, const ScoreBias& bias = {},
                                  const KernelOptions& options = {});

}  // namespace ropelab
