#include "ropelab/position/position_encoder.h"

#include <ATen/OpMathType.h>

#include "ropelab/position/encoders.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

/// inverse frequencies base^(-2i/dim), i = 0 .. dim/2-1, as a (dim/2) float tensor.
torch::Tensor inverse_frequencies(int64_t dim, double base) {
  auto i = torch::arange(0, dim / 2, torch::kDouble);
  return torch::pow(base, -2.0 * i / static_cast<double>(dim)).to(torch::kFloat);
}

}  // namespace

// --- sinusoidal ----------------------------------------------------------------

SinusoidalEncoder::SinusoidalEncoder(const PositionOptions& options, const PositionGeometry& geometry)
    : layout_(options.sinusoid_layout()) {
  TORCH_CHECK(geometry.d_model % 2 == 0, "SinusoidalEncoder: d_model must be even, got ", geometry.d_model);
  inv_freq_ = register_buffer("inv_freq", inverse_frequencies(geometry.d_model, options.base()));
}

torch::Tensor SinusoidalEncoder::table(const torch::Tensor& positions) const {
  auto angles = positions.to(inv_freq_.dtype()).unsqueeze(-1) * inv_freq_;  // (..., D/2)
  if (layout_ == SinusoidLayout::concat) return torch::cat({angles.sin(), angles.cos()}, -1);
  // interleaved: (..., D/2, 2) -> (..., D) puts sin at even and cos at odd dims
  return torch::stack({angles.sin(), angles.cos()}, -1).flatten(-2);
}

torch::Tensor SinusoidalEncoder::embed(const torch::Tensor& x, const Positions& positions) {
  auto pe = table(positions.values()).to(x.dtype());  // (T, D) or (B, T, D)
  return x + pe;
}

// --- learned -------------------------------------------------------------------

LearnedEncoder::LearnedEncoder(const PositionOptions& options, const PositionGeometry& geometry) {
  TORCH_CHECK(options.max_len() > 0, "LearnedEncoder: max_len must be positive, got ", options.max_len());
  TORCH_CHECK(options.learned_init_std() >= 0, "LearnedEncoder: learned_init_std must be >= 0, got ",
              options.learned_init_std());
  table_ = register_module("table", torch::nn::Embedding(options.max_len(), geometry.d_model));
  torch::NoGradGuard no_grad;
  table_->weight.normal_(0.0, options.learned_init_std());
}

torch::Tensor LearnedEncoder::embed(const torch::Tensor& x, const Positions& p) {
  const auto& positions = p.values();
  // A clear message on the CPU; elsewhere the embedding's own bounds check applies,
  // without a host synchronisation on every forward pass.
  if (positions.device().is_cpu() && positions.numel() > 0) {
    const int64_t max_len = table_->weight.size(0), last = positions.max().item<int64_t>();
    TORCH_CHECK(last < max_len, "LearnedEncoder: position ", last, " is beyond the learned table of ", max_len,
                " positions (raise position.max_len)");
  }
  return x + table_(positions);
}

// --- rotary --------------------------------------------------------------------

RotaryEncoder::RotaryEncoder(const PositionOptions& options, const PositionGeometry& geometry, int64_t axes, bool xpos)
    : head_dim_(geometry.d_model / geometry.heads),
      axes_(axes),
      layout_(options.layout()),
      scaling_(options.scaling()),
      xpos_(xpos),
      scale_base_(options.scale_base()),
      impl_(options.rotary_impl()) {
  TORCH_CHECK(axes_ >= 1, "RotaryEncoder: axes must be >= 1, got ", axes_);
  TORCH_CHECK(options.fraction() > 0.0 && options.fraction() <= 1.0, "RotaryEncoder: fraction must be in (0, 1], got ",
              options.fraction());
  rotary_dim_ = static_cast<int64_t>(std::llround(options.fraction() * static_cast<double>(head_dim_)));
  TORCH_CHECK(rotary_dim_ % (2 * axes_) == 0 && rotary_dim_ > 0, "RotaryEncoder: rotated dimensions (", rotary_dim_,
              " = fraction ", options.fraction(), " x head_dim ", head_dim_,
              ") must be a positive multiple of 2 x axes = ", 2 * axes_);
  TORCH_CHECK(scaling_.factor() >= 1.0, "RotaryEncoder: scaling.factor must be >= 1, got ", scaling_.factor());
  TORCH_CHECK(
      scaling_.type() != RopeScalingType::dynamic_ntk || scaling_.dynamic() == DynamicLength::call || axes_ == 1,
      "RotaryEncoder: dynamic_ntk per token needs 1-D positions (", axes_,
      " axes have no one length seen); use scaling.dynamic: call");
  inv_freq_ = register_buffer("inv_freq", inverse_frequencies(rotary_dim_ / axes_, options.base()));
  TORCH_CHECK(options.unrotated() >= 0.0 && options.unrotated() < 1.0,
              "RotaryEncoder: unrotated must be in [0, 1), got ", options.unrotated());
  if (options.unrotated() > 0) {  // p-RoPE: the slowest pairs of each axis' ladder keep angle 0
    TORCH_CHECK(!xpos_, "RotaryEncoder: unrotated applies to rotary, not xPos");
    const auto pairs = inv_freq_.size(0);
    const auto still = static_cast<int64_t>(std::llround(options.unrotated() * static_cast<double>(pairs)));
    TORCH_CHECK(still < pairs, "RotaryEncoder: unrotated ", options.unrotated(), " leaves none of the ", pairs,
                " pairs rotating");
    torch::NoGradGuard no_grad;
    inv_freq_.narrow(0, pairs - still, still).zero_();
  }
  attention_factor_ = scale_frequencies(inv_freq_, scaling_, 1).attention_factor;
  if (xpos_) {
    TORCH_CHECK(axes_ == 1, "RotaryEncoder: xPos is 1-D, got ", axes_, " axes");
    TORCH_CHECK(geometry.causal, "xPos is defined for causal attention only (Sun et al. 2022): its decay favours ",
                "earlier keys, which a bidirectional stack would also see after the query");
    TORCH_CHECK(scale_base_ > 0, "RotaryEncoder: scale_base must be positive, got ", scale_base_);
    constexpr double gamma = 0.4;
    auto i = torch::arange(rotary_dim_ / 2, torch::kDouble);
    zeta_ = register_buffer("zeta",
                            ((2.0 * i / static_cast<double>(rotary_dim_) + gamma) / (1.0 + gamma)).to(torch::kFloat));
  }
}

