#include "ropelab/attention/backend.h"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ropelab/attention/contextual.h"
#include "ropelab/attention/performer.h"
#include "ropelab/ops/attention/fused_attention.h"
#include "ropelab/ops/attention/streaming_attention.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

torch::Tensor causal_mask(int64_t tq, int64_t tk, const torch::Device& device) {
  return torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(tk - tq + 1);
}

torch::Tensor visibility_mask(int64_t tq, int64_t tk, bool causal, int64_t window, int64_t sinks,
                              const torch::Device& device) {
  if (window <= 0) return causal && tq > 1 ? causal_mask(tq, tk, device) : torch::Tensor();
  return hidden_keys(KeyVisibility{causal, window, sinks}, tq, tk, 0, tq, 0, tk, device);
}

LogitBias LogitBias::relative_table(torch::Tensor table) {
  LogitBias bias;
  bias.relative = std::move(table);
  return bias;
}

LogitBias LogitBias::factored(FireTileBias fire) {
  LogitBias bias;
  bias.fire = std::move(fire);
  return bias;
}

torch::Tensor LogitBias::to_dense(int64_t tq, int64_t tk) const {
  torch::Tensor sum;
  auto add = [&](const torch::Tensor& t) { sum = sum.defined() ? sum + t : t; };
  if (relative.defined()) {
    TORCH_CHECK(relative.dim() == 2 && relative.size(1) == tq + tk - 1, "LogitBias: a relative table for Tq=", tq,
                " and Tk=", tk, " needs (H, ", tq + tk - 1, ") columns, got ", relative.sizes());
    auto options = torch::TensorOptions().dtype(torch::kLong).device(relative.device());
    auto column = torch::arange(tk, options).unsqueeze(0) - torch::arange(tq, options).unsqueeze(1) + (tq - 1);
    add(relative.index_select(1, column.flatten()).view({1, relative.size(0), tq, tk}));  // (1, H, Tq, Tk)
  }
  if (fire.defined()) add(fire_tile_bias_dense(fire, tq, tk));
  if (forget.defined()) {
    TORCH_CHECK(forget.dim() == 3 && forget.size(2) == tk && tq <= tk, "LogitBias: a forget gate for Tq=", tq,
                " and Tk=", tk, " needs (B, H, ", tk, ") values, got ", forget.sizes());
    add(forget.narrow(2, tk - tq, tq).unsqueeze(-1) - forget.unsqueeze(-2));  // (B, H, Tq, Tk): c[a] - c[j]
  }
  if (dense.defined()) add(dense);
  return sum;
}

void KeyValueCache::reorder(const torch::Tensor& index) {
  k = k.index_select(0, index);
  v = v.index_select(0, index);
  if (forget.defined()) forget = forget.index_select(0, index);
}

namespace {
/// The backend's own KeyValueCache in `cache`, made on first use.
KeyValueCache& key_values(AttentionCachePtr& cache) {
  if (!cache) cache = std::make_unique<KeyValueCache>();
  auto* kv = dynamic_cast<KeyValueCache*>(cache.get());
  TORCH_INTERNAL_ASSERT(kv, "attention cache of another backend");
  return *kv;
}
}  // namespace

torch::Tensor AttentionBackendImpl::forward_cached(AttentionInputs in, AttentionCachePtr& cache) {
  auto& kv = key_values(cache);
  auto& forget = in.logit_bias.forget;  // the new tokens' sums continue from the last cached one
  if (kv.k.defined()) {
    in.k = torch::cat({kv.k, in.k}, -2);
    in.v = torch::cat({kv.v, in.v}, -2);
    if (forget.defined())
      forget = torch::cat({kv.forget, forget + kv.forget.narrow(-1, kv.forget.size(-1) - 1, 1)}, -1);
  }
  kv.k = in.k, kv.v = in.v, kv.forget = forget;
  auto out = forward(in);
  if (auto keep = windowed_cache_keep(kv.k.size(-2), in.window, in.sinks, kv.k.device()); keep.defined()) {
    kv.k = kv.k.index_select(-2, keep), kv.v = kv.v.index_select(-2, keep);
    if (kv.forget.defined()) kv.forget = kv.forget.index_select(-1, keep);
  }
  return out;
}

