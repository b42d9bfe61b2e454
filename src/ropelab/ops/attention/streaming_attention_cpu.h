#pragma once
// The element-wise tile loops of streaming attention (streaming_attention_cpu.inc) as built
// twice, baseline and AVX2+FMA. Torch-free and code-free: the rule of ops/cpu_build.h.
//
// A tile is `rows` x `cols` of a row-major buffer with leading dimension `ld`. Hidden
// logits (masked keys) hold kStreamingMasked, a finite value: the AVX2 build compiles with
// -ffast-math, which assumes no infinities. Any logit <= kStreamingHiddenBelow counts as
// hidden and gets probability 0.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

constexpr float kStreamingMasked = -1e30f;
constexpr float kStreamingHiddenBelow = -1e29f;

/// Online softmax over one tile of logits S (Rabe and Staats 2021; Dao et al. 2022), row r
/// with running max m[r] and sum l[r]: m' = max(m, max_j S), S_j <- exp(S_j - m') (0 where
/// hidden), l <- l alpha + sum_j S_j with alpha[r] = exp(m - m'), m <- m'. A row with no
/// visible logit in the tile keeps m and l, gets alpha 1 and zeros.
template <typename T>
using OnlineSoftmaxFn = void (*)(T* s, int64_t rows, int64_t cols, int64_t ld, T* m, T* l, T* alpha);
/// S_j <- exp(S_j - lse[r]) (0 where hidden): the probabilities again, from the forward's
/// per-row log-sum-exp.
template <typename T>
using ProbabilitiesFn = void (*)(T* s, int64_t rows, int64_t cols, int64_t ld, const T* lse);
/// dP_j <- P_j (dP_j - d[r]): the softmax backward, d = rowsum(dO * O).
template <typename T>
using SoftmaxGradFn = void (*)(const T* p, T* dp, int64_t rows, int64_t cols, int64_t ld, const T* d);
/// dst row r (at dst + r * dst_step, `cols` long) += src row r. A step of -1 walks a
/// relative table's diagonals: query i and key j read column j - i + const.
template <typename T>
using AddRowsFn = void (*)(T* dst, int64_t dst_step, const T* src, int64_t rows, int64_t cols, int64_t ld);
/// src row r += table row r (at table + r * step), for a logit bias.
template <typename T>
using AddBiasFn = void (*)(T* s, int64_t rows, int64_t cols, int64_t ld, const T* table, int64_t step);

/// One build's loops, one instance per dtype.
struct StreamingAttentionCpuKernels {
  OnlineSoftmaxFn<float> online_softmax_float;
  OnlineSoftmaxFn<double> online_softmax_double;
  ProbabilitiesFn<float> probabilities_float;
  ProbabilitiesFn<double> probabilities_double;
  SoftmaxGradFn<float> softmax_grad_float;
  SoftmaxGradFn<double> softmax_grad_double;
  AddRowsFn<float> add_rows_float;
  AddRowsFn<double> add_rows_double;
  AddBiasFn<float> add_bias_float;
  AddBiasFn<double> add_bias_double;
};

namespace cpu_baseline {
extern const StreamingAttentionCpuKernels streaming_attention;  // streaming_attention_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const StreamingAttentionCpuKernels streaming_attention;  // only where cpu_has_avx2_fma()
}

}  // namespace ropelab
