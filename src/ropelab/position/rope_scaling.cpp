#include "ropelab/position/rope_scaling.h"

#include <cmath>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

/// base' = base * s^(r/(r-2)) as a change of the ladder base^(-2i/r): each frequency
/// is multiplied by s^(-2i/(r-2)). `theta` is (r/2) double.
torch::Tensor ntk(const torch::Tensor& theta, double s) {
  const auto half = theta.size(0);
  TORCH_CHECK(half >= 2, "RoPE scaling: ntk needs at least 4 rotated dimensions, got ", 2 * half);
  const double r = 2.0 * static_cast<double>(half);
  auto i = torch::arange(half, theta.options());
  return theta * torch::pow(s, -2.0 * i / (r - 2.0));
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
      // rotations of pair i over the training context, and the ramp from interpolating
      // (g = 0, few rotations: long wavelengths) to keeping the frequency (g = 1)
      auto rotations = theta * (static_cast<double>(o.original_max()) / (2.0 * M_PI));
      auto g = ((rotations - o.beta_slow()) / (o.beta_fast() - o.beta_slow())).clamp(0.0, 1.0);
      scaled = (1.0 - g) * theta / s + g * theta;
      out.attention_factor = 0.1 * std::log(s) + 1.0;
      break;
    }
  }
  out.inv_freq = scaled.to(inv_freq.scalar_type());
  return out;
}

namespace {
const EnumNames<RopeScalingType, 5> kScalingNames{{{RopeScalingType::none, "none"},
                                                   {RopeScalingType::linear, "linear"},
                                                   {RopeScalingType::ntk, "ntk"},
                                                   {RopeScalingType::dynamic_ntk, "dynamic_ntk"},
                                                   {RopeScalingType::yarn, "yarn"}}};
}  // namespace

std::string to_string(RopeScalingType type) { return enum_name(type, kScalingNames); }
RopeScalingType parse_rope_scaling_type(const std::string& name) {
  return parse_enum(name, kScalingNames, "RoPE scaling type");
}

}  // namespace ropelab
