#include "ropelab/ops/attention/operands.h"

#include "ropelab/ops/attention/blas.h"

namespace ropelab {

bool attention_operands_fit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                            const FireTileBias& fire, const torch::Tensor& forget) {
  const auto type = q.scalar_type();
  const auto device = q.device();
  auto fits = [&](const torch::Tensor& t) { return t.scalar_type() == type && t.device() == device; };
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || !fits(k) || !fits(v)) return false;
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2);
  const bool dense_ok =
      !dense_bias.defined() ||
      (fits(dense_bias) && dense_bias.dim() == 4 && (dense_bias.size(0) == 1 || dense_bias.size(0) == B) &&
       dense_bias.size(1) == H && dense_bias.size(2) == Tq && dense_bias.size(3) == Tk);
  const bool relative_ok =
      !relative_bias.defined() || (fits(relative_bias) && relative_bias.dim() == 2 && relative_bias.size(0) == H &&
                                   relative_bias.size(1) == Tq + Tk - 1);
  const bool forget_ok = !forget.defined() || (fits(forget) && forget.dim() == 3 && forget.size(0) == B &&
                                               forget.size(1) == H && forget.size(2) == Tk && Tq <= Tk);
  if (!dense_ok || !relative_ok || !forget_ok) return false;
  if (!fire.defined()) return true;
  for (const auto* t : {&fire.psi, &fire.inv_norm, &fire.w1, &fire.b1, &fire.w2, &fire.b2})
    if (!t->defined() || !fits(*t)) return false;
  const int64_t K = fire.w1.numel();
  return fire.psi.dim() == 1 && fire.psi.numel() >= std::max(Tq, Tk) && fire.inv_norm.dim() == 1 &&
         fire.inv_norm.numel() == Tq && fire.b1.numel() == K && fire.w2.dim() == 2 && fire.w2.size(0) == H &&
         fire.w2.size(1) == K && fire.b2.numel() == H;
}

bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                               const FireTileBias& fire, const torch::Tensor& forget) {
  const auto type = q.scalar_type();
  const bool blas_ok = type == torch::kFloat ? blas::has_sgemm() : type == torch::kDouble && blas::has_dgemm();
  return blas_ok && q.device().is_cpu() && attention_operands_fit(q, k, v, dense_bias, relative_bias, fire, forget) &&
         q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1;
}

AttentionExtras AttentionExtras::of(const torch::Tensor& q, const torch::Tensor& key_padding_mask,
                                    const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                                    const FireTileBias& fire, const torch::Tensor& forget) {
  auto empty = [&](torch::ScalarType type) { return torch::empty({0}, q.options().dtype(type)); };
  auto given = [&](const torch::Tensor& t) { return t.defined() ? t.contiguous() : empty(q.scalar_type()); };
  AttentionExtras x;
  x.pad = key_padding_mask.defined() ? key_padding_mask.to(q.device(), torch::kBool).contiguous() : empty(torch::kBool);
  x.dense = given(dense_bias), x.relative = given(relative_bias);
  x.psi = given(fire.psi), x.inv_norm = given(fire.inv_norm), x.b1 = given(fire.b1), x.w2 = given(fire.w2);
  x.b2 = given(fire.b2), x.forget = given(forget);
  x.w1 = fire.w1.defined() ? fire.w1.reshape({-1}).contiguous() : empty(q.scalar_type());
  return x;
}

bool needs_fire_gradient(torch::autograd::AutogradContext* ctx) {
  for (size_t input = kFirstFireInput; input < kFirstFireInput + kFireInputs; ++input)
    if (ctx->needs_input_grad(input)) return true;
  return false;
}

void save_visibility(torch::autograd::AutogradContext* ctx, const KeyVisibility& visibility) {
  ctx->saved_data["causal"] = visibility.causal;
  ctx->saved_data["window"] = visibility.window;
  ctx->saved_data["sinks"] = visibility.sinks;
}

KeyVisibility saved_visibility(torch::autograd::AutogradContext* ctx) {
  return {ctx->saved_data["causal"].toBool(), ctx->saved_data["window"].toInt(), ctx->saved_data["sinks"].toInt()};
}

}  // namespace ropelab
