// TorchScript registration of the fused rotary operators and the attention kernels: the
// namespace `ropelab` in torch.ops, loadable from PyTorch Python with
// torch.ops.load_library("build/libropelab_ops.so") and callable from TorchScript compiled at
// run time. Each differentiates through the C++ autograd Functions it calls.
#include <torch/library.h>

#include <string>
#include <vector>

#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/ops/attention/streaming_attention.h"
#include "ropelab/ops/rotary/rotary.h"

namespace {

using ropelab::FireTileBias;
using ropelab::KernelOptions;
using ropelab::KeyVisibility;
using ropelab::ScoreBias;

torch::Tensor rotary_op(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t time_dim,
                        bool interleaved) {
  return ropelab::rotary_fused(x, cos, sin, time_dim, interleaved);
}

std::tuple<torch::Tensor, torch::Tensor> rotary_qk_op(const torch::Tensor& q, const torch::Tensor& k,
                                                      const torch::Tensor& cos, const torch::Tensor& sin,
                                                      int64_t time_dim, bool interleaved) {
  auto [rq, rk] = ropelab::rotary_fused_qk(q, k, cos, sin, time_dim, interleaved);
  return {rq, rk};
}

torch::Tensor defined_or_empty(const c10::optional<torch::Tensor>& t) { return t.has_value() ? *t : torch::Tensor(); }

/// FIRE's six tensors in FireTileBias's order (psi, inv_norm, w1, b1, w2, b2), or none.
FireTileBias fire_bias(const c10::optional<std::vector<torch::Tensor>>& fire) {
  if (!fire.has_value()) return {};
  const auto& t = *fire;
  TORCH_CHECK(t.size() == 6, "ropelab::attention: fire takes six tensors (psi, inv_norm, w1, b1, w2, b2), got ",
              t.size());
  return FireTileBias{t[0], t[1], t[2], t[3], t[4], t[5]};
}

/// softmax(q k^T / sqrt(Dh) + bias) v over the keys each query sees (key_visibility.h), in
/// memory linear in the length: the streaming CPU kernel, or the chunked form on any device.
torch::Tensor attention_op(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const c10::optional<torch::Tensor>& key_padding_mask,
                           const c10::optional<torch::Tensor>& bias, const c10::optional<torch::Tensor>& relative_bias,
                           const c10::optional<torch::Tensor>& forget,
                           const c10::optional<std::vector<torch::Tensor>>& fire, bool causal, int64_t window,
                           int64_t sinks, const std::string& kernel) {
  TORCH_CHECK(kernel == "auto" || kernel == "streaming" || kernel == "chunked",
              "ropelab::attention: kernel must be auto, streaming or chunked, got '", kernel, "'");
  TORCH_CHECK(window >= 0 && sinks >= 0, "ropelab::attention: window and sinks must be >= 0");
  TORCH_CHECK(sinks == 0 || window > 0, "ropelab::attention: sinks need a window");
  const ScoreBias score_bias(defined_or_empty(bias), defined_or_empty(relative_bias), fire_bias(fire),
                             defined_or_empty(forget));
  const KernelOptions options(KeyVisibility{causal, window, sinks});
  const auto pad = defined_or_empty(key_padding_mask);
  const bool streaming =
      kernel == "streaming" || (kernel == "auto" && ropelab::streaming_attention_available(q, k, v, score_bias));
  if (streaming) return ropelab::streaming_attention_cpu(q, k, v, pad, score_bias, options);
  TORCH_CHECK(ropelab::chunked_attention_available(q, k, v, score_bias),
              "ropelab::attention: q, k, v (B, H, T, Dh) of float or double on one device, with biases of q's type");
  return ropelab::chunked_attention(q, k, v, pad, score_bias, options);
}

}  // namespace

TORCH_LIBRARY(ropelab, m) {
  m.def("rotary(Tensor x, Tensor cos, Tensor sin, int time_dim=-2, bool interleaved=False) -> Tensor", &rotary_op);
  m.def(
      "rotary_qk(Tensor q, Tensor k, Tensor cos, Tensor sin, int time_dim=-2, bool interleaved=False) -> "
      "(Tensor, Tensor)",
      &rotary_qk_op);
  m.def(
      "attention(Tensor q, Tensor k, Tensor v, Tensor? key_padding_mask=None, Tensor? bias=None, "
      "Tensor? relative_bias=None, Tensor? forget=None, Tensor[]? fire=None, bool causal=False, int window=0, "
      "int sinks=0, str kernel='auto') -> Tensor",
      &attention_op);
}
