#include "ropelab/model/attention.h"

namespace ropelab {

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
  AttentionCache* cache = call.cache;
  if (self) {
    auto qkv = split_heads(torch::nn::functional::linear(x, in_proj_weight, in_proj_bias), 3);
    q = qkv[0], k = qkv[1], v = qkv[2];
    if (rotation_) std::tie(q, k) = rotation_->rotate_pair(q, k, call.positions);
    if (cache) {  // the backend keeps what later steps need (keys and values, or sums)
      AttentionInputs inputs{q, k, v, call.key_padding_mask, call.logit_bias, call.causal};
      return out_proj(backend_->forward_cached(inputs, *cache).transpose(1, 2).flatten(-2));
    }
  } else {
    q = split_heads(torch::nn::functional::linear(x, in_proj_weight.narrow(0, 0, d), in_proj_bias.narrow(0, 0, d)),
                    1)[0];
    if (rotation_) q = rotation_->rotate(q, call.positions);
    if (cache && cache->k.defined()) {  // memory keys are computed once per sentence
      k = cache->k, v = cache->v;
    } else {
      auto kv = split_heads(
          torch::nn::functional::linear(memory, in_proj_weight.narrow(0, d, 2 * d), in_proj_bias.narrow(0, d, 2 * d)),
          2);
      k = kv[0], v = kv[1];
      if (rotation_) k = rotation_->rotate(k, call.key_positions);
      if (cache) cache->k = k, cache->v = v;
    }
  }
  AttentionInputs inputs{q, k, v, call.key_padding_mask, call.logit_bias, call.causal};
  auto out = backend_->forward(inputs);  // (B, H, Tq, Dh)
  return out_proj(out.transpose(1, 2).flatten(-2));  // (B, Tq, D)
}

}  // namespace ropelab
