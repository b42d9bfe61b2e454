#include "ropelab/attention/contextual.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/ops/cope/cope.h"

namespace ropelab {

torch::Tensor contextual_attention(const AttentionInputs& in, double dropout, bool training, int64_t budget) {
  const auto& E = in.contextual;
  TORCH_CHECK(E.defined() && E.dim() == 2 && E.size(0) == in.q.size(-1) && E.size(1) >= 1,
              "contextual_attention: needs position embeddings (Dh, P) = (", in.q.size(-1), ", P), got ",
              E.defined() ? E.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(!in.logit_bias.defined(), "contextual_attention: CoPE takes no other logit bias");
  const int64_t B = in.q.size(0), H = in.q.size(1), tq = in.q.size(2), tk = in.k.size(2);
  const auto q = in.q * (1.0 / std::sqrt(static_cast<double>(in.q.size(-1))));
  const auto keys = in.k.transpose(-2, -1);
  const auto columns = E.to(q.dtype());  // E in the queries' type (fp32 under mixed precision)
  const KeyVisibility visibility{in.causal, in.window, in.sinks};
  torch::Tensor pad;
  if (in.key_padding_mask.defined()) pad = in.key_padding_mask.to(torch::kBool).view({B, 1, 1, tk});
  const int64_t rows = std::max<int64_t>(1, budget / std::max<int64_t>(1, B * H * tk));
  std::vector<torch::Tensor> out;
  for (int64_t i0 = 0; i0 < tq; i0 += rows) {
    const int64_t n = std::min(rows, tq - i0);
    const auto qb = q.narrow(2, i0, n);
    const auto scores = torch::matmul(qb, keys);                              // (B, H, n, Tk), scaled
    auto hidden = hidden_keys(visibility, tq, tk, i0, n, 0, tk, q.device());  // (n, Tk)
    if (pad.defined()) hidden = hidden | pad;                                 // (B, 1, n, Tk)
    const auto at_columns = torch::matmul(qb, columns);                       // (B, H, n, P): q_i . E[c] / sqrt(Dh)
    auto probs = cope_probabilities(scores, at_columns, hidden);
    if (dropout > 0.0 && training) probs = torch::dropout(probs, dropout, true);
    out.push_back(torch::matmul(probs, in.v));
  }
  return out.size() == 1 ? out[0] : torch::cat(out, 2);
}

}  // namespace ropelab
