#include "ropelab/ops/attention/operands.h"

#include <algorithm>

#include "ropelab/ops/attention/blas.h"

namespace ropelab {

bool attention_operands_fit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const ScoreBias& bias, bool float_bias_ok) {
  const auto type = q.scalar_type();
  const auto device = q.device();
  auto operand = [&](const torch::Tensor& t) { return t.scalar_type() == type && t.device() == device; };
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || !operand(k) || !operand(v)) return false;
  auto fits = [&](const torch::Tensor& t) {
    return operand(t) || (float_bias_ok && t.scalar_type() == torch::kFloat && t.device() == device);
  };
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2);
  const auto& dense = bias.dense;
  const auto& relative = bias.relative;
  const auto& forget = bias.forget;
  const bool dense_ok =
      !dense.defined() || (fits(dense) && dense.dim() == 4 && (dense.size(0) == 1 || dense.size(0) == B) &&
                           dense.size(1) == H && dense.size(2) == Tq && dense.size(3) == Tk);
  const bool relative_ok = !relative.defined() || (fits(relative) && relative.dim() == 2 && relative.size(0) == H &&
                                                   relative.size(1) == Tq + Tk - 1);
  const bool forget_ok = !forget.defined() || (fits(forget) && forget.dim() == 3 && forget.size(0) == B &&
                                               forget.size(1) == H && forget.size(2) == Tk && Tq <= Tk);
  if (!dense_ok || !relative_ok || !forget_ok) return false;
  const auto& fire = bias.fire;
  if (!fire.defined()) return true;
  for (const auto* t : {&fire.psi, &fire.inv_norm, &fire.w1, &fire.b1, &fire.w2, &fire.b2})
    if (!t->defined() || !fits(*t)) return false;
  const int64_t K = fire.w1.numel();
  return fire.psi.dim() == 1 && fire.psi.numel() >= std::max(Tq, Tk) && fire.inv_norm.dim() == 1 &&
         fire.inv_norm.numel() == Tq && fire.b1.numel() == K && fire.w2.dim() == 2 && fire.w2.size(0) == H &&
         fire.w2.size(1) == K && fire.b2.numel() == H;
}

bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const ScoreBias& bias) {
  const auto type = q.scalar_type();
  const bool blas_ok = type == torch::kFloat ? blas::has_sgemm() : type == torch::kDouble && blas::has_dgemm();
  return blas_ok && q.device().is_cpu() && attention_operands_fit(q, k, v, bias) && q.stride(-1) == 1 &&
         k.stride(-1) == 1 && v.stride(-1) == 1;
}

void check_kernel_call(const char* kernel, bool available, const char* needs, const torch::Tensor& q,
                       const torch::Tensor& k, const torch::Tensor& key_padding_mask, const KernelOptions& options) {
  TORCH_CHECK(available, kernel, ": needs ", needs, "; got q ", q.sizes(), " ", q.scalar_type(), " on ", q.device());
  const auto& vis = options.visibility;
  TORCH_CHECK(vis.window >= 0 && vis.sinks >= 0, kernel, ": window and sinks must be >= 0, got ", vis.window, " and ",
              vis.sinks);
  TORCH_CHECK(options.tiles.queries > 0 && options.tiles.keys > 0, kernel, ": tile sizes must be positive, got ",
              options.tiles.queries, " x ", options.tiles.keys);
  const auto& chunks = options.chunks;
  TORCH_CHECK(chunks.queries >= 0 && chunks.keys > 0 && chunks.budget > 0, kernel,
              ": chunk sizes must be positive, got ", chunks.queries, " x ", chunks.keys, " within ", chunks.budget);
  TORCH_CHECK(!key_padding_mask.defined() || (key_padding_mask.dim() == 2 && key_padding_mask.size(0) == q.size(0) &&
                                              key_padding_mask.size(1) == k.size(2)),
              kernel, ": key_padding_mask must be (B, Tk) = (", q.size(0), ", ", k.size(2), "), got ",
              key_padding_mask.sizes());
}

AttentionExtras AttentionExtras::of(const torch::Tensor& q, const torch::Tensor& key_padding_mask,
                                    const ScoreBias& bias) {
  auto empty = [&](torch::ScalarType type) { return torch::empty({0}, q.options().dtype(type)); };
  auto given = [&](const torch::Tensor& t) { return t.defined() ? t.contiguous() : empty(q.scalar_type()); };
  const auto& fire = bias.fire;
  AttentionExtras x;
  x.pad = key_padding_mask.defined() ? key_padding_mask.to(q.device(), torch::kBool).contiguous() : empty(torch::kBool);
  x.dense = given(bias.dense), x.relative = given(bias.relative);
  x.psi = given(fire.psi), x.inv_norm = given(fire.inv_norm), x.b1 = given(fire.b1), x.w2 = given(fire.w2);
  x.b2 = given(fire.b2), x.forget = given(bias.forget);
  x.w1 = fire.w1.defined() ? fire.w1.reshape({-1}).contiguous() : empty(q.scalar_type());
  return x;
}

AttentionExtras AttentionExtras::saved(const torch::autograd::variable_list& s, size_t first) {
  TORCH_INTERNAL_ASSERT(s.size() >= first + 10, "AttentionExtras: too few saved tensors");
  const auto* t = s.data() + first;
  return {t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9]};
}

torch::autograd::variable_list AttentionExtras::list() const {
  return {pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget};
}

bool needs_fire_gradient(torch::autograd::AutogradContext* ctx) {
  for (size_t input = kFirstFireInput; input < kFirstFireInput + kFireInputs; ++input)
    if (ctx->needs_input_grad(input)) return true;
  return false;
}

void save_kernel_options(torch::autograd::AutogradContext* ctx, const KernelOptions& options) {
  auto& data = ctx->saved_data;
  data["causal"] = options.visibility.causal;
  data["window"] = options.visibility.window;
  data["sinks"] = options.visibility.sinks;
  data["tile_queries"] = options.tiles.queries;
  data["tile_keys"] = options.tiles.keys;
  data["chunk_queries"] = options.chunks.queries;
  data["chunk_keys"] = options.chunks.keys;
  data["chunk_budget"] = options.chunks.budget;
}

KernelOptions saved_kernel_options(torch::autograd::AutogradContext* ctx) {
  auto& data = ctx->saved_data;
  KernelOptions o;
  o.visibility = {data["causal"].toBool(), data["window"].toInt(), data["sinks"].toInt()};
  o.tiles = {data["tile_queries"].toInt(), data["tile_keys"].toInt()};
  o.chunks = {data["chunk_queries"].toInt(), data["chunk_keys"].toInt(), data["chunk_budget"].toInt()};
  return o;
}

}  // namespace ropelab
