#pragma once
// FIRE's bias (fire_tile_bias.h) as the streaming kernel evaluates it: linear pieces of the
// MLP, the runs of keys each piece covers along a query row, and the gradients summed per
// piece, per distance and per row. Internal to ops/attention.

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

namespace ropelab::streaming {

/// FIRE's bias (FireTileBias) as linear pieces: mlp_h(x) = slope[h][s] x + intercept[h][s]
/// on piece s = the number of breakpoints <= x, and per query row the distance from which
/// x reaches each breakpoint, so that a row's keys fall into runs of one piece.
template <typename T>
struct FirePieces {
  int64_t m = 0;                    // breakpoints, ascending
  int64_t n = 0;                    // psi's length
  std::vector<T> slope, intercept;  // (H, m + 1)
  std::vector<int64_t> reach;       // (Tq, m): the first distance whose x is >= breakpoint k
  torch::Tensor active;             // (m + 1, K) double: 1 where unit k is active on piece s
  const T *psi = nullptr, *inv_norm = nullptr;

  /// Calls run(c0, c1, s, d0, step) for the runs of keys [j0, j0 + cols) that query i
  /// (aligned with key a) sees on one piece s: columns [c0, c1), the first at distance d0,
  /// the distance changing by `step` (-1 left of a, +1 right of it).
  template <typename Run>
  void runs(int64_t i, int64_t a, int64_t j0, int64_t cols, const Run& run) const {
    const int64_t* first = reach.data() + i * m;
    auto piece = [&](int64_t distance) { return std::upper_bound(first, first + m, distance) - first; };
    const int64_t end = j0 + cols, left_end = std::min(end, a + 1);
    int64_t j = j0;
    while (j < left_end) {  // j <= a: the distance a - j falls, and with it the piece
      const int64_t s = piece(a - j), stop = s > 0 ? std::min(left_end, a - first[s - 1] + 1) : left_end;
      run(j - j0, stop - j0, s, a - j, int64_t{-1});
      j = stop;
    }
    j = std::max(j, a + 1);
    while (j < end) {  // j > a: the distance j - a grows
      const int64_t s = piece(j - a), stop = s < m ? std::min(end, a + first[s]) : end;
      run(j - j0, stop - j0, s, j - a, int64_t{1});
      j = stop;
    }
  }
};

template <typename T>
FirePieces<T> fire_pieces(const torch::Tensor& psi, const torch::Tensor& inv_norm, const torch::Tensor& w1,
                          const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2, int64_t Tq) {
  FirePieces<T> f;
  const auto W1 = w1.to(torch::kDouble), B1 = b1.to(torch::kDouble);
  const int64_t K = W1.numel(), H = w2.size(0);
  const auto* pw = W1.data_ptr<double>();
  const auto* pb = B1.data_ptr<double>();
  std::vector<double> breaks;
  for (int64_t k = 0; k < K; ++k)
    if (pw[k] != 0) breaks.push_back(-pb[k] / pw[k]);
  std::sort(breaks.begin(), breaks.end());
  f.m = static_cast<int64_t>(breaks.size());
  // which units are active on each piece: at a point inside it
  torch::Tensor active = torch::zeros({f.m + 1, K}, torch::kDouble);
  auto act = active.accessor<double, 2>();
  for (int64_t s = 0; s <= f.m; ++s) {
    const double x = f.m == 0   ? 0.0
                     : s == 0   ? breaks[0] - 1.0
                     : s == f.m ? breaks[static_cast<size_t>(f.m - 1)] + 1.0
                                : 0.5 * (breaks[static_cast<size_t>(s - 1)] + breaks[static_cast<size_t>(s)]);
    for (int64_t k = 0; k < K; ++k) act[s][k] = pw[k] * x + pb[k] > 0 ? 1.0 : 0.0;
  }
  f.active = active;
  const torch::Tensor W2 = w2.to(torch::kDouble);
  const torch::Tensor slope = torch::matmul(W2 * W1.unsqueeze(0), active.t()).contiguous();  // (H, m + 1)
  const torch::Tensor intercept =
      (torch::matmul(W2 * B1.unsqueeze(0), active.t()) + b2.to(torch::kDouble).unsqueeze(1)).contiguous();
  f.slope.assign(slope.data_ptr<double>(), slope.data_ptr<double>() + H * (f.m + 1));
  f.intercept.assign(intercept.data_ptr<double>(), intercept.data_ptr<double>() + H * (f.m + 1));
  f.psi = psi.data_ptr<T>();
  f.inv_norm = inv_norm.data_ptr<T>();
  const int64_t n = f.n = psi.numel();
  f.reach.resize(static_cast<size_t>(Tq * f.m));
  at::parallel_for(0, Tq, 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t k = 0; k < f.m; ++k) {  // binary search: psi is non-decreasing
        int64_t lo = 0, hi = n;
        while (lo < hi) {
          const int64_t mid = (lo + hi) / 2;
          if (static_cast<double>(f.psi[mid]) * static_cast<double>(f.inv_norm[i]) >= breaks[static_cast<size_t>(k)])
            hi = mid;
          else
            lo = mid + 1;
        }
        f.reach[static_cast<size_t>(i * f.m + k)] = lo;
      }
  });
  return f;
}

/// FIRE's gradients from dS (rows x cols, ld) of queries from i0 (aligned with key
/// i0 + offset) and keys from j0: into d_psi (by distance), the per-piece sums of dS and
/// dS x (m + 1, 2) and d_inv (by query row).
template <typename T>
void fire_backward(const FirePieces<T>& fire, int64_t offset, int64_t h, const T* ds, int64_t ld, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols, T* d_psi, double* sums, T* d_inv) {
  const T* slope = fire.slope.data() + h * (fire.m + 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const T inv = fire.inv_norm[i];
    const T* g = ds + r * ld;
    T row = 0;  // sum of dS slope psi: the gradient of inv_norm[i]
    fire.runs(i, i + offset, j0, cols, [&](int64_t c0, int64_t c1, int64_t piece, int64_t d0, int64_t step) {
      T g_sum = 0, gx_sum = 0, gslope_psi = 0;
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t distance = d0 + step * (c - c0);
        const T psi = fire.psi[distance], v = g[c] * slope[piece];
        d_psi[distance] += v * inv;
        gslope_psi += v * psi;
        g_sum += g[c];
        gx_sum += g[c] * psi;
      }
      row += gslope_psi;
      sums[2 * piece] += static_cast<double>(g_sum);
      sums[2 * piece + 1] += static_cast<double>(gx_sum) * static_cast<double>(inv);
    });
    d_inv[i] += row;
  }
}

}  // namespace ropelab::streaming
