#include "ropelab/position/position_encoder.h"

#include "ropelab/position/encoders.h"
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
  table_ = register_module("table", torch::nn::Embedding(options.max_len(), geometry.d_model));
  // Same scale as the token embeddings after their sqrt(D) factor would be too large;
  // a small normal init keeps the positions from swamping the tokens at the start.
  torch::NoGradGuard no_grad;
  table_->weight.normal_(0.0, 0.02);
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

RotaryEncoder::RotaryEncoder(const PositionOptions& options, const PositionGeometry& geometry, int64_t axes)
    : head_dim_(geometry.d_model / geometry.heads),
      axes_(axes),
      layout_(options.layout()),
      impl_(options.rotary_impl()) {
  TORCH_CHECK(axes_ >= 1, "RotaryEncoder: axes must be >= 1, got ", axes_);
  TORCH_CHECK(options.fraction() > 0.0 && options.fraction() <= 1.0, "RotaryEncoder: fraction must be in (0, 1], got ",
              options.fraction());
  rotary_dim_ = static_cast<int64_t>(std::llround(options.fraction() * static_cast<double>(head_dim_)));
  TORCH_CHECK(rotary_dim_ % (2 * axes_) == 0 && rotary_dim_ > 0, "RotaryEncoder: rotated dimensions (", rotary_dim_,
              " = fraction ", options.fraction(), " x head_dim ", head_dim_,
              ") must be a positive multiple of 2 x axes = ", 2 * axes_);
  inv_freq_ = register_buffer("inv_freq", inverse_frequencies(rotary_dim_ / axes_, options.base()));
}

torch::Tensor RotaryEncoder::angles(const Positions& positions) const {
  TORCH_CHECK(positions.axes() == axes_, "RotaryEncoder: expected positions with ", axes_,
              " coordinates per token, got ", positions.axes());
  auto coords = positions.coordinates().to(inv_freq_.dtype());  // (..., T, N)
  // (..., T, N, r/2/N) -> (..., T, r/2): block a holds axis a's angles
  return (coords.unsqueeze(-1) * inv_freq_).flatten(-2);
}

const std::vector<torch::Tensor>& RotaryEncoder::tables(const Positions& positions, const torch::Tensor& like) const {
  return positions.derived(this, like.scalar_type(), [&] {
    auto a = angles(positions);                   // (T, r/2) or (B, T, r/2)
    if (positions.batched()) a = a.unsqueeze(1);  // (B, 1, T, r/2): broadcast over heads
    return std::vector<torch::Tensor>{a.cos().to(like.scalar_type()), a.sin().to(like.scalar_type())};
  });
}

torch::Tensor RotaryEncoder::rotate(const torch::Tensor& x, const Positions& positions) {
  TORCH_CHECK(x.size(-1) == head_dim_, "RotaryEncoder: expected head_dim ", head_dim_, ", got ", x.size(-1));
  const auto& t = tables(positions, x);
  const bool interleaved = layout_ == RotaryLayout::interleaved;
  if (!positions.batched() && impl_ == RotaryImpl::fused && rotary_fused_supports(x))
    return rotary_fused(x, t[0], t[1], -2, interleaved);
  if (!positions.batched() && impl_ == RotaryImpl::script) return rotary_script(x, t[0], t[1], -2, interleaved);
  return rotary_eager_broadcast(x, t[0], t[1], interleaved);
}

std::pair<torch::Tensor, torch::Tensor> RotaryEncoder::rotate_pair(const torch::Tensor& q, const torch::Tensor& k,
                                                                   const Positions& positions) {
  if (!positions.batched() && impl_ == RotaryImpl::fused && rotary_fused_supports(q) && q.size(-2) == k.size(-2)) {
    TORCH_CHECK(q.size(-1) == head_dim_, "RotaryEncoder: expected head_dim ", head_dim_, ", got ", q.size(-1));
    const auto& t = tables(positions, q);
    return rotary_fused_qk(q, k, t[0], t[1], -2, layout_ == RotaryLayout::interleaved);
  }
  return {rotate(q, positions), rotate(k, positions)};
}

// --- T5 relative bias ------------------------------------------------------------

