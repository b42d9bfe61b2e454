#include "ropelab/position/rope_scaling.h"

#include <cmath>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

/// base' = base * s^(r/(r-2)) as a change of the ladder base^(-2i/r): each frequency
/// is multiplied by s^(-2i/(r-2)). `theta` is (r/2) double.
/// The exponents -2i/(r-2) of that change, for the ladder `theta` (r/2).
torch::Tensor ntk_exponents(const torch::Tensor& theta) {
  const auto half = theta.size(0);
  TORCH_CHECK(half >= 2, "RoPE scaling: ntk needs at least 4 rotated dimensions, got ", 2 * half);
  const double r = 2.0 * static_cast<double>(half);
  return -2.0 * torch::arange(half, theta.options()) / (r - 2.0);
}

torch::Tensor ntk(const torch::Tensor& theta, double s) { return theta * torch::pow(s, ntk_exponents(theta)); }

/// YaRN's g_i (1: the frequency is kept, 0: interpolated) for the ladder `theta` (r/2)
/// over the training context `L`.
torch::Tensor yarn_ramp(const torch::Tensor& theta, const RopeScalingOptions& o) {
  const double L = static_cast<double>(o.original_max());
  if (o.ramp() == YarnRamp::continuous) {
    const auto rotations = theta * (L / (2.0 * M_PI));
    return ((rotations - o.beta_slow()) / (o.beta_fast() - o.beta_slow())).clamp(0.0, 1.0);
  }
  // The ladder theta_i = theta_0 * q^i: the (fractional) pair index that turns n times over L.
  const auto half = theta.size(0);
  TORCH_CHECK(half >= 2, "RoPE scaling: yarn needs at least 4 rotated dimensions, got ", 2 * half);
  const double theta0 = theta[0].item<double>(), theta1 = theta[1].item<double>();
  TORCH_CHECK(theta1 > 0, "RoPE scaling: yarn needs at least 2 rotating pairs (model.position.unrotated)");
  const double step = std::log(theta0 / theta1);
  auto pair_turning = [&](double n) { return std::log(L * theta0 / (2.0 * M_PI * n)) / step; };
  const double dims = 2.0 * static_cast<double>(half);
  const double low = std::max(std::floor(pair_turning(o.beta_fast())), 0.0);
  double high = std::min(std::ceil(pair_turning(o.beta_slow())), dims - 1.0);
  if (high == low) high += 0.001;  // a ramp of one pair
  const auto i = torch::arange(half, theta.options());
  return 1.0 - ((i - low) / (high - low)).clamp(0.0, 1.0);
}

}  // namespace

ScaledFrequencies scale_frequencies(const torch::Tensor& inv_freq, const RopeScalingOptions& o, int64_t length) {
  ScaledFrequencies out;
  if (o.type() == RopeScalingType::none) {
    out.inv_freq = inv_freq;
    return out;
  }
  const auto theta = inv_freq.to(torch::kDouble);  // the ladder in double: the scaled one is cast once
  const double s = o.factor();
  torch::Tensor scaled;
  switch (o.type()) {
    case RopeScalingType::none:
      break;
    case RopeScalingType::linear:
      scaled = theta;
      out.position_divisor = s;
      break;
    case RopeScalingType::ntk:
      scaled = ntk(theta, s);
      break;
    case RopeScalingType::dynamic_ntk: {
      TORCH_CHECK(o.original_max() > 0, "RoPE scaling: dynamic_ntk needs original_max, got ", o.original_max());
      const double dynamic = std::max(1.0, static_cast<double>(length) / static_cast<double>(o.original_max()));
      scaled = ntk(theta, dynamic);
      break;
    }
    case RopeScalingType::yarn: {
      TORCH_CHECK(o.original_max() > 0, "RoPE scaling: yarn needs original_max, got ", o.original_max());
      // from interpolating (g = 0: few rotations, long wavelengths) to keeping (g = 1)
      const auto g = yarn_ramp(theta, o);
      scaled = (1.0 - g) * theta / s + g * theta;
      out.attention_factor = s <= 1.0 ? 1.0 : 0.1 * std::log(s) + 1.0;
      break;
    }
  }
  out.inv_freq = scaled.to(inv_freq.scalar_type());
  return out;
}

torch::Tensor dynamic_ntk_token_angles(const torch::Tensor& inv_freq, const torch::Tensor& positions,
                                       int64_t original_max) {
  TORCH_CHECK(original_max > 0, "RoPE scaling: dynamic_ntk needs original_max, got ", original_max);
  const auto theta = inv_freq.to(torch::kDouble);
  const auto n = positions.to(theta.options()).unsqueeze(-1);                     // (..., T, 1)
  const auto s = ((n + 1.0) / static_cast<double>(original_max)).clamp_min(1.0);  // the length seen
  return (n * theta * torch::pow(s, ntk_exponents(theta))).to(inv_freq.scalar_type());
}

namespace {
const EnumNames<RopeScalingType, 5> kScalingNames{{{RopeScalingType::none, "none"},
                                                   {RopeScalingType::linear, "linear"},
                                                   {RopeScalingType::ntk, "ntk"},
                                                   {RopeScalingType::dynamic_ntk, "dynamic_ntk"},
                                                   {RopeScalingType::yarn, "yarn"}}};

const EnumNames<YarnRamp, 2> kRampNames{{{YarnRamp::reference, "reference"}, {YarnRamp::continuous, "continuous"}}};
const EnumNames<DynamicLength, 2> kDynamicNames{{{DynamicLength::token, "token"}, {DynamicLength::call, "call"}}};
}  // namespace

std::string to_string(RopeScalingType type) { return enum_name(type, kScalingNames); }
std::string to_string(YarnRamp ramp) { return enum_name(ramp, kRampNames); }
YarnRamp parse_yarn_ramp(const std::string& name) { return parse_enum(name, kRampNames, "YaRN ramp"); }
std::string to_string(DynamicLength length) { return enum_name(length, kDynamicNames); }
DynamicLength parse_dynamic_length(const std::string& name) {
  return parse_enum(name, kDynamicNames, "dynamic NTK length");
}
RopeScalingType parse_rope_scaling_type(const std::string& name) {
  return parse_enum(name, kScalingNames, "RoPE scaling type");
}

}  // namespace ropelab