int64_t last_cache_position(const AttentionOptions& options) {
  if (options.window() <= 0 || options.window_positions() != WindowPositions::cache) return 0;
  return options.sinks() + options.window() - 1;
}

torch::Tensor windowed_cache_keep(int64_t length, int64_t window, int64_t sinks, const torch::Device& device) {
  if (window <= 0 || length <= sinks + window - 1) return {};
  auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  return torch::cat({torch::arange(sinks, options), torch::arange(length - (window - 1), length, options)});
}

torch::Tensor AttentionBackendImpl::forward_memory(AttentionInputs in, AttentionCachePtr& cache,
                                                   const MemoryKeyValues& memory) {
  auto& kv = key_values(cache);
  if (!kv.k.defined()) std::tie(kv.k, kv.v) = memory();  // once per sentence
  in.k = kv.k, in.v = kv.v;
  return forward(in);
}

torch::Tensor attend_in_fp32(AttentionInputs in, const std::function<torch::Tensor(const AttentionInputs&)>& attend) {
  const auto reduced = [](const torch::Tensor& t) {
    return t.defined() && (t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf);
  };
  if (!reduced(in.q) && !reduced(in.k) && !reduced(in.v)) return attend(in);
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  for (auto* t : {&in.q, &in.k, &in.v, &in.sink_queries})
    if (reduced(*t)) *t = t->to(torch::kFloat);
  return attend(in);
}

void attention_before_update(torch::nn::Module& model, int64_t done) {
  for (auto& module : model.modules())
    if (auto* backend = dynamic_cast<AttentionBackendImpl*>(module.get())) backend->before_update(done);
}

SoftmaxAttention::SoftmaxAttention(const AttentionOptions& options)
    : dropout_(options.dropout()), kernel_(options.kernel()), tiles_(options.tiles()) {}

SoftmaxAttention::Path SoftmaxAttention::path(const AttentionInputs& in) const {
  if (in.contextual.defined()) return Path::contextual;
  if (dropout_ > 0.0 && is_training()) return Path::aten;
  const auto& bias = in.logit_bias;
  const bool chunked_fits =
      chunked_attention_available(in.q, in.k, in.v, bias.dense, bias.relative, bias.fire, bias.forget);
  if (kernel_ == AttentionKernel::chunked) return chunked_fits ? Path::chunked : Path::aten;
  if (kernel_ != AttentionKernel::materialized &&
      streaming_attention_available(in.q, in.k, in.v, bias.dense, bias.relative, bias.fire, bias.forget))
    return Path::streaming;
  // FIRE's factored form and a forget gate go to the materialized kernel as a dense bias of
  // their type
  const bool fire_fits = !bias.fire.defined() || bias.fire.psi.scalar_type() == in.q.scalar_type();
  const bool forget_fits = !bias.forget.defined() || bias.forget.scalar_type() == in.q.scalar_type();
  if (kernel_ != AttentionKernel::streaming && fire_fits && forget_fits &&
      fused_attention_available(in.q, in.k, in.v, bias.dense, bias.relative))
    return Path::materialized;
  // off the CPU: the chunked form for streaming, and for auto where one chunk would not do
  if (!in.q.device().is_cpu() && chunked_fits &&
      (kernel_ == AttentionKernel::streaming ||
       (kernel_ == AttentionKernel::automatic &&
        in.q.size(0) * in.q.size(1) * in.q.size(2) * in.k.size(2) > AttentionChunks{}.budget)))
    return Path::chunked;
  return Path::aten;
}

