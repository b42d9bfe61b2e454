#pragma once
/// Contextual Position Encoding, CoPE (Golovneva et al. 2024, "Contextual Position Encoding:
/// Learning to Count What's Important"): positions counted by gates that the content sets.
/// Query i and key j <= i get
///   g_it = sigmoid(q_i . k_t / sqrt(Dh)),   p_ij = min(sum of g_it over visible t in [j, i], P - 1),
///   e(p) = (1 - w) E[floor(p)] + w E[ceil(p)], w = p - floor(p)   (E[c] the c-th of P columns),
///   logit_ij = (q_i . k_j + q_i . e(p_ij)) / sqrt(Dh),
/// with E (Dh, P) learned per layer and shared by its heads, as the authors' code. A row's
/// positions need every score of that row, so the scores are materialised, a block of query
/// rows at a time (rows are independent): memory O(rows x Tk), never the whole matrix at once
/// in evaluation. The gates, positions, interpolation and softmax of a block are one op
/// (ops/cope/cope.h: fused row loops on the CPU), which keeps the positions and
/// probabilities for the backward pass instead of a dozen intermediate tensors.

#include <torch/torch.h>

#include "ropelab/attention/backend.h"

namespace ropelab {

/// Attention of `in` (no logit bias; in.contextual the embeddings E (Dh, P)) under CoPE,
/// with dropout `dropout` on the probabilities when `training`. Query blocks hold at most
/// `budget` scores over batch rows and heads (at least one row). -> (B, H, Tq, Dh)
torch::Tensor contextual_attention(const AttentionInputs& in, double dropout, bool training,
                                   int64_t budget = int64_t{1} << 24);

}  // namespace ropelab
