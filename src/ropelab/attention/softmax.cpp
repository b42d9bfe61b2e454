#include "ropelab/attention/softmax.h"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ropelab/attention/contextual.h"
#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/ops/attention/fused_attention.h"
#include "ropelab/ops/attention/sdpa_attention.h"
#include "ropelab/ops/attention/streaming_attention.h"

namespace ropelab {

SoftmaxPath softmax_path(AttentionKernel kernel, const SoftmaxCall& call) {
  if (call.contextual) return SoftmaxPath::contextual;
  if (!call.on_cpu && call.sdpa_fits && kernel == AttentionKernel::automatic) return SoftmaxPath::sdpa;
  if (call.dropout) return SoftmaxPath::aten;
  if (kernel == AttentionKernel::chunked) return call.chunked_fits ? SoftmaxPath::chunked : SoftmaxPath::aten;
  if (kernel != AttentionKernel::materialized && call.streaming_fits) return SoftmaxPath::streaming;
  if (kernel != AttentionKernel::streaming && call.materialized_fits) return SoftmaxPath::materialized;
  // off the CPU: the chunked form for streaming, and for auto where one chunk would not do
  if (!call.on_cpu && call.chunked_fits &&
      (kernel == AttentionKernel::streaming ||
       (kernel == AttentionKernel::automatic && call.scores > AttentionChunks{}.budget)))
    return SoftmaxPath::chunked;
  return SoftmaxPath::aten;
}

SoftmaxAttention::SoftmaxAttention(const AttentionOptions& options)
    : dropout_(options.dropout()), kernel_(options.kernel()), tiles_(options.tiles()) {}

KernelOptions SoftmaxAttention::kernel_options(const AttentionInputs& in) const {
  KernelOptions options;
  options.visibility = {in.causal, in.window, in.sinks};
  options.tiles = tiles_;
  return options;
}

SoftmaxAttention::Path SoftmaxAttention::path(const AttentionInputs& in) const {
  SoftmaxCall call;
  call.contextual = in.contextual.defined();
  call.dropout = dropout_ > 0.0 && is_training();
  const ScoreBias& bias = in.logit_bias;
  call.on_cpu = in.q.device().is_cpu();
  // PyTorch's kernel is offered off the CPU only: a CPU call (every call of Debian's build) skips the check
  call.sdpa_fits = !call.on_cpu && !in.logit_bias.sinks.defined() &&
                   sdpa_attention_available(in.q, in.k, in.v, bias, {in.causal, in.window, in.sinks});
  if (call.contextual || call.dropout) return softmax_path(kernel_, call);
  call.streaming_fits = streaming_attention_available(in.q, in.k, in.v, bias);
  call.chunked_fits = chunked_attention_available(in.q, in.k, in.v, bias);
  // both CPU kernels take the same operands (ops/attention/operands.h: cpu_attention_operands_ok)
  call.materialized_fits = call.streaming_fits;
  call.scores = in.q.size(0) * in.q.size(1) * in.q.size(2) * in.k.size(2);
  return softmax_path(kernel_, call);
}

torch::Tensor SoftmaxAttention::forward(const AttentionInputs& in) {
  if (in.sinks_at_cache_positions()) return forward_sinks_at_cache_positions(in);
  const auto options = kernel_options(in);
  const ScoreBias& bias = in.logit_bias;
  switch (path(in)) {
    case Path::streaming:
      return streaming_attention_cpu(in.q, in.k, in.v, in.key_padding_mask, bias, options);
    case Path::chunked:
      return chunked_attention(in.q, in.k, in.v, in.key_padding_mask, bias, options);
    case Path::materialized:
      return fused_attention_cpu(in.q, in.k, in.v, in.key_padding_mask, bias, options);
    case Path::contextual:
      return contextual_attention(in, dropout_, is_training());
    case Path::sdpa:
      return sdpa_attention(in.q, in.k, in.v, in.key_padding_mask, in.causal, is_training() ? dropout_ : 0.0);
    case Path::aten:
      break;
  }
  return reference_forward(in);
}

std::pair<torch::Tensor, torch::Tensor> SoftmaxAttention::forward_lse(const AttentionInputs& in) {
  const auto options = kernel_options(in);
  const ScoreBias& bias = in.logit_bias;
  const auto p = path(in);
  if (p == Path::streaming && !torch::GradMode::is_enabled())
    return streaming_attention_cpu_lse(in.q, in.k, in.v, in.key_padding_mask, bias, options);
  if ((p == Path::streaming || p == Path::chunked || p == Path::materialized) &&
      chunked_attention_available(in.q, in.k, in.v, bias))
    return chunked_attention_lse(in.q, in.k, in.v, in.key_padding_mask, bias, options);
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
  // (B, H, Tq, Tk), in float for fp16 and bf16 (the softmax's type), as the kernels compute them
  auto scores = torch::matmul(q, in.k.transpose(-2, -1));
  scores = scores.to(at::toOpMathType(scores.scalar_type()));
  if (in.logit_bias.defined()) scores = scores + in.logit_bias.to_dense(tq, tk);

  // broadcastable to (B, H, Tq, Tk), true = hidden
  auto mask = visibility_mask(tq, tk, in.causal, in.window, in.sinks, scores.device());
  if (in.key_padding_mask.defined()) {
    auto pad = in.key_padding_mask.view({in.key_padding_mask.size(0), 1, 1, tk});
    mask = mask.defined() ? (mask | pad) : pad;
  }
  // float's lowest finite value (also for double scores), not -inf: a row with every key
  // hidden then gives uniform weights instead of NaN, and its output is ignored by the caller
  // anyway.
  if (mask.defined()) scores = scores.masked_fill(mask, std::numeric_limits<float>::lowest());
  auto probs = torch::softmax(scores, -1);
  if (mask.defined())  // a query that sees no key gets a zero output, as from the CPU kernels
    probs = probs.masked_fill(mask.all(-1, true), 0.0);
  torch::Tensor row_lse;  // (B, H, Tq)
  if (lse) row_lse = torch::logsumexp(scores, -1);
  if (dropout_ > 0.0 && is_training()) probs = torch::dropout(probs, dropout_, true);
  return {torch::matmul(probs.to(in.v.scalar_type()), in.v), row_lse};  // (B, H, Tq, Dh)
}

}  // namespace ropelab
