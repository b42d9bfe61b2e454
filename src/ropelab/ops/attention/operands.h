#pragma once
/// What the attention kernels (fused_attention.h, streaming_attention.h, chunked_attention.h)
/// accept.

#include <torch/torch.h>

#include "ropelab/ops/attention/fire_tile_bias.h"
#include "ropelab/ops/attention/key_visibility.h"

namespace ropelab {

/// Whether q (B, H, Tq, Dh), k and v (B, H, Tk, Dh) are 4-d tensors of one floating type on
/// q's device, and the biases, where defined, of that type and device in the shapes the
/// kernels take: dense (1|B, H, Tq, Tk), relative (H, Tq + Tk - 1), FIRE's factored form
/// (fire_tile_bias.h), a forget gate's cumulative log values (B, H, Tk) with Tq <= Tk.
bool attention_operands_fit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                            const FireTileBias& fire = {}, const torch::Tensor& forget = {});

/// attention_operands_fit, and CPU tensors of float or double (with the BLAS routine for
/// that type loaded) with unit last strides.
bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                               const FireTileBias& fire = {}, const torch::Tensor& forget = {});

/// The tensors an attention kernel's autograd Function takes after q, k and v, in this order,
/// each contiguous, and an empty tensor where absent (autograd Functions take no undefined
/// tensors): the key padding mask (bool, on q's device), the dense and the relative bias,
/// FIRE's psi, inv_norm, w1 (flattened), b1, w2 and b2, and the forget gate's cumulative log
/// values.
struct AttentionExtras {
  torch::Tensor pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget;
  static AttentionExtras of(const torch::Tensor& q, const torch::Tensor& key_padding_mask,
                            const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                            const FireTileBias& fire = {}, const torch::Tensor& forget = {});
};

/// The positions of AttentionExtras's tensors among a Function's tensor inputs (q, k, v
/// first), as needs_input_grad counts them.
constexpr size_t kDenseInput = 4, kRelativeInput = 5, kFirstFireInput = 6, kFireInputs = 6, kForgetInput = 12;

/// Whether the backward needs the gradient of one of FIRE's inputs.
bool needs_fire_gradient(torch::autograd::AutogradContext* ctx);

/// Keeps `visibility` in the context's saved data for the backward, and reads it back.
void save_visibility(torch::autograd::AutogradContext* ctx, const KeyVisibility& visibility);
KeyVisibility saved_visibility(torch::autograd::AutogradContext* ctx);

}  // namespace ropelab