T5BiasEncoder::T5BiasEncoder(const PositionOptions& options, const PositionGeometry& geometry)
    : num_buckets_(options.num_buckets()), max_distance_(options.max_distance()), bidirectional_(!geometry.causal) {
  const int64_t exact = (bidirectional_ ? num_buckets_ / 2 : num_buckets_) / 2;
  TORCH_CHECK(exact >= 1, "T5BiasEncoder: num_buckets too small, got ", num_buckets_);
  TORCH_CHECK(max_distance_ > exact, "T5BiasEncoder: max_distance (", max_distance_,
              ") must exceed the exact-bucket range (", exact, ")");
  table_ = register_module("table", torch::nn::Embedding(num_buckets_, geometry.heads));
}

torch::Tensor t5_relative_bucket(const torch::Tensor& relative, bool bidirectional, int64_t num_buckets,
                                 int64_t max_distance) {
  auto bucket = torch::zeros_like(relative);
  torch::Tensor n;
  if (bidirectional) {
    num_buckets /= 2;
    bucket = bucket + (relative > 0).to(torch::kLong) * num_buckets;
    n = relative.abs();
  } else {
    n = (-relative).clamp_min(0);
  }
  const int64_t max_exact = num_buckets / 2;
  auto is_small = n < max_exact;
  // log-spaced buckets from max_exact up to max_distance; clamp n >= 1 before the log
  auto nf = n.clamp_min(1).to(torch::kFloat);
  auto large = max_exact + (torch::log(nf / static_cast<double>(max_exact)) /
                            std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)) *
                            static_cast<double>(num_buckets - max_exact))
                               .to(torch::kLong);
  large = large.clamp_max(num_buckets - 1);
  return bucket + torch::where(is_small, n, large);
}

torch::Tensor T5BiasEncoder::logit_bias(const Positions& q, const Positions& k) {
  TORCH_CHECK(q.axes() == 1 && k.axes() == 1, "T5BiasEncoder: expected 1-D positions, got ", q.axes(), " and ",
              k.axes(), " axes");
  const auto &q_positions = q.values(), &k_positions = k.values();
  TORCH_CHECK(q_positions.dim() == k_positions.dim(), "T5BiasEncoder: query and key positions must both be shared ",
              "or both batched, got ", q_positions.sizes(), " and ", k_positions.sizes());
  auto relative = k_positions.unsqueeze(-2) - q_positions.unsqueeze(-1);  // (..., Tq, Tk)
  auto buckets = t5_relative_bucket(relative, bidirectional_, num_buckets_, max_distance_);
  auto bias = table_(buckets);                        // (..., Tq, Tk, H)
  bias = bias.movedim(-1, -3);                        // (..., H, Tq, Tk)
  return bias.dim() == 3 ? bias.unsqueeze(0) : bias;  // (1|B, H, Tq, Tk)
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
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled PositionType");
}

namespace {
const EnumNames<PositionType, 6> kPositionNames{{{PositionType::none, "none"},
                                                 {PositionType::sinusoidal, "sinusoidal"},
                                                 {PositionType::learned, "learned"},
                                                 {PositionType::t5_bias, "t5_bias"},
                                                 {PositionType::rotary, "rotary"},
                                                 {PositionType::rotary_nd, "rotary_nd"}}};
const EnumNames<SinusoidLayout, 2> kSinusoidNames{
    {{SinusoidLayout::interleaved, "interleaved"}, {SinusoidLayout::concat, "concat"}}};
const EnumNames<RotaryLayout, 2> kRotaryNames{
    {{RotaryLayout::half, "half"}, {RotaryLayout::interleaved, "interleaved"}}};
}  // namespace

std::string to_string(PositionType type) { return enum_name(type, kPositionNames); }
std::string to_string(SinusoidLayout layout) { return enum_name(layout, kSinusoidNames); }
std::string to_string(RotaryLayout layout) { return enum_name(layout, kRotaryNames); }
PositionType parse_position_type(const std::string& name) { return parse_enum(name, kPositionNames, "position type"); }
SinusoidLayout parse_sinusoid_layout(const std::string& name) {
  return parse_enum(name, kSinusoidNames, "sinusoid layout");
}
RotaryLayout parse_rotary_layout(const std::string& name) { return parse_enum(name, kRotaryNames, "rotary layout"); }

}  // namespace ropelab
