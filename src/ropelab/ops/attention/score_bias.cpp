#include "ropelab/ops/attention/score_bias.h"

#include <algorithm>

namespace ropelab {

torch::Tensor ScoreBias::to_dense(int64_t tq, int64_t tk) const {
  torch::Tensor sum;
  auto add = [&](const torch::Tensor& t) { sum = sum.defined() ? sum + t : t; };
  if (relative.defined()) {
    TORCH_CHECK(relative.dim() == 2 && relative.size(1) == tq + tk - 1, "ScoreBias: a relative table for Tq=", tq,
                " and Tk=", tk, " needs (H, ", tq + tk - 1, ") columns, got ", relative.sizes());
    auto options = torch::TensorOptions().dtype(torch::kLong).device(relative.device());
    auto column = torch::arange(tk, options).unsqueeze(0) - torch::arange(tq, options).unsqueeze(1) + (tq - 1);
    add(relative.index_select(1, column.flatten()).view({1, relative.size(0), tq, tk}));  // (1, H, Tq, Tk)
  }
  if (fire.defined()) add(fire_tile_bias_dense(fire, tq, tk));
  if (forget.defined()) {
    TORCH_CHECK(forget.dim() == 3 && forget.size(2) == tk && tq <= tk, "ScoreBias: a forget gate for Tq=", tq,
                " and Tk=", tk, " needs (B, H, ", tk, ") values, got ", forget.sizes());
    add(forget.narrow(2, tk - tq, tq).unsqueeze(-1) - forget.unsqueeze(-2));  // (B, H, Tq, Tk): c[a] - c[j]
  }
  if (dense.defined()) add(dense);
  return sum;
}

torch::Tensor fire_tile_bias_dense(const FireTileBias& fire, int64_t tq, int64_t tk) {
  auto options = torch::TensorOptions().dtype(torch::kLong).device(fire.psi.device());
  auto rows = [&](int64_t start, int64_t n) {  // query rows [start, start + n) -> (H, n, Tk)
    auto aligned = torch::arange(start, start + n, options).unsqueeze(1) + (tk - tq);  // (n, 1)
    auto distance = (torch::arange(tk, options).unsqueeze(0) - aligned).abs();         // (n, Tk)
    auto x =
        fire.psi.index_select(0, distance.flatten()).view({n, tk}) * fire.inv_norm.narrow(0, start, n).unsqueeze(1);
    auto hidden = torch::relu(x.unsqueeze(-1) * fire.w1.reshape({-1}) + fire.b1);  // (n, Tk, K)
    return torch::linear(hidden, fire.w2, fire.b2).permute({2, 0, 1});
  };
  // with gradient the MLP's activations are kept whatever the blocking; without, blocks of
  // rows keep the (rows, Tk, K) activations small
  if (torch::GradMode::is_enabled()) return rows(0, tq).unsqueeze(0);
  auto bias = torch::empty({fire.w2.size(0), tq, tk}, fire.psi.options());
  constexpr int64_t block = 128;
  for (int64_t start = 0; start < tq; start += block) {
    const int64_t n = std::min(block, tq - start);
    bias.narrow(1, start, n).copy_(rows(start, n));
  }
  return bias.unsqueeze(0);  // (1, H, Tq, Tk)
}

}  // namespace ropelab
