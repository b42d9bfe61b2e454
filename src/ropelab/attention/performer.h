#pragma once
/// Performer attention, FAVOR+ (Choromanski et al. 2021): softmax attention approximated
/// by positive orthogonal random features, in time and memory linear in the length.
///
///   x' = x Dh^-1/4,   phi(x) = m^-1/2 exp(W x' - |x'|^2 / 2 - stabilizer)
///   bidirectional: out = phi(Q) (phi(K)^T V) / (phi(Q) phi(K)^T 1)
///   causal: the same with prefix sums over key positions.
///
/// W (m x Dh) stacks orthogonal blocks (QR of Gaussian matrices) with rows rescaled to
/// chi-distributed norms. It is a buffer: saved in checkpoints, redrawn every
/// `redraw_every` optimizer updates in training only (before the update that first uses
/// the new draw, never after the last), so evaluation is reproducible and always uses the
/// features the last update trained with.
///
/// Stabilizers. Queries: each row's own maximum is subtracted and m^-1/2 eps added (the
/// reference's form; the row's scale cancels in the ratio). Keys: a shared maximum is
/// subtracted and no eps is added, so the stabilizer cancels exactly and causal outputs
/// never depend on later keys. Causal evaluation runs in chunks of `chunk_size` keys, each
/// with its own maximum, rescaled to the running maximum like online softmax; incremental
/// decoding keeps the same running sums (PerformerCache).
///
/// Padded keys get phi(k) = 0: they count in neither numerator nor denominator.

#include "ropelab/attention/backend.h"

namespace ropelab {

/// Causal self-attention's state between decoding steps: running sums of phi(k) v^T
/// (B, H, m, Dh) and phi(k) (B, H, m) over every key so far, at log-scale (B, H). No keys.
struct PerformerCache : AttentionCache {
  torch::Tensor kv_sum, k_sum, log_scale;
  void reorder(const torch::Tensor& index) override;
};

class PerformerAttention : public AttentionBackendImpl {
 public:
  PerformerAttention(const AttentionOptions& options, int64_t head_dim);
  torch::Tensor forward(const AttentionInputs& inputs) override;
  torch::Tensor forward_cached(AttentionInputs inputs, AttentionCachePtr& cache) override;
  bool accepts_logit_bias() const override { return false; }
  /// No: its causal prefix sums run over the queries that the keys do.
  bool takes_last_queries() const override { return false; }
  void before_update(int64_t done) override;

  /// Draws a new feature matrix (torch's default generator).
  void redraw();
  /// phi(q) (B, H, T, m) with the per-row stabilizer.
  torch::Tensor query_features(const torch::Tensor& q) const;
  /// W x' - |x'|^2 / 2 (B, H, T, m): the log of the unstabilised features of x.
  torch::Tensor feature_logits(const torch::Tensor& x) const;

  torch::Tensor features;  // W (m, Dh), buffer

 private:
  int64_t num_features_, head_dim_, redraw_every_, chunk_size_;
};

/// m x d positive orthogonal random features: ceil(m / d) blocks of orthonormal rows (QR
/// of d x d Gaussians), rows scaled by the norms of independent d-dim Gaussians.
torch::Tensor orthogonal_random_features(int64_t m, int64_t d, const torch::TensorOptions& options = {});

/// Linear attention with nonnegative features under a causal mask, evaluated in chunks.
/// phi_q (B, H, T, m); key_logits (B, H, T, m) are log phi(k) up to a shared constant;
/// keep (B, 1, T, 1) or undefined zeroes padded keys; v (B, H, T, Dh). `cache`, when given,
/// holds the running sums of earlier keys and receives the sums including these.
torch::Tensor causal_linear_attention(const torch::Tensor& phi_q, const torch::Tensor& key_logits,
                                      const torch::Tensor& keep, const torch::Tensor& v, int64_t chunk_size,
                                      PerformerCache* cache = nullptr);

/// The same quantity by direct quadratic evaluation, (T x T) per head: the reference
/// for tests. phi_k (B, H, T, m) are the key features themselves.
torch::Tensor causal_linear_attention_reference(const torch::Tensor& phi_q, const torch::Tensor& phi_k,
                                                const torch::Tensor& v);

}  // namespace ropelab
