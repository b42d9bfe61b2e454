#pragma once
/// Attention backends: the seam that computes attention from projected, head-split
/// queries, keys and values. Backends know nothing of projections or positions beyond
/// an optional additive logit bias; MultiHeadAttention owns those.

#include <torch/torch.h>

#include <memory>
#include <string>

namespace ropelab {

enum class AttentionType { softmax };

struct AttentionOptions {
  /// Which backend.
  TORCH_ARG(AttentionType, type) = AttentionType::softmax;
  /// Dropout on attention probabilities (softmax backend).
  TORCH_ARG(double, dropout) = 0.0;
};

/// Everything a backend needs for one call. Query i is aligned with key i + (Tk - Tq),
/// so a causal call with cached keys (Tk > Tq) lets the new queries see the whole past.
struct AttentionInputs {
  torch::Tensor q;                 // (B, H, Tq, Dh)
  torch::Tensor k;                 // (B, H, Tk, Dh)
  torch::Tensor v;                 // (B, H, Tk, Dh)
  torch::Tensor key_padding_mask;  // (B, Tk) bool, true at padded keys; optional
  torch::Tensor logit_bias;        // broadcastable to (B, H, Tq, Tk); optional
  bool causal = false;
};

class AttentionBackendImpl : public torch::nn::Module {
 public:
  ~AttentionBackendImpl() override = default;
  /// -> (B, H, Tq, Dh)
  virtual torch::Tensor forward(const AttentionInputs& inputs) = 0;
  /// Whether the backend can add a logit bias (T5); validated at config time.
  virtual bool accepts_logit_bias() const = 0;
};

using AttentionBackend = std::shared_ptr<AttentionBackendImpl>;

/// Scaled dot-product attention (Vaswani et al. 2017, 3.2.1):
/// softmax(Q K^T / sqrt(Dh) + bias, masked) V, with dropout on the probabilities.
/// On the CPU without a logit bias or active attention dropout it runs the fused kernel
/// (attention/fused_cpu.h); otherwise reference_forward's ATen ops.
class SoftmaxAttention : public AttentionBackendImpl {
 public:
  explicit SoftmaxAttention(const AttentionOptions& options);
  torch::Tensor forward(const AttentionInputs& inputs) override;
  bool accepts_logit_bias() const override { return true; }
  /// The same computation with ATen ops (any device, bias, dropout).
  torch::Tensor reference_forward(const AttentionInputs& inputs);

 private:
  double dropout_;
};

AttentionBackend make_attention_backend(const AttentionOptions& options);

/// (Tq, Tk) bool mask, true where query i may not see key j (j > i + Tk - Tq).
torch::Tensor causal_mask(int64_t tq, int64_t tk, const torch::Device& device);

std::string to_string(AttentionType type);
AttentionType parse_attention_type(const std::string& name);

}  // namespace ropelab