torch::Tensor SoftmaxAttention::forward(const AttentionInputs& in) {
  if (in.sinks_at_cache_positions()) return forward_sinks_at_cache_positions(in);
  const KeyVisibility visibility{in.causal, in.window, in.sinks};
  const auto& bias = in.logit_bias;
  switch (path(in)) {
    case Path::streaming:
      return streaming_attention_cpu(in.q, in.k, in.v, in.key_padding_mask, visibility, bias.dense, bias.relative,
                                     tiles_, bias.fire, bias.forget);
    case Path::chunked:
      return chunked_attention(in.q, in.k, in.v, in.key_padding_mask, visibility, bias.dense, bias.relative, bias.fire,
                               {}, bias.forget);
    case Path::materialized:
      if (bias.fire.defined() || bias.forget.defined())
        return fused_attention_cpu(in.q, in.k, in.v, in.key_padding_mask, visibility,
                                   bias.to_dense(in.q.size(-2), in.k.size(-2)));
      return fused_attention_cpu(in.q, in.k, in.v, in.key_padding_mask, visibility, bias.dense, bias.relative);
    case Path::contextual:
      return contextual_attention(in, dropout_, is_training());
    case Path::aten:
      break;
  }
  return reference_forward(in);
}

std::pair<torch::Tensor, torch::Tensor> SoftmaxAttention::forward_lse(const AttentionInputs& in) {
  const KeyVisibility visibility{in.causal, in.window, in.sinks};
  const auto& bias = in.logit_bias;
  const auto p = path(in);
  if (p == Path::streaming && !torch::GradMode::is_enabled())
    return streaming_attention_cpu_lse(in.q, in.k, in.v, in.key_padding_mask, visibility, bias.dense, bias.relative,
                                       tiles_, bias.fire, bias.forget);
  if ((p == Path::streaming || p == Path::chunked || p == Path::materialized) &&
      chunked_attention_available(in.q, in.k, in.v, bias.dense, bias.relative, bias.fire, bias.forget))
    return chunked_attention_lse(in.q, in.k, in.v, in.key_padding_mask, visibility, bias.dense, bias.relative,
                                 bias.fire, {}, bias.forget);
  TORCH_CHECK(p != Path::contextual, "SoftmaxAttention: CoPE gives no log-sum-exp");
  return reference(in, true);
}

torch::Tensor SoftmaxAttention::forward_sinks_at_cache_positions(const AttentionInputs& in) {
  constexpr double lowest = std::numeric_limits<float>::lowest();
  const int64_t tq = in.q.size(-2), tk = in.k.size(-2), sinks = std::min(in.sinks, tk);
  // the window alone: sinks inside a query's window are window keys at their own distance
  AttentionInputs window = in;
  window.sinks = 0;
  auto [out, window_lse] = forward_lse(window);
  // a row that sees no window key: the kernels give +1e30 (streaming) or float's max
  // (chunked); lowest here, so that its sinks alone take the probability
  constexpr double kSawNoKey = 1e29;
  window_lse = window_lse.unsqueeze(-1);  // (B, H, Tq, 1)
  window_lse = torch::where(window_lse > kSawNoKey, torch::full_like(window_lse, lowest), window_lse);
  // the sinks beyond each query's window: query i (aligned with key a = i + Tk - Tq) scores
  // sink j < a - W + 1 at its cache position
  const auto& queries = in.sink_queries.defined() ? in.sink_queries : in.q;
  const double scale = 1.0 / std::sqrt(static_cast<double>(in.q.size(-1)));
  auto logits = torch::matmul(queries * scale, in.k.narrow(2, 0, sinks).transpose(-2, -1));  // (B, H, Tq, S)
  const auto& bias = in.logit_bias;
  if (bias.sinks.defined()) logits = logits + bias.sinks.to(logits.scalar_type());
  if (bias.forget.defined())  // c[a] - c[j]: the gates of every token between them
    logits =
        logits + (bias.forget.narrow(2, tk - tq, tq).unsqueeze(-1) - bias.forget.narrow(2, 0, sinks).unsqueeze(-2));
  auto options = torch::TensorOptions().dtype(torch::kLong).device(in.q.device());
  auto aligned = torch::arange(tk - tq, tk, options).unsqueeze(1);
  auto hidden = torch::arange(sinks, options).unsqueeze(0) > aligned - in.window;  // (Tq, S): in the window, or later
  if (in.key_padding_mask.defined())
    hidden = hidden | in.key_padding_mask.narrow(1, 0, sinks).to(torch::kBool).view({-1, 1, 1, sinks});
  logits = logits.masked_fill(hidden, lowest);
  const auto lse = torch::logaddexp(window_lse, torch::logsumexp(logits, -1, true));
  auto probs = (logits - lse).exp().masked_fill(hidden, 0.0);
  if (dropout_ > 0.0 && is_training()) probs = torch::dropout(probs, dropout_, true);
  return out * (window_lse - lse).exp() + torch::matmul(probs, in.v.narrow(2, 0, sinks));
}

