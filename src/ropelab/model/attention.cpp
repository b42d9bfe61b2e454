#include "ropelab/model/attention.h"

#include "ropelab/attention/ssmax.h"

namespace ropelab {

namespace {
/// Cached and new keys (B, H, Tk, Dh) rotated at positions 0 .. Tk - 1 (counted from
/// `origin`): the largest is the last query's, so queries and keys share one length.
std::function<torch::Tensor(const torch::Tensor&)> keys_rotated_at_length(PositionEncoder rotation, int64_t origin) {
  return [rotation = std::move(rotation), origin](const torch::Tensor& keys) {
    const auto positions = Positions::range(0, keys.size(2), 1, keys.device()).with_origin(origin);
    return rotation->rotate_pair(keys, keys, positions).second;
  };
}
}  // namespace

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options_, PositionEncoder rotation)
    : options(options_), rotation_(std::move(rotation)) {
  reset();
}

void MultiHeadAttentionImpl::reset() {
  const int64_t d = options.d_model();
  TORCH_CHECK(options.heads() > 0 && d % options.heads() == 0, "MultiHeadAttention: heads (", options.heads(),
              ") must divide d_model (", d, ")");
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d, d}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * d}));
  out_proj = register_module("out_proj", torch::nn::Linear(d, d));
  backend_ = register_module("backend", make_attention_backend(options.attention(), d / options.heads()));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  torch::nn::init::zeros_(out_proj->bias);
  if (options.cope_positions() > 0)
    cope_embedding =
        register_parameter("cope_embedding", torch::zeros({d / options.heads(), options.cope_positions()}));
  if (options.ssmax())
    ssmax_scale = register_parameter("ssmax_scale", torch::full({options.heads()}, options.ssmax_init()));
  if (options.forget_gate()) {
    forget_gate = register_module("forget_gate", torch::nn::Linear(d, options.heads()));
    torch::nn::init::normal_(forget_gate->weight, 0.0, 0.02);
    torch::nn::init::constant_(forget_gate->bias, options.forget_gate_bias());
  }
}

torch::Tensor MultiHeadAttentionImpl::forget_sums(const torch::Tensor& x) const {
  auto logits = torch::linear(x, forget_gate->weight, forget_gate->bias);  // (B, T, H)
  const bool reduced = logits.scalar_type() == torch::kBFloat16 || logits.scalar_type() == torch::kHalf;
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return torch::log_sigmoid(reduced ? logits.to(torch::kFloat) : logits).transpose(1, 2).cumsum(-1).contiguous();
}

