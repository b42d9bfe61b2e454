#pragma once
/// The softmax attention backend: exact scaled dot-product attention by the kernel its
/// options pick (ops/attention: streaming, chunked, materialized) or by ATen ops.

#include <torch/torch.h>

#include <utility>

#include "ropelab/attention/backend.h"

namespace ropelab {

/// Which computation the softmax backend takes for a call: the streaming or the materialized
/// CPU kernel, the chunked form (any device), ATen ops, CoPE's blocks of rows
/// (attention/contextual.h), or PyTorch's scaled_dot_product_attention (LibTorch 2.0 and later,
/// off the CPU; ops/attention/sdpa_attention.h).
enum class SoftmaxPath { streaming, chunked, materialized, aten, contextual, sdpa };

/// What that choice depends on, beside the kernel setting: the facts of one call.
struct SoftmaxCall {
  bool contextual = false;        // CoPE's position embeddings are set
  bool dropout = false;           // attention dropout is active (training)
  bool on_cpu = true;             // q's device
  bool streaming_fits = true;     // streaming_attention_available
  bool chunked_fits = true;       // chunked_attention_available
  bool materialized_fits = true;  // fused_attention_available
  bool sdpa_fits = false;         // sdpa_attention_available
  int64_t scores = 0;             // B x H x Tq x Tk
};

/// The rule of AttentionKernel (attention/backend.h): CoPE takes its own path; off the CPU,
/// `auto` takes PyTorch's scaled_dot_product_attention where it fits (no bias, no window; with
/// attention dropout too, which it applies itself); attention dropout the ATen path; `chunked` the chunked form where
/// it fits; otherwise the streaming kernel where it fits (not under `materialized`), then the materialized kernel (not
/// under `streaming`), then off the CPU the chunked form for `streaming`, and for `auto` where one call's scores exceed
/// one chunk (AttentionChunks::budget); ATen ops for the rest.
SoftmaxPath softmax_path(AttentionKernel kernel, const SoftmaxCall& call);

/// Scaled dot-product attention (Vaswani et al. 2017, 3.2.1):
/// softmax(Q K^T / sqrt(Dh) + bias, masked) V, with dropout on the probabilities.
/// It runs the kernel AttentionOptions::kernel picks (softmax_path); with active attention
/// dropout, reference_forward's ATen ops or PyTorch's scaled_dot_product_attention.
class SoftmaxAttention : public AttentionBackendImpl {
 public:
  explicit SoftmaxAttention(const AttentionOptions& options);
  using Path = SoftmaxPath;
  /// Which computation forward() takes for `inputs` (softmax_path of their facts).
  Path path(const AttentionInputs& inputs) const;
  torch::Tensor forward(const AttentionInputs& inputs) override;
  bool accepts_logit_bias() const override { return true; }
  /// The same computation with ATen ops (any device, bias, dropout).
  torch::Tensor reference_forward(const AttentionInputs& inputs);
  /// The output and each row's log-sum-exp of its visible logits (B, H, Tq) (a huge value, or
  /// float's lowest, for a row that sees no key), by the kernel path() picks where it gives
  /// one (the streaming kernel without gradient, else the chunked form), else ATen ops.
  std::pair<torch::Tensor, torch::Tensor> forward_lse(const AttentionInputs& inputs);

 private:
  /// Sinks at cache positions (AttentionInputs::sinks_at_cache_positions): the window's keys
  /// by forward_lse, the sinks beyond each query's window by ATen ops, and the two parts of one
  /// softmax merged by their log-sum-exps, which is exact (the key sets are disjoint).
  torch::Tensor forward_sinks_at_cache_positions(const AttentionInputs& inputs);
  std::pair<torch::Tensor, torch::Tensor> reference(const AttentionInputs& inputs, bool lse);
  /// The kernels' options for `inputs`: their visibility, this backend's tiles.
  KernelOptions kernel_options(const AttentionInputs& inputs) const;

  double dropout_;
  AttentionKernel kernel_;
  StreamingTiles tiles_;
};

}  // namespace ropelab
