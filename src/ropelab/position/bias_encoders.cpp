// Position encoders that act through an additive attention-logit bias: T5, ALiBi,
// Kerple and FIRE (declared in position/encoders.h).
#include <cmath>
#include <limits>

#include "ropelab/position/encoders.h"

namespace ropelab {

// --- relative biases ------------------------------------------------------------------

torch::Tensor RelativeBiasEncoder::logit_bias(const Positions& q, const Positions& k) {
  TORCH_CHECK(q.axes() == 1 && k.axes() == 1, "relative position bias: expected 1-D positions, got ", q.axes(), " and ",
              k.axes(), " axes");
  const auto &q_positions = q.values(), &k_positions = k.values();
  TORCH_CHECK(q_positions.dim() == k_positions.dim(), "relative position bias: query and key positions must both ",
              "be shared or both batched, got ", q_positions.sizes(), " and ", k_positions.sizes());
  auto relative = k_positions.unsqueeze(-2) - q_positions.unsqueeze(-1);  // (..., Tq, Tk)
  auto bias = relative_bias(relative);                                    // (H, ..., Tq, Tk)
  return bias.dim() == 3 ? bias.unsqueeze(0) : bias.transpose(0, 1);      // (1|B, H, Tq, Tk)
}

torch::Tensor relative_bias_table(PositionEncoderImpl& encoder, int64_t tq, int64_t tk, const torch::Device& device) {
  TORCH_CHECK(encoder.bias_is_relative(), "relative_bias_table: the encoder's bias is not relative");
  // column c <-> key_pos - query_pos = c - (Tk - 1), from -(Tk - 1) to Tq - 1
  auto relative = torch::arange(-(tk - 1), tq, torch::TensorOptions().dtype(torch::kLong).device(device));
  return encoder.relative_bias(relative);  // (H, Tq + Tk - 1)
}

namespace {
/// (H) per-head values viewed to broadcast against a tensor of `dims` dimensions.
torch::Tensor per_head(const torch::Tensor& values, int64_t dims) {
  std::vector<int64_t> shape(static_cast<size_t>(dims) + 1, 1);
  shape[0] = values.size(0);
  return values.view(shape);
}
}  // namespace

// --- T5 ------------------------------------------------------------------------------

T5BiasEncoder::T5BiasEncoder(const PositionOptions& options, const PositionGeometry& geometry)
    : num_buckets_(options.num_buckets()), max_distance_(options.max_distance()), bidirectional_(!geometry.causal) {
  const int64_t exact = (bidirectional_ ? num_buckets_ / 2 : num_buckets_) / 2;
  TORCH_CHECK(exact >= 1, "T5BiasEncoder: num_buckets too small, got ", num_buckets_);
  TORCH_CHECK(max_distance_ > exact, "T5BiasEncoder: max_distance (", max_distance_,
              ") must exceed the exact-bucket range (", exact, ")");
  table_ = register_module("table", torch::nn::Embedding(num_buckets_, geometry.heads));
  const double std =
      options.t5_init_std() > 0 ? options.t5_init_std() : 1.0 / std::sqrt(static_cast<double>(geometry.d_model));
  torch::NoGradGuard no_grad;
  table_->weight.normal_(0.0, std);
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

torch::Tensor T5BiasEncoder::relative_bias(const torch::Tensor& relative) {
  auto buckets = t5_relative_bucket(relative, bidirectional_, num_buckets_, max_distance_);
  return table_(buckets).movedim(-1, 0);  // (..., H) -> (H, ...)
}

// --- ALiBi ---------------------------------------------------------------------------

std::vector<double> alibi_slopes(int64_t heads) {
  TORCH_CHECK(heads > 0, "alibi_slopes: heads must be positive, got ", heads);
  auto geometric = [](int64_t n) {  // start^h, h = 1..n, start = 2^(-8/n)
    std::vector<double> out;
    const double start = std::pow(2.0, -8.0 / static_cast<double>(n));
    for (int64_t h = 1; h <= n; ++h) out.push_back(std::pow(start, static_cast<double>(h)));
    return out;
  };
  int64_t power = 1;
  while (power * 2 <= heads) power *= 2;
  auto slopes = geometric(power);
  const auto doubled = geometric(2 * power);
  for (size_t i = 0; static_cast<int64_t>(slopes.size()) < heads; i += 2) slopes.push_back(doubled[i]);
  return slopes;
}

AlibiEncoder::AlibiEncoder(const PositionOptions& options, const PositionGeometry& geometry) {
  (void)options;
  slopes_ = register_buffer("slopes", torch::tensor(alibi_slopes(geometry.heads), torch::kDouble).to(torch::kFloat));
}

torch::Tensor AlibiEncoder::relative_bias(const torch::Tensor& relative) {
  return -per_head(slopes_, relative.dim()) * relative.abs().to(slopes_.dtype()).unsqueeze(0);
}

// --- Kerple ----------------------------------------------------------------------------

namespace {
constexpr double kKerpleMin = 1e-2;  // the authors' clamp keeping r1, r2 > 0
}

KerpleEncoder::KerpleEncoder(const PositionOptions& options, const PositionGeometry& geometry, Form form)
    : form_(form), bound_(options.kerple_bound()) {
  const bool log = form == Form::log;
  r1 = register_parameter("r1", torch::rand({geometry.heads}) * (log ? 2.0 : 1.0));
  r2 = register_parameter("r2", torch::rand({geometry.heads}) * (log ? 1.0 : 2.0));
}

torch::Tensor KerpleEncoder::relative_bias(const torch::Tensor& relative) {
  const auto dims = relative.dim();
  auto distance = relative.abs().to(r1.scalar_type()).unsqueeze(0);
  const double r2_max = form_ == Form::power ? 2.0 : std::numeric_limits<double>::infinity();
  torch::Tensor a = r1, b = r2;
  if (bound_ == KerpleBound::reset) {
    // The authors' reset: the stored values move back inside the bounds. Through
    // variable_data() the write leaves autograd's version counter alone, so a graph of an
    // earlier call stays valid, and the kernel below is differentiated at the reset values.
    r1.variable_data().clamp_min_(kKerpleMin);
    r2.variable_data().clamp_(kKerpleMin, r2_max);
  } else {
    a = r1.clamp_min(kKerpleMin);
    b = r2.clamp(kKerpleMin, r2_max);
  }
  const auto scale = per_head(a, dims);
  if (form_ == Form::power) return -scale * distance.pow(per_head(b, dims));
  return -scale * torch::log1p(per_head(b, dims) * distance);
}

// --- FIRE ------------------------------------------------------------------------------

FireEncoder::FireEncoder(const PositionOptions& options, const PositionGeometry& geometry)
    : threshold_(options.fire_threshold()), last_cache_position_(geometry.last_cache_position) {
  TORCH_CHECK(options.fire_hidden() > 0, "FireEncoder: fire_hidden must be positive, got ", options.fire_hidden());
  TORCH_CHECK(threshold_ > 0, "FireEncoder: fire_threshold must be positive, got ", threshold_);
  hidden = register_module("hidden", torch::nn::Linear(1, options.fire_hidden()));
  out = register_module("out", torch::nn::Linear(options.fire_hidden(), geometry.heads));
  c = register_parameter("c", torch::tensor(0.1));
  threshold_scale = register_parameter("threshold_scale", torch::tensor(1.0));
}

FireTileBias FireEncoder::factored_bias(int64_t tq, int64_t tk) {
  auto psi = [&](const torch::Tensor& x) { return torch::log(c.abs() * x + 1.0); };
  const auto threshold = (threshold_scale * threshold_).abs();
  auto queries = torch::arange(tk - tq, tk, c.options());
  if (last_cache_position_ > 0) queries = queries.clamp_max(static_cast<double>(last_cache_position_));
  FireTileBias f;
  f.psi = psi(torch::arange(std::max(tq, tk), c.options()));
  f.inv_norm = 1.0 / (psi(torch::maximum(queries, threshold)) + 1e-6);
  f.w1 = hidden->weight.reshape({-1}), f.b1 = hidden->bias;
  f.w2 = out->weight, f.b2 = out->bias;
  return f;
}

torch::Tensor FireEncoder::logit_bias(const Positions& q, const Positions& k) {
  TORCH_CHECK(q.axes() == 1 && k.axes() == 1, "FireEncoder: expected 1-D positions, got ", q.axes(), " and ", k.axes(),
              " axes");
  const auto qp = q.values().to(c.scalar_type()), kp = k.values().to(c.scalar_type());
  TORCH_CHECK(qp.dim() == kp.dim(), "FireEncoder: query and key positions must both be shared or both batched, got ",
              qp.sizes(), " and ", kp.sizes());
  auto psi = [&](const torch::Tensor& x) { return torch::log(c.abs() * x + 1.0); };
  const auto threshold = (threshold_scale * threshold_).abs();
  const auto at = last_cache_position_ > 0 ? qp.clamp_max(static_cast<double>(last_cache_position_)) : qp;
  auto normaliser = (psi(torch::maximum(at, threshold)) + 1e-6).unsqueeze(-1);  // (..., Tq, 1)
  const int64_t tq = qp.size(-1);
  auto rows_of_bias = [&](int64_t start, int64_t n) {  // query rows [start, start + n) -> (..., H, n, Tk)
    auto distance = (qp.narrow(-1, start, n).unsqueeze(-1) - kp.unsqueeze(-2)).abs();  // (..., n, Tk)
    auto x = (psi(distance) / normaliser.narrow(-2, start, n)).unsqueeze(-1);          // (..., n, Tk, 1)
    return out(torch::relu(hidden(x))).movedim(-1, -3);
  };
  // With gradient the MLP's activations are kept for backward whatever the blocking, so the
  // bias is one piece (a view; the layer stack makes it contiguous once). Without, blocks of
  // query rows are written in place into one contiguous tensor: the (rows, Tk, hidden)
  // activations stay small at long evaluation contexts and no second (H, Tq, Tk) copy is made.
  torch::Tensor bias;
  if (torch::GradMode::is_enabled()) {
    bias = rows_of_bias(0, tq);
  } else {
    constexpr int64_t rows = 128;
    auto sizes = qp.sizes().vec();  // (..., Tq) -> (..., H, Tq, Tk)
    sizes.insert(sizes.end() - 1, out->options.out_features());
    sizes.push_back(kp.size(-1));
    bias = torch::empty(sizes, c.options());
    for (int64_t start = 0; start < tq; start += rows) {
      const auto n = std::min(rows, tq - start);
      bias.narrow(-2, start, n).copy_(rows_of_bias(start, n));
    }
  }
  return bias.dim() == 3 ? bias.unsqueeze(0) : bias;  // (1|B, H, Tq, Tk)
}

}  // namespace ropelab
