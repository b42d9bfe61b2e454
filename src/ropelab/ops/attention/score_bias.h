#pragma once
/// What an attention kernel adds to the scaled logits Q K^T / sqrt(Dh), in every form a
/// kernel takes without a (Tq, Tk) tensor of its own. Query i of Tq is aligned with key
/// a = i + Tk - Tq (cached decoding: the new queries follow the cached keys).

#include <torch/torch.h>

#include <utility>

#include "ropelab/ops/attention/fire_tile_bias.h"

namespace ropelab {

/// Forms set together are summed; each is optional and differentiable.
///   dense     (1|B, H, Tq, Tk): any bias, its memory the caller's.
///   relative  (H, Tq + Tk - 1) for a bias of key_pos - query_pos alone (ALiBi, Kerple, T5
///             buckets): query i and key j get relative[h][j - i + Tq - 1]. O(H T) memory.
///   fire      FIRE's MLP bias in factored form (fire_tile_bias.h), O(T + H K) memory.
///   forget    a forget gate's cumulative log values c (B, H, Tk), Tq <= Tk (Lin et al.
///             2025): query i and key j get c[a] - c[j], the sum of log f_l over l in (j, a].
/// Every tensor is of q's type and on q's device.
struct ScoreBias {
  ScoreBias(torch::Tensor dense = {}, torch::Tensor relative = {}, FireTileBias fire = {},  // NOLINT: a dense bias
            torch::Tensor forget = {})                                                      // converts
      : dense(std::move(dense)), relative(std::move(relative)), fire(std::move(fire)), forget(std::move(forget)) {}
  torch::Tensor dense;
  torch::Tensor relative;
  FireTileBias fire;
  torch::Tensor forget;

  bool defined() const { return dense.defined() || relative.defined() || fire.defined() || forget.defined(); }
  /// Whether it holds more than a dense and a relative bias (what the materialized kernel
  /// adds natively).
  bool beyond_dense_and_relative() const { return fire.defined() || forget.defined(); }
  /// Every form set, summed, as a tensor broadcastable to (B, H, Tq, Tk); undefined if none.
  torch::Tensor to_dense(int64_t tq, int64_t tk) const;
};

/// `fire`'s bias as a (1, H, Tq, Tk) tensor with ATen ops (the reference, other kernels).
torch::Tensor fire_tile_bias_dense(const FireTileBias& fire, int64_t tq, int64_t tk);

}  // namespace ropelab
