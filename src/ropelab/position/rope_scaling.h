#pragma once
/// RoPE scaling: rotary frequencies and angles changed for contexts longer than the
/// training context, without retraining. Scaling changes only the angles (and, for YaRN,
/// one scalar folded into the cos/sin tables), so every rotary implementation, the fused
/// kernel included, takes the scaled tables unchanged.
///
/// With s = factor, r the rotated dimensions, theta_i = base^(-2i/r) (i = 0 .. r/2-1) and
/// L = original_max, the training context:
///   linear       positions / s                          (Chen et al. 2023, position interpolation)
///   ntk          base' = base * s^(r / (r - 2))           ("NTK-aware" scaling)
///   dynamic_ntk  ntk with s = max(1, l / L) at the length l seen (Peng et al. 2023, 3.3;
///                Hugging Face's form with factor 1: `factor` is unused). `dynamic`:
///                  call   (default) every token, query and key, takes the call's length
///                         (its largest position + 1): one base per window, the logit a
///                         function of the offset. Decoding caches keys before rotation and
///                         rotates all of them at each step's length, as Peng et al. ask;
///                         an earlier token's hidden states stay those of its own step
///                  token  each token takes the length seen at it, its position + 1: in a
///                         window the token at n is rotated with the base of the prefix it
///                         ends, so a logit is no longer a function of the offset alone; a
///                         token's rotation never changes, and a cache keeps rotated keys
///   yarn         theta_i' = (1 - g_i) theta_i / s + g_i theta_i, interpolating the pairs that
///                turn few times over the training context and keeping those that turn often;
///                attention temperature sqrt(1/t) = 0.1 ln s + 1 multiplies q and k (Peng et
///                al. 2023, "YaRN", 3.2-3.4). The ramp g_i (ramp):
///                  reference   as the authors' code: d(n) = the pair index that turns n times
///                              over L, low = max(floor(d(beta_fast)), 0), high = min(ceil(
///                              d(beta_slow)), r - 1), g_i = 1 - clamp((i - low) / (high - low),
///                              0, 1): linear in the pair index between whole pairs
///                  continuous  the paper's text: with r_i = L theta_i / (2 pi) rotations over
///                              the training context, g_i = clamp((r_i - beta_slow) /
///                              (beta_fast - beta_slow), 0, 1)

#include <torch/torch.h>

#include <string>

namespace ropelab {

enum class RopeScalingType { none, linear, ntk, dynamic_ntk, yarn };
/// YaRN's ramp between interpolated and kept frequencies (see above).
enum class YarnRamp { reference, continuous };
/// Dynamic NTK: the length each token's scale follows (see above).
enum class DynamicLength { call, token };

struct RopeScalingOptions {
  TORCH_ARG(RopeScalingType, type) = RopeScalingType::none;
  /// The extension ratio s (>= 1); dynamic_ntk takes it from the length instead.
  TORCH_ARG(double, factor) = 1.0;
  /// The training context L (dynamic_ntk, yarn); 0 = data.context for language models.
  TORCH_ARG(int64_t, original_max) = 0;
  /// yarn: the ramp runs from beta_slow to beta_fast rotations over the training context.
  TORCH_ARG(double, beta_fast) = 32.0;
  TORCH_ARG(double, beta_slow) = 1.0;
  /// yarn: the authors' code's ramp over whole pairs, or the paper's continuous one.
  TORCH_ARG(YarnRamp, ramp) = YarnRamp::reference;
  /// dynamic_ntk: the call's length for every token, or the length seen by each.
  TORCH_ARG(DynamicLength, dynamic) = DynamicLength::call;
};

/// The scaled rotary frequencies of one call.
struct ScaledFrequencies {
  torch::Tensor inv_freq;         // (r/2) float: angle(n, i) = n / position_divisor * inv_freq[i]
  double position_divisor = 1.0;  // linear: s
  double attention_factor = 1.0;  // yarn: q and k are each multiplied by it
};

/// `inv_freq` (r/2) = base^(-2i/r) scaled by `options`; `length` (the largest position + 1)
/// matters for dynamic_ntk only.
ScaledFrequencies scale_frequencies(const torch::Tensor& inv_freq, const RopeScalingOptions& options, int64_t length);

/// Dynamic NTK per token: angle(n, i) = n * theta_i * s(n)^(-2i/(r-2)), the NTK ladder
/// at s(n) = max(1, (n + 1) / original_max), for `positions` (..., T) -> (..., T, r/2) in
/// inv_freq's type.
torch::Tensor dynamic_ntk_token_angles(const torch::Tensor& inv_freq, const torch::Tensor& positions,
                                       int64_t original_max);

std::string to_string(RopeScalingType type);
RopeScalingType parse_rope_scaling_type(const std::string& name);
std::string to_string(YarnRamp ramp);
YarnRamp parse_yarn_ramp(const std::string& name);
std::string to_string(DynamicLength length);
DynamicLength parse_dynamic_length(const std::string& name);

}  // namespace ropelab
