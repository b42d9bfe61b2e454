#pragma once
/// What the attention kernels (fused_attention.h, streaming_attention.h, chunked_attention.h)
/// accept, and how their autograd Functions carry it.

#include <torch/torch.h>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// Whether q (B, H, Tq, Dh), k and v (B, H, Tk, Dh) are 4-d tensors of one floating type on
/// q's device, and the bias's forms, where defined, of that type (or float, with
/// `float_bias_ok`) and device in the shapes of score_bias.h.
bool attention_operands_fit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const ScoreBias& bias, bool float_bias_ok = false);

/// attention_operands_fit, and CPU tensors of float or double (with the BLAS routine for
/// that type loaded) with unit last strides.
bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const ScoreBias& bias);

/// The checks every kernel makes of its call (`kernel` names it in the message): that its
/// operands are `available` (else it says what the kernel `needs`), window and sinks >= 0,
/// tiles and chunks positive, and a key padding mask (B, Tk).
void check_kernel_call(const char* kernel, bool available, const char* needs, const torch::Tensor& q,
                       const torch::Tensor& k, const torch::Tensor& key_padding_mask, const KernelOptions& options);

/// What the CPU kernels need, for check_kernel_call.
inline constexpr const char* kCpuKernelNeeds =
    "CPU float or double q, k, v (B, H, T, Dh) with unit last strides and biases of their type and shape";

/// The tensors an attention kernel's autograd Function takes after q, k and v, in this order,
/// each contiguous, and an empty tensor where absent (autograd Functions take no undefined
/// tensors): the key padding mask (bool, on q's device), the dense and the relative bias,
/// FIRE's psi, inv_norm, w1 (flattened), b1, w2 and b2, and the forget gate's cumulative log
/// values.
struct AttentionExtras {
  torch::Tensor pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget;
  static AttentionExtras of(const torch::Tensor& q, const torch::Tensor& key_padding_mask, const ScoreBias& bias);
  /// The same from a Function's saved tensors, `first` the index of pad.
  static AttentionExtras saved(const torch::autograd::variable_list& saved, size_t first);
  /// The ten tensors in their order.
  torch::autograd::variable_list list() const;
  bool fire() const { return psi.numel() > 0; }
};

/// The positions of AttentionExtras's tensors among a Function's tensor inputs (q, k, v
/// first), as needs_input_grad counts them; the KernelOptions come after them.
constexpr size_t kDenseInput = 4, kRelativeInput = 5, kFirstFireInput = 6, kFireInputs = 6, kForgetInput = 12,
                 kKernelInputs = 14;

/// Whether the backward needs the gradient of one of FIRE's inputs.
bool needs_fire_gradient(torch::autograd::AutogradContext* ctx);

/// Keeps `options` in the context's saved data for the backward, and reads it back.
void save_kernel_options(torch::autograd::AutogradContext* ctx, const KernelOptions& options);
KernelOptions saved_kernel_options(torch::autograd::AutogradContext* ctx);

}  // namespace ropelab
