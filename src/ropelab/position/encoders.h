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
/// RoPE scaling (position/rope_scaling.h) changes the angles; the ladder buffer stays
/// the unscaled one, so a trained model can be evaluated under any scaling.
///
/// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer", 3.1) is the 1-D form
/// with a per-pair decay zeta_i = (2i/r + gamma) / (1 + gamma), gamma = 0.4: the query at
/// position n is also scaled by zeta_i^(n / scale_base) and the key by zeta_i^(-n /
/// scale_base), so the logit decays as zeta^((m - n) / scale_base) with the distance.
/// The scales count from positions.origin() (n - origin for n), which a stack sets to the
/// middle of a sequence's first call: fp32 scales then hold for windows of about 140 x
/// scale_base positions. Queries and keys differ, so xPos rotates pairs only.
class RotaryEncoder : public PositionEncoderImpl {
 public:
  RotaryEncoder(const PositionOptions& options, const PositionGeometry& geometry, int64_t axes, bool xpos = false);
  bool rotates() const override { return true; }
  bool counts_from_origin() const override { return xpos_; }
  bool follows_length() const override {
    return scaling_.type() == RopeScalingType::dynamic_ntk && scaling_.dynamic() == DynamicLength::call;
  }
  torch::Tensor rotate(const torch::Tensor& x, const Positions& positions) override;
  std::pair<torch::Tensor, torch::Tensor> rotate_pair(const torch::Tensor& q, const torch::Tensor& k,
                                                      const Positions& positions) override;
  int64_t axes() const override { return axes_; }

  /// positions (T[, N]) or (B, T[, N]) -> angles (T, r/2) or (B, T, r/2), scaled.
  torch::Tensor angles(const Positions& positions) const;
  /// xPos: zeta^(sign * n / scale_base) per position and pair, (T, r/2) or (B, T, r/2).
  torch::Tensor xpos_scale(const Positions& positions, double sign) const;
  int64_t rotary_dim() const { return rotary_dim_; }
  RotaryLayout layout() const { return layout_; }

 private:
  int64_t head_dim_;
  int64_t rotary_dim_;
  int64_t axes_;
  RotaryLayout layout_;
  RopeScalingOptions scaling_;
  bool xpos_;
  double scale_base_;
  /// {cos, sin} of `positions` in `dtype` for queries and keys alike, or with xPos
  /// {cos_q, sin_q, cos_k, sin_k}: (T, r/2) when shared by the batch, else (B, 1, T, r/2).
  /// Made once per Positions value: a stack's layers share it.
  const std::vector<torch::Tensor>& tables(const Positions& positions, const torch::Tensor& like) const;
  /// x rotated by the tables cos, sin (each (T, r/2) or (B, 1, T, r/2)).
  torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool batched) const;
  /// YaRN's temperature on the dimensions the tables do not reach (fraction < 1).
  torch::Tensor scale_passthrough(torch::Tensor x) const;
  double attention_factor_ = 1.0;  // YaRN's sqrt(1/t), folded into the tables
  torch::Tensor inv_freq_;         // (r/2/N) buffer, shared by every axis: the unscaled ladder
  torch::Tensor zeta_;             // xPos: (r/2) buffer
  RotaryImpl impl_;
};

/// An encoder whose logit bias depends on key_pos - query_pos alone: it gives the bias
/// per distance (relative_bias), and logit_bias expands it over (Tq, Tk).
class RelativeBiasEncoder : public PositionEncoderImpl {
 public:
  bool has_logit_bias() const override { return true; }
  bool bias_is_relative() const override { return true; }
  /// -> (1|B, H, Tq, Tk)
  torch::Tensor logit_bias(const Positions& q_positions, const Positions& k_positions) override;
};

/// T5 relative position bias (Raffel et al. 2020): a learned (num_buckets, H) table
/// indexed by the bucket of key_pos - query_pos.
class T5BiasEncoder : public RelativeBiasEncoder {
 public:
  T5BiasEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  torch::Tensor relative_bias(const torch::Tensor& relative) override;

