#include "ropelab/ops/attention/sdpa_attention.h"

#include <torch/version.h>

#include <stdexcept>

namespace ropelab {

// at::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal) since
// LibTorch 2.0; later versions add arguments after these six (scale, enable_gqa), with defaults.
#if TORCH_VERSION_MAJOR >= 2
#define ROPELAB_HAS_SDPA 1
#else
#define ROPELAB_HAS_SDPA 0
#endif

bool sdpa_compiled() { return ROPELAB_HAS_SDPA != 0; }

bool sdpa_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const ScoreBias& bias, const KeyVisibility& visibility) {
  if (!sdpa_compiled() || bias.defined() || visibility.window > 0) return false;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.device().is_cpu()) return false;
  if (!q.is_floating_point() || k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type()) return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  return k.size(0) == q.size(0) && k.size(1) == q.size(1) && v.sizes().slice(0, 3) == k.sizes().slice(0, 3) &&
         k.size(3) == q.size(3);
}

bool sdpa_is_causal(const torch::Tensor& key_padding_mask, bool causal, int64_t tq, int64_t tk) {
  return causal && tq == tk && !key_padding_mask.defined();
}

torch::Tensor sdpa_visible_keys(const torch::Tensor& key_padding_mask, bool causal, int64_t tq, int64_t tk,
                                const torch::Device& device) {
  torch::Tensor visible;
  // causal with one query per step sees every key: no mask at all
  if (causal && tq > 1 && !sdpa_is_causal(key_padding_mask, causal, tq, tk)) {
    auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
    auto aligned = torch::arange(tk - tq, tk, options).unsqueeze(1);  // query i's key
    visible = (torch::arange(tk, options).unsqueeze(0) <= aligned).view({1, 1, tq, tk});
  }
  if (key_padding_mask.defined()) {
    auto keys = key_padding_mask.to(device, torch::kBool).logical_not().view({-1, 1, 1, tk});
    visible = visible.defined() ? visible.logical_and(keys) : keys.expand({-1, 1, tq, tk});
  }
  return visible;
}

torch::Tensor sdpa_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& key_padding_mask, bool causal, double p) {
#if ROPELAB_HAS_SDPA
  const int64_t tq = q.size(2), tk = k.size(2);
  const auto visible = sdpa_visible_keys(key_padding_mask, causal, tq, tk, q.device());
  const bool is_causal = sdpa_is_causal(key_padding_mask, causal, tq, tk);
  c10::optional<torch::Tensor> mask;
  if (visible.defined()) mask = visible;
  auto out = at::scaled_dot_product_attention(q, k, v, mask, p, is_causal);
  if (!key_padding_mask.defined()) return out;  // every query sees at least its own key or all keys
  // a query that sees no key: SDPA's softmax over nothing gives NaN, ropelab's kernels 0
  return out.masked_fill(visible.logical_not().all(-1, true), 0.0);
#else
  (void)q, (void)k, (void)v, (void)key_padding_mask, (void)causal, (void)p;
  throw std::logic_error("sdpa_attention: this LibTorch (before 2.0) has no scaled_dot_product_attention");
#endif
}

}  // namespace ropelab
