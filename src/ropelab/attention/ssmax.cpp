#include "ropelab/attention/ssmax.h"

namespace ropelab {

torch::Tensor ssmax_log_key_counts(int64_t offset, int64_t length, const KeyVisibility& visibility,
                                   const torch::Device& device) {
  TORCH_CHECK(visibility.causal, "SSMax: key counts are defined for causal attention");
  // made where it is used: no copy to the device at every call
  const auto seen = torch::arange(offset + 1, offset + length + 1, torch::dtype(torch::kLong).device(device));  // i + 1
  auto n = seen;
  if (visibility.window > 0) {
    const auto beyond = (seen - visibility.window).clamp_min(0);  // keys older than the window
    n = seen.clamp_max(visibility.window) + beyond.clamp_max(visibility.sinks);
  }
  return n.to(torch::kFloat).log();  // counts below 2^24 are exact in float
}

torch::Tensor ssmax_scaled_queries(const torch::Tensor& s, const torch::Tensor& log_n, bool causal,
                                   const torch::Tensor& q) {
  TORCH_CHECK(causal, "SSMax: needs causal self-attention");
  TORCH_CHECK(log_n.defined() && log_n.dim() == 1 && log_n.size(0) == q.size(2), "SSMax: log n of ", q.size(2),
              " queries expected, got ", log_n.defined() ? log_n.sizes() : torch::IntArrayRef{});
  const auto factor = s.view({1, -1, 1, 1}) * log_n.to(s.scalar_type()).view({1, 1, -1, 1});  // (1, H, T, 1)
  if (q.scalar_type() == factor.scalar_type()) return q * factor;
  return (q.to(factor.scalar_type()) * factor).to(q.scalar_type());
}

}  // namespace ropelab