torch::Tensor RotaryEncoder::angles(const Positions& positions) const {
  TORCH_CHECK(positions.axes() == axes_, "RotaryEncoder: expected positions with ", axes_,
              " coordinates per token, got ", positions.axes());
  const auto coords = positions.coordinates();  // (..., T, N)
  if (scaling_.type() == RopeScalingType::dynamic_ntk && scaling_.dynamic() == DynamicLength::token)
    return dynamic_ntk_token_angles(inv_freq_, coords.squeeze(-1), scaling_.original_max());
  // dynamic NTK per call follows the length of the call: its largest position + 1
  const int64_t length = follows_length() ? coords.max().item<int64_t>() + 1 : 0;
  const auto f = scale_frequencies(inv_freq_, scaling_, length);
  auto c = coords.to(f.inv_freq.dtype());
  if (f.position_divisor != 1.0) c = c / f.position_divisor;
  // (..., T, N, r/2/N) -> (..., T, r/2): block a holds axis a's angles
  return (c.unsqueeze(-1) * f.inv_freq).flatten(-2);
}

torch::Tensor RotaryEncoder::xpos_scale(const Positions& positions, double sign) const {
  TORCH_CHECK(xpos_, "RotaryEncoder: xpos_scale without xPos");
  auto exponent = (positions.values().to(torch::kDouble) - static_cast<double>(positions.origin())) *
                  (sign / scale_base_);                                                   // (..., T)
  return torch::pow(zeta_.to(torch::kDouble), exponent.unsqueeze(-1)).to(torch::kFloat);  // (..., T, r/2)
}

const std::vector<torch::Tensor>& RotaryEncoder::tables(const Positions& positions, const torch::Tensor& like) const {
  // fp32 tables for bf16 and fp16 inputs (model/precision.h); the fused kernel computes in fp32
  const auto dtype = at::toOpMathType(like.scalar_type());
  return positions.derived(this, dtype, [&] {
    auto a = angles(positions);  // (T, r/2) or (B, T, r/2), float
    auto cos = a.cos(), sin = a.sin();
    if (attention_factor_ != 1.0) cos = cos * attention_factor_, sin = sin * attention_factor_;  // YaRN
    auto batched = [&](torch::Tensor t) { return positions.batched() ? t.unsqueeze(1) : t; };    // (B, 1, T, r/2)
    if (!xpos_) return std::vector<torch::Tensor>{batched(cos).to(dtype), batched(sin).to(dtype)};
    auto up = xpos_scale(positions, 1.0), down = xpos_scale(positions, -1.0);
    return std::vector<torch::Tensor>{batched(cos * up).to(dtype), batched(sin * up).to(dtype),
                                      batched(cos * down).to(dtype), batched(sin * down).to(dtype)};
  });
}

torch::Tensor RotaryEncoder::apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                   bool batched) const {
  const bool interleaved = layout_ == RotaryLayout::interleaved;
  if (!batched && impl_ == RotaryImpl::fused && rotary_fused_supports(x))
    return rotary_fused(x, cos, sin, -2, interleaved);
  if (!batched && impl_ == RotaryImpl::script) return rotary_script(x, cos, sin, -2, interleaved);
  return rotary_eager_broadcast(x, cos, sin, interleaved);
}