std::vector<torch::Tensor> MultiHeadAttentionImpl::split_heads(const torch::Tensor& x, int64_t n) const {
  const int64_t h = options.heads();
  // (B, T, n*D) -> (B, T, n, H, Dh) -> (n, B, H, T, Dh)
  return x.unflatten(-1, {n, h, options.d_model() / h}).permute({2, 0, 3, 1, 4}).unbind(0);
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                              const AttentionCall& call) {
  const int64_t d = options.d_model();
  const bool self = !memory.defined();
  torch::Tensor q, k, v;
  // torch::linear (ATen's) rather than the C++ frontend's functional linear, which adds the
  // bias in a separate pass for 3-D inputs: ATen folds it into the GEMM (addmm).
  auto heads_out = [&](const torch::Tensor& out) {  // (B, Tq, D)
    return torch::linear(out.transpose(1, 2).flatten(-2), out_proj->weight, out_proj->bias);
  };
  // the attention itself in fp32 under mixed precision (attend_in_fp32); the projections not
  auto attend = [&](AttentionInputs in, const std::function<torch::Tensor(const AttentionInputs&)>& f) {
    return heads_out(attend_in_fp32(std::move(in), f));
  };
  if (self) {
    auto qkv = split_heads(torch::linear(x, in_proj_weight, in_proj_bias), 3);
    q = qkv[0], k = qkv[1], v = qkv[2];
    // SSMax: the logits of query i times s_h log n_i, as its scaled query (a rotation is
    // linear per token, so scaling before it is the same), in every kernel and cache alike
    if (ssmax_scale.defined()) q = ssmax_scaled_queries(ssmax_scale, call.ssmax_log_n, call.causal, q);
    const auto unrotated = q;
    // an encoder that follows the length, decoding: keys cached unrotated, all rotated at
    // each step's length by the backend (AttentionInputs::rotate_keys)
    const bool keys_at_step = rotation_ && call.cache && rotation_->follows_length();
    if (keys_at_step)
      q = rotation_->rotate_pair(q, q, call.positions).first;  // xPos scales queries and keys differently
    else if (rotation_)
      std::tie(q, k) = rotation_->rotate_pair(q, k, call.positions);
    // the last queries alone, where the backend takes fewer queries than keys; else all,
    // and the other rows dropped from its output
    const int64_t t = q.size(2), n = call.queries > 0 && call.queries < t ? call.queries : t;
    const bool subset = n < t && backend_->takes_last_queries();
    if (subset) q = q.narrow(2, t - n, n);
    // the stack made the bias for the last rows alone: a backend that needs every query takes none
    TORCH_INTERNAL_ASSERT(subset || n == t || !call.logit_bias.defined(),
                          "MultiHeadAttention: a logit bias for the last queries alone, and a backend that takes all");
    const auto& a = options.attention();  // the window and sinks apply to self-attention only
    AttentionInputs in{q, k, v, call.key_padding_mask, call.logit_bias, call.causal, a.window(), a.sinks()};
    in.window_positions = a.window_positions();
    if (keys_at_step) in.rotate_keys = keys_rotated_at_length(rotation_, call.positions.origin());
    if (forget_gate) {
      TORCH_CHECK(call.causal, "MultiHeadAttention: a forget gate needs causal self-attention");
      in.logit_bias.forget = forget_sums(x);
    }
    if (cope_embedding.defined()) {
      TORCH_CHECK(call.causal, "MultiHeadAttention: CoPE needs causal self-attention");
      in.contextual = cope_embedding;
    }
    // sinks at cache positions: the queries as they score the sinks, rotated at min(i, P)
    if (in.sinks_at_cache_positions() && rotation_ && rotation_->rotates()) {
      TORCH_CHECK(call.positions.defined(), "MultiHeadAttention: sinks at cache positions need the query positions");
      const auto positions = subset ? call.positions.last(n) : call.positions;
      // rotate_pair: xPos scales queries and keys differently, and this is a query
      const auto queries = subset ? unrotated.narrow(2, t - n, n) : unrotated;
      in.sink_queries = rotation_->rotate_pair(queries, queries, positions.capped(last_cache_position(a))).first;
    }
    auto last_rows = [&](const torch::Tensor& out) { return subset || n == t ? out : out.narrow(2, t - n, n); };
    if (call.cache)  // the backend keeps what later steps need (keys and values, or sums)
      return attend(std::move(in),
                    [&](const AttentionInputs& in) { return last_rows(backend_->forward_cached(in, *call.cache)); });
    return attend(std::move(in), [&](const AttentionInputs& in) { return last_rows(backend_->forward(in)); });
  } else {
    q = split_heads(torch::linear(x, in_proj_weight.narrow(0, 0, d), in_proj_bias.narrow(0, 0, d)), 1)[0];
    if (rotation_) q = rotation_->rotate(q, call.positions);
    auto memory_kv = [&] {  // (B, H, Tk, Dh) each
      auto kv =
          split_heads(torch::linear(memory, in_proj_weight.narrow(0, d, 2 * d), in_proj_bias.narrow(0, d, 2 * d)), 2);
      if (rotation_) kv[0] = rotation_->rotate(kv[0], call.key_positions);
      return std::make_pair(kv[0], kv[1]);
    };
    if (call.cache)  // memory keys and values are the backend's to keep, once per sentence (in fp32)
      return attend({q, {}, {}, call.key_padding_mask, call.logit_bias, call.causal},
                    [&](const AttentionInputs& in) { return backend_->forward_memory(in, *call.cache, memory_kv); });
    std::tie(k, v) = memory_kv();
  }
  return attend({q, k, v, call.key_padding_mask, call.logit_bias, call.causal},
                [&](const AttentionInputs& in) { return backend_->forward(in); });
}

}  // namespace ropelab
