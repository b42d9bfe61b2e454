#pragma once
// The score bias (score_bias.h) as the streaming kernel's tile loops read it, and the score
// tile it adds to. Internal to ops/attention.

#include <torch/torch.h>

#include "ropelab/ops/attention/fire_pieces.h"
#include "ropelab/ops/attention/streaming_problem.h"

namespace ropelab::streaming {

/// The logit bias as the tile loops read it.
template <typename T>
struct Bias {
  const T* relative = nullptr;  // (H, Tq + Tk - 1)
  const T* dense = nullptr;     // (1|B, H, Tq, Tk)
  bool dense_per_batch = false;
  const FirePieces<T>* fire = nullptr;
  const T* forget = nullptr;  // (B, H, Tk): cumulative log forget gates
  /// Adds the bias of (b, h) to the tile of queries [i0, i0 + rows) and keys [j0, j0 + cols).
  void add(const Loops<T>& f, T* s, int64_t ld, const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t rows,
           int64_t j0, int64_t cols) const {
    if (relative)  // query i0 + r, key j0 + c: column j0 + c - i0 - r + Tq - 1
      f.add_bias(s, rows, cols, ld, relative + h * (p.Tq + p.Tk - 1) + (j0 - i0 + p.Tq - 1), -1);
    if (dense)
      f.add_bias(s, rows, cols, ld, dense + (((dense_per_batch ? b : 0) * p.H + h) * p.Tq + i0) * p.Tk + j0, p.Tk);
    if (fire)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        T* row = s + r * ld;
        const T inv = fire->inv_norm[i];
        const T* slope = fire->slope.data() + h * (fire->m + 1);
        const T* intercept = fire->intercept.data() + h * (fire->m + 1);
        fire->runs(i, i + p.offset(), j0, cols, [&](int64_t c0, int64_t c1, int64_t piece, int64_t d0, int64_t step) {
          const T alpha = slope[piece] * inv, beta = intercept[piece];
          const T* psi = fire->psi + d0;  // column c0 + c: distance d0 + step c
          T* out = row + c0;
          if (step < 0)
            for (int64_t c = 0; c < c1 - c0; ++c) out[c] += alpha * psi[-c] + beta;
          else
            for (int64_t c = 0; c < c1 - c0; ++c) out[c] += alpha * psi[c] + beta;
        });
      }
    if (forget) {  // c[a] - c[j]: the sum of log f over (j, a]
      const T* c_head = forget + (b * p.H + h) * p.Tk;
      const T* c_keys = c_head + j0;
      for (int64_t r = 0; r < rows; ++r) {
        const T c_query = c_head[i0 + r + p.offset()];
        T* row = s + r * ld;
        for (int64_t c = 0; c < cols; ++c) row[c] += c_query - c_keys[c];
      }
    }
  }
};

template <typename T>
Bias<T> bias_of(const torch::Tensor& dense, const torch::Tensor& relative, const torch::Tensor& forget, int64_t B,
                const FirePieces<T>* fire = nullptr) {
  Bias<T> bias;
  if (forget.numel()) bias.forget = forget.data_ptr<T>();
  if (relative.numel()) bias.relative = relative.data_ptr<T>();
  if (dense.numel()) bias.dense = dense.data_ptr<T>(), bias.dense_per_batch = dense.size(0) == B && B > 1;
  bias.fire = fire;
  return bias;
}

/// S (rows x cols) = scale Q K^T + bias, hidden logits masked.
template <typename T>
void scores(const Loops<T>& f, const Problem& p, const Bias<T>& bias, const HeadView<T>& Q, const HeadView<T>& K,
            T scale, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* s) {
  blas::gemm(false, true, rows, cols, p.Dh, scale, Q.row(i0), Q.ld, K.row(j0), K.ld, T(0), s, p.bk);
  bias.add(f, s, p.bk, p, b, h, i0, rows, j0, cols);
  if (!p.all_visible(b, i0, i0 + rows, j0, j0 + cols)) p.mask(s, p.bk, b, i0, rows, j0, cols);
}

}  // namespace ropelab::streaming