torch::Tensor RotaryEncoder::scale_passthrough(torch::Tensor x) const {
  if (attention_factor_ == 1.0 || rotary_dim_ == head_dim_) return x;
  return torch::cat(
      {x.narrow(-1, 0, rotary_dim_), x.narrow(-1, rotary_dim_, head_dim_ - rotary_dim_) * attention_factor_}, -1);
}

torch::Tensor RotaryEncoder::rotate(const torch::Tensor& x, const Positions& positions) {
  TORCH_CHECK(!xpos_, "RotaryEncoder: xPos scales queries and keys differently; rotate them with rotate_pair");
  TORCH_CHECK(x.size(-1) == head_dim_, "RotaryEncoder: expected head_dim ", head_dim_, ", got ", x.size(-1));
  const auto& t = tables(positions, x);
  return scale_passthrough(apply(x, t[0], t[1], positions.batched()));
}

std::pair<torch::Tensor, torch::Tensor> RotaryEncoder::rotate_pair(const torch::Tensor& q, const torch::Tensor& k,
                                                                   const Positions& positions) {
  TORCH_CHECK(q.size(-1) == head_dim_, "RotaryEncoder: expected head_dim ", head_dim_, ", got ", q.size(-1));
  const auto& t = tables(positions, q);
  if (xpos_) return {apply(q, t[0], t[1], positions.batched()), apply(k, t[2], t[3], positions.batched())};
  if (!positions.batched() && impl_ == RotaryImpl::fused && rotary_fused_supports(q) && q.size(-2) == k.size(-2)) {
    auto [rq, rk] = rotary_fused_qk(q, k, t[0], t[1], -2, layout_ == RotaryLayout::interleaved);
    return {scale_passthrough(rq), scale_passthrough(rk)};
  }
  return {rotate(q, positions), rotate(k, positions)};
}

// --- factory and names -------------------------------------------------------------

namespace {
class NoPositionEncoder : public PositionEncoderImpl {};
}  // namespace

PositionEncoder make_position_encoder(const PositionOptions& options, const PositionGeometry& geometry) {
  switch (options.type()) {
    case PositionType::none:
      return std::make_shared<NoPositionEncoder>();
    case PositionType::sinusoidal:
      return std::make_shared<SinusoidalEncoder>(options, geometry);
    case PositionType::learned:
      return std::make_shared<LearnedEncoder>(options, geometry);
    case PositionType::t5_bias:
      return std::make_shared<T5BiasEncoder>(options, geometry);
    case PositionType::rotary:
      return std::make_shared<RotaryEncoder>(options, geometry, 1);
    case PositionType::rotary_nd:
      return std::make_shared<RotaryEncoder>(options, geometry, options.axes());
    case PositionType::xpos:
      return std::make_shared<RotaryEncoder>(options, geometry, 1, true);
    case PositionType::alibi:
      return std::make_shared<AlibiEncoder>(options, geometry);
    case PositionType::kerple:
      return std::make_shared<KerpleEncoder>(options, geometry);
    case PositionType::kerple_power:
      return std::make_shared<KerpleEncoder>(options, geometry, KerpleEncoder::Form::power);
    case PositionType::fire:
      return std::make_shared<FireEncoder>(options, geometry);
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled PositionType");
}

namespace {
const EnumNames<SinusoidLayout, 2> kSinusoidNames{
    {{SinusoidLayout::interleaved, "interleaved"}, {SinusoidLayout::concat, "concat"}}};
const EnumNames<RotaryLayout, 2> kRotaryNames{
    {{RotaryLayout::half, "half"}, {RotaryLayout::interleaved, "interleaved"}}};
const EnumNames<KerpleBound, 2> kKerpleBoundNames{{{KerpleBound::reset, "reset"}, {KerpleBound::clamp, "clamp"}}};
}  // namespace

std::string to_string(PositionType type) { return position_traits(type).name; }
std::string to_string(SinusoidLayout layout) { return enum_name(layout, kSinusoidNames); }
std::string to_string(RotaryLayout layout) { return enum_name(layout, kRotaryNames); }
std::string to_string(KerpleBound bound) { return enum_name(bound, kKerpleBoundNames); }
PositionType parse_position_type(const std::string& name) {
  return parse_row_name(position_registry(), name, "position type");
}
SinusoidLayout parse_sinusoid_layout(const std::string& name) {
  return parse_enum(name, kSinusoidNames, "sinusoid layout");
}
RotaryLayout parse_rotary_layout(const std::string& name) { return parse_enum(name, kRotaryNames, "rotary layout"); }
KerpleBound parse_kerple_bound(const std::string& name) { return parse_enum(name, kKerpleBoundNames, "Kerple bound"); }

}  // namespace ropelab