torch::Tensor SoftmaxAttention::reference_forward(const AttentionInputs& in) { return reference(in, false).first; }

std::pair<torch::Tensor, torch::Tensor> SoftmaxAttention::reference(const AttentionInputs& in, bool lse) {
  const int64_t tq = in.q.size(-2);
  const int64_t tk = in.k.size(-2);
  // scale q (Tq x Dh) rather than the scores (Tq x Tk)
  auto q = in.q * (1.0 / std::sqrt(static_cast<double>(in.q.size(-1))));
  auto scores = torch::matmul(q, in.k.transpose(-2, -1));  // (B, H, Tq, Tk)
  if (in.logit_bias.defined()) scores = scores + in.logit_bias.to_dense(tq, tk);

  // broadcastable to (B, H, Tq, Tk), true = hidden
  auto mask = visibility_mask(tq, tk, in.causal, in.window, in.sinks, scores.device());
  if (in.key_padding_mask.defined()) {
    auto pad = in.key_padding_mask.view({in.key_padding_mask.size(0), 1, 1, tk});
    mask = mask.defined() ? (mask | pad) : pad;
  }
  // float's lowest finite value (also for double scores), not -inf: a row with every key
  // hidden then gives uniform weights instead of NaN, and its output is ignored by the caller
  // anyway. Half and bfloat16 cannot hold it: masked_fill throws an overflow error for them.
  if (mask.defined()) scores = scores.masked_fill(mask, std::numeric_limits<float>::lowest());
  auto probs = torch::softmax(scores, -1, at::toOpMathType(scores.scalar_type()));  // fp32 for bf16 and fp16
  if (mask.defined())  // a query that sees no key gets a zero output, as from the CPU kernels
    probs = probs.masked_fill(mask.all(-1, true), 0.0);
  torch::Tensor row_lse;  // (B, H, Tq)
  if (lse) row_lse = torch::logsumexp(scores.to(probs.scalar_type()), -1);
  if (dropout_ > 0.0 && is_training()) probs = torch::dropout(probs, dropout_, true);
  return {torch::matmul(probs, in.v), row_lse};  // (B, H, Tq, Dh)
}

AttentionBackend make_attention_backend(const AttentionOptions& options, int64_t head_dim) {
  switch (options.type()) {
    case AttentionType::softmax:
      return std::make_shared<SoftmaxAttention>(options);
    case AttentionType::performer:
      return std::make_shared<PerformerAttention>(options, head_dim);
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled AttentionType");
}

namespace {
const EnumNames<AttentionType, 2> kAttentionNames{
    {{AttentionType::softmax, "softmax"}, {AttentionType::performer, "performer"}}};

const EnumNames<AttentionKernel, 4> kKernelNames{{{AttentionKernel::automatic, "auto"},
                                                  {AttentionKernel::streaming, "streaming"},
                                                  {AttentionKernel::chunked, "chunked"},
                                                  {AttentionKernel::materialized, "materialized"}}};

const EnumNames<WindowPositions, 2> kWindowPositionNames{
    {{WindowPositions::cache, "cache"}, {WindowPositions::sequence, "sequence"}}};
}  // namespace

std::string to_string(WindowPositions positions) { return enum_name(positions, kWindowPositionNames); }
WindowPositions parse_window_positions(const std::string& name) {
  return parse_enum(name, kWindowPositionNames, "window positions");
}
std::string to_string(AttentionType type) { return enum_name(type, kAttentionNames); }
std::string to_string(AttentionKernel kernel) { return enum_name(kernel, kKernelNames); }
AttentionKernel parse_attention_kernel(const std::string& name) {
  return parse_enum(name, kKernelNames, "attention kernel");
}
AttentionType parse_attention_type(const std::string& name) {
  return parse_enum(name, kAttentionNames, "attention type");
}

}  // namespace ropelab