 private:
  int64_t num_buckets_;
  int64_t max_distance_;
  bool bidirectional_;
  torch::nn::Embedding table_{nullptr};  // (num_buckets, H)
};

/// ALiBi (Press et al. 2022, "Train Short, Test Long", 3): bias -m_h |i - j| with fixed
/// per-head slopes m_h. Causal stacks see keys j <= i only, so this is the paper's
/// -m_h (i - j); bidirectional stacks use the symmetric -m_h |i - j| (not in the paper).
class AlibiEncoder : public RelativeBiasEncoder {
 public:
  AlibiEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  torch::Tensor relative_bias(const torch::Tensor& relative) override;
  const torch::Tensor& slopes() const { return slopes_; }

 private:
  torch::Tensor slopes_;  // (H) buffer
};

/// ALiBi's slopes for `heads` heads: for n a power of two the geometric sequence
/// m_h = start^h, h = 1..n, start = 2^(-8/n); otherwise the slopes of the closest power
/// of two below n, then every other slope of twice that power (Press et al. 2022).
std::vector<double> alibi_slopes(int64_t heads);

/// Kerple (Chi et al. 2022, "KERPLE", 3.2), with r1, r2 learned per head:
///   logarithmic (`kerple`)     -r1_h log(1 + r2_h |i - j|),  r1, r2 > 0;
///                              initialised r1 ~ U(0, 2), r2 ~ U(0, 1)
///   power (`kerple_power`)     -r1_h |i - j|^r2_h,  r1 > 0, 0 < r2 <= 2;
///                              initialised r1 ~ U(0, 1), r2 ~ U(0, 2)
/// the draws from the model's seed. The bounds r1, r2 >= 1e-2 (the power's r2 <= 2) are
/// kept as `kerple_bound` says: `reset` (default) writes a value past a bound back to it
/// before use, as the authors' code does, so the gradient keeps flowing; `clamp` uses the
/// clamped value, with no gradient past the bound.
class KerpleEncoder : public RelativeBiasEncoder {
 public:
  enum class Form { log, power };
  KerpleEncoder(const PositionOptions& options, const PositionGeometry& geometry, Form form = Form::log);
  torch::Tensor relative_bias(const torch::Tensor& relative) override;
  Form form() const { return form_; }
  torch::Tensor r1, r2;  // (H) parameters

 private:
  Form form_;
  KerpleBound bound_;
};

/// FIRE (Li et al. 2024, "Functional Interpolation for Relative Positions Improves Long
/// Context Transformers", 3): bias f_theta(psi(i - j) / psi(max(L, i))) with psi(x) =
/// log(c x + 1), f an MLP 1 -> fire_hidden -> H (ReLU), c (init 0.1) and the threshold
/// L = |l| * fire_threshold (l init 1) learned. Causal stacks see j <= i; bidirectional
/// stacks use the symmetric form psi(|i - j|) / psi(max(L, i)). The normaliser depends
/// on the query position, so the bias is not a function of i - j alone: it is dense,
/// (1|B, H, Tq, Tk), computed once per stack call and shared by its layers. In a sliding
/// window's cache (PositionGeometry::last_cache_position P > 0) the normaliser is
/// psi(max(L, min(i, P))).
class FireEncoder : public PositionEncoderImpl {
 public:
  FireEncoder(const PositionOptions& options, const PositionGeometry& geometry);
  bool has_logit_bias() const override { return true; }
  torch::Tensor logit_bias(const Positions& q_positions, const Positions& k_positions) override;
  /// psi of each distance and each query's 1 / (psi(max(L, i)) + 1e-6), with the MLP's weights.
  FireTileBias factored_bias(int64_t tq, int64_t tk) override;
  torch::nn::Linear hidden{nullptr}, out{nullptr};
  torch::Tensor c, threshold_scale;  // scalar parameters

 private:
  double threshold_;
  int64_t last_cache_position_;
};

/// Bucket index of relative = key_pos - query_pos (HF modeling_t5 semantics).
torch::Tensor t5_relative_bucket(const torch::Tensor& relative, bool bidirectional, int64_t num_buckets,
                                 int64_t max_distance);

}  // namespace ropelab
