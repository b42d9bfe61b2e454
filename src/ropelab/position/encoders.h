#pragma once
/// The concrete position encoders behind make_position_encoder(). Callers use the
/// PositionEncoderImpl interface; tests and benchmarks reach the concrete types here.

#include "ropelab/position/position_encoder.h"

namespace ropelab {

/// Fixed sinusoids (Vaswani et al. 2017, 3.5), base b = model.position.base (10000 in the paper):
/// PE(pos, 2i) = sin(pos / b^(2i/D)), PE(pos, 2i+1) = cos(pos / b^(2i/D)).
class SinusoidalEncoder : public PositionEncoderImpl {
 public:
  SinusoidalEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  torch::Tensor embed(const torch::Tensor& x, const Positions& positions) override;
  /// positions (...) -> encodings (..., D).
  torch::Tensor table(const torch::Tensor& positions) const;

 private:
  SinusoidLayout layout_;
  torch::Tensor inv_freq_;  // (D/2) buffer
};

/// Learned absolute embeddings (Vaswani et al. 2017, Table 3 row E): one vector per position.
class LearnedEncoder : public PositionEncoderImpl {
 public:
  LearnedEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  torch::Tensor embed(const torch::Tensor& x, const Positions& positions) override;

 private:
  torch::nn::Embedding table_{nullptr};  // (max_len, D)
};

/// Rotary position embedding (Su et al. 2021), 1-D or axial over N coordinates.
/// The first r = fraction * Dh dimensions form r/2 pairs; pair j is rotated by
/// angle pos[axis(j)] * inv_freq_j. With N axes the pairs split into N equal blocks,
/// block a using coordinate a with its own frequency ladder base^(-2i/(r/N)), so
/// <rotate(q, m), rotate(k, n)> depends only on the per-axis differences m - n.
class RotaryEncoder : public PositionEncoderImpl {
 public:
  RotaryEncoder(const PositionOptions& options, const PositionGeometry& geometry, int64_t axes);
  bool rotates() const override { return true; }
  torch::Tensor rotate(const torch::Tensor& x, const Positions& positions) override;
  std::pair<torch::Tensor, torch::Tensor> rotate_pair(const torch::Tensor& q, const torch::Tensor& k,
                                                      const Positions& positions) override;
  int64_t axes() const override { return axes_; }

  /// positions (T[, N]) or (B, T[, N]) -> angles (T, r/2) or (B, T, r/2).
  torch::Tensor angles(const Positions& positions) const;
  int64_t rotary_dim() const { return rotary_dim_; }
  RotaryLayout layout() const { return layout_; }

 private:
  int64_t head_dim_;
  int64_t rotary_dim_;
  int64_t axes_;
  RotaryLayout layout_;
  /// {cos, sin} of `positions` in `dtype`: (T, r/2) when shared by the batch, else
  /// (B, 1, T, r/2). Made once per Positions value: a stack's layers share it.
  const std::vector<torch::Tensor>& tables(const Positions& positions, const torch::Tensor& like) const;
  torch::Tensor inv_freq_;  // (r/2/N) buffer, shared by every axis
  RotaryImpl impl_;
};

/// T5 relative position bias (Raffel et al. 2020): a learned (num_buckets, H) table
/// indexed by the bucket of key_pos - query_pos.
class T5BiasEncoder : public PositionEncoderImpl {
 public:
  T5BiasEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  bool has_logit_bias() const override { return true; }
  torch::Tensor logit_bias(const Positions& q_positions, const Positions& k_positions) override;

 private:
  int64_t num_buckets_;
  int64_t max_distance_;
  bool bidirectional_;
  torch::nn::Embedding table_{nullptr};  // (num_buckets, H)
};

/// Bucket index of relative = key_pos - query_pos (HF modeling_t5 semantics).
torch::Tensor t5_relative_bucket(const torch::Tensor& relative, bool bidirectional, int64_t num_buckets,
                                 int64_t max_distance);

}  // namespace ropelab
