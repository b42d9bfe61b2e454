#pragma once
/// Multi-head attention (Vaswani et al. 2017, 3.2.2): projections, head split, the
/// position encoder's rotation hook, the attention backend, the output projection; in
/// causal self-attention optionally a forget gate (Lin et al. 2025) or contextual positions
/// (CoPE, Golovneva et al. 2024).

#include <torch/torch.h>

#include "ropelab/attention/backend.h"
#include "ropelab/position/position_encoder.h"

namespace ropelab {

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t d_model, int64_t heads) : d_model_(d_model), heads_(heads) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, heads);
  TORCH_ARG(AttentionOptions, attention);
  /// Causal self-attention: the Forgetting Transformer's forget gate (Lin et al. 2025): per
  /// head f_t = sigmoid(w_h . x_t + b_h) from the attention's input x_t, and the logit bias
  /// sum of log f_l over l in (j, i] for query i and key j (LogitBias::forget). w is
  /// initialised N(0, 0.02^2) and b at forget_gate_bias, 0 as in the authors' code.
  TORCH_ARG(bool, forget_gate) = false;
  /// With forget_gate: b's initial value (the authors' code: 0).
  TORCH_ARG(double, forget_gate_bias) = 0.0;
  /// Causal self-attention: CoPE with this many learned positions P (attention/contextual.h;
  /// Golovneva et al. 2024), embeddings (Dh, P) starting at 0 as the authors' code; 0: none.
  TORCH_ARG(int64_t, cope_positions) = 0;
  /// Causal self-attention: Scalable-Softmax (Nakanishi 2025), the logits of query i
  /// multiplied by s_h log n_i (AttentionCall::ssmax_log_n), s (H) learnable from ssmax_init.
  TORCH_ARG(bool, ssmax) = false;
  TORCH_ARG(double, ssmax_init) = 0.43;
};

/// Per-call inputs beyond the activations.
struct AttentionCall {
  torch::Tensor key_padding_mask;  // (B, Tk) true at padded keys, over cached + new keys
  Positions positions;             // query positions (and those of new keys in self-attention)
  Positions key_positions;         // cross-attention: memory positions (rotated only if enabled)
  LogitBias logit_bias;            // from the stack's position encoder
  torch::Tensor ssmax_log_n;       // SSMax: log n of each query row (Tq), n the keys it sees
  bool causal = false;
  AttentionCachePtr* cache = nullptr;  // incremental decoding: this attention's backend state
  /// Self-attention: only the last `queries` rows of x query (0: every row); keys and
  /// values still come from every row. The output has those rows alone.
  int64_t queries = 0;
};

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  /// `rotation`: the stack's position encoder when it rotates q/k here, else nullptr.
  MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options, PositionEncoder rotation);
  void reset();

  /// Self-attention: memory undefined, keys and values come from `x`.
  /// x (B, Tq, D), memory (B, Tk, D) -> (B, Tq, D)
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const AttentionCall& call);

  const AttentionBackend& backend() const { return backend_; }

  MultiHeadAttentionOptions options;
  torch::Tensor in_proj_weight;  // (3D, D): rows [q | k | v]
  torch::Tensor in_proj_bias;    // (3D)
  torch::nn::Linear out_proj{nullptr};
  torch::nn::Linear forget_gate{nullptr};  // (H, D): with options.forget_gate()
  torch::Tensor cope_embedding;            // (Dh, P): with options.cope_positions() > 0
  torch::Tensor ssmax_scale;               // (H): SSMax's s, with options.ssmax()

 private:
  /// (B, T, n*D) -> n tensors (B, H, T, Dh)
  std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t n) const;
  /// x (B, T, D) -> the cumulative sums of log f over the call's tokens (B, H, T), in fp32
  /// when x is reduced.
  torch::Tensor forget_sums(const torch::Tensor& x) const;
  PositionEncoder rotation_;
  AttentionBackend backend_;
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace ropelab
