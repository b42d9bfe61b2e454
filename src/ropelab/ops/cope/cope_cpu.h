#pragma once
// CoPE's attention probabilities as CPU loops (cope_cpu.inc), built twice, baseline and
// AVX2+FMA. Torch-free and code-free: the rule of ops/cpu_build.h.
//
// Per row r = (b, h, i) of scores s (rows, Tk) = q_i . k_j / sqrt(Dh), columns c (rows, P)
// = q_i . E[.] / sqrt(Dh) and the row's hidden keys (Golovneva et al. 2024):
//   g_j = sigmoid(s_j) (0 where hidden),  p_j = min(g_j + ... + g_{Tk-1}, P - 1),
//   z_j = s_j + (1 - w_j) c[floor(p_j)] + w_j c[ceil(p_j)],  w_j = p_j - floor(p_j),
//   probs = softmax of z over the visible keys (0 where hidden; a row with none: zeros).
// Backward, from dprobs (dz the softmax's adjoint):
//   dc[floor(p_j)] += dz_j (1 - w_j), dc[ceil(p_j)] += dz_j w_j,
//   dp_j = dz_j (c[ceil] - c[floor]),  ds_t = dz_t + g_t (1 - g_t) (dp_0 + ... + dp_t).
// A capped p_j (P - 1, an integer) has floor = ceil, so its dp_j is 0 as the cap's.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

/// One call's rows: the tensors are contiguous, row r of every (rows, .) tensor at r times
/// its width. Row r belongs to batch element r / rows_per_batch and query r % queries.
template <typename T>
struct CopeRows {
  int64_t rows_per_batch = 0;       // H x queries
  int64_t queries = 0;              // n, the query rows of one (b, h)
  int64_t keys = 0;                 // Tk
  int64_t columns = 0;              // P
  int64_t hidden_batch_stride = 0;  // 0: one mask for the batch; else queries x keys
  const uint8_t* hidden = nullptr;  // (B or 1, queries, keys), nonzero = hidden
  const T* scores = nullptr;        // (rows, keys)
  const T* at_columns = nullptr;    // (rows, columns)
  T* positions = nullptr;           // (rows, keys): forward writes p, backward reads it
  T* probs = nullptr;               // (rows, keys): forward writes, backward reads
  const T* grad_probs = nullptr;    // (rows, keys): backward
  T* grad_scores = nullptr;         // (rows, keys): backward writes
  T* grad_columns = nullptr;        // (rows, columns): backward writes
};

template <typename T>
using CopeRowsFn = void (*)(const CopeRows<T>& rows, int64_t begin, int64_t end);

/// One build's loops, per dtype.
struct CopeCpuKernels {
  CopeRowsFn<float> forward_float;
  CopeRowsFn<double> forward_double;
  CopeRowsFn<float> backward_float;
  CopeRowsFn<double> backward_double;
};

namespace cpu_baseline {
extern const CopeCpuKernels cope;  // cope_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const CopeCpuKernels cope;  // cope_cpu_avx2.cpp; only where cpu_has_avx2_fma()
}

}  // namespace ropelab
