#pragma once
/// PyTorch's own scaled dot-product attention (at::scaled_dot_product_attention, LibTorch 2.0
/// and later: the flash kernel of Dao et al. 2022, the memory-efficient kernel of Rabe and
/// Staats 2021, or ATen's math form, whichever PyTorch picks for the call), for the calls it
/// computes as ropelab's kernels do: no logit bias of any form, no window, no sinks. Off the CPU
/// the softmax backend's `auto` takes it there (attention/softmax.h); on the CPU ropelab's own
/// kernels stay. In an older LibTorch (Debian's 1.13) it is absent: sdpa_compiled() is false
/// and sdpa_attention_available() never holds.

#include <torch/torch.h>

#include "ropelab/ops/attention/key_visibility.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// Whether this LibTorch has at::scaled_dot_product_attention.
bool sdpa_compiled();

/// Whether sdpa_attention computes this call: the LibTorch has it; q, k and v (B, H, T, Dh)
/// of one floating type on one device other than the CPU, k and v of q's batch and heads; no
/// bias of any form; no window (so no sinks either).
bool sdpa_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const ScoreBias& bias, const KeyVisibility& visibility);

/// Which keys each query sees, as the boolean mask SDPA takes (true: the query sees the key),
/// (B, 1, Tq, Tk) with padding, (1, 1, Tq, Tk) without; undefined where no key is hidden or
/// where SDPA's own `is_causal` says it exactly (causal, Tq == Tk, no padding; sdpa_is_causal).
/// Query i is aligned with key i + Tk - Tq (key_visibility.h), the bottom right, which
/// `is_causal` does not do when Tq != Tk (it aligns the top left).
torch::Tensor sdpa_visible_keys(const torch::Tensor& key_padding_mask, bool causal, int64_t tq, int64_t tk,
                                const torch::Device& device);
/// Whether SDPA's `is_causal` flag replaces the mask (causal, Tq == Tk, no padding).
bool sdpa_is_causal(const torch::Tensor& key_padding_mask, bool causal, int64_t tq, int64_t tk);

/// softmax(q k^T / sqrt(Dh), hidden keys masked) v by at::scaled_dot_product_attention, with
/// dropout `p` on the probabilities; key_padding_mask (B, Tk) true at padded keys, or
/// undefined. A query that sees no key gives 0, as every ropelab kernel does. Differentiable
/// in q, k and v. Throws where !sdpa_compiled(). -> (B, H, Tq, Dh)
torch::Tensor sdpa_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& key_padding_mask, bool causal, double p);

}  // namespace ropelab
