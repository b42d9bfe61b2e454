#pragma once
// CPU inner loops built twice, baseline and AVX2+FMA (-ffast-math, so GCC vectorises expf
// through glibc's libmvec), and chosen at run time with cpu_has_avx2_fma(). The two
// translation units (cpu_kernels_baseline.cpp, cpu_kernels_avx2.cpp) include no library
// templates, not even std::vector: an inline function compiled with -mavx2 must never be
// picked by the linker for code that runs on a CPU without it. No ATen types here.

#include <cstdint>

namespace ropelab {

/// Rotary: x seen as rows of Dh elements (unit stride within a row); output contiguous.
struct RotaryRows {
  int64_t count = 0, T = 0, Dh = 0, half = 0, time_axis = 0, axes = 0;
  bool contiguous = false;  // rows back to back: row r at r * Dh
  int64_t inner = 1;        // rows per time step within a run (product of the axes after time)
  int64_t sizes[8] = {}, strides[8] = {};  // leading axes (all but the last)
};

#define ROPELAB_CPU_KERNELS_DECL(T)                                                                                \
  /* rotary rows [begin, end): rotate (sign +1) or the inverse (sign -1) */                                        \
  void rotary_rows(const RotaryRows& r, const T* x, T* out, const T* cos, const T* sin, bool interleaved, T sign,   \
                   int64_t begin, int64_t end);                                                                    \
  /* label-smoothed cross-entropy rows of logits (N, V): see train/trainer.cpp */                                  \
  void ce_forward(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps, int64_t begin,           \
                  int64_t end, T* lse, T* loss, T* nll);                                                         \
  void ce_backward(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps, const T* lse,          \
                   const T* g, int64_t begin, int64_t end, T* grad);                                             \
  /* dropout elements [begin, end): out = keep(seed, i) ? x * scale : 0 */                                         \
  void dropout(const T* x, T* out, int64_t begin, int64_t end, uint32_t seed, uint32_t threshold, T scale);

namespace baseline {
ROPELAB_CPU_KERNELS_DECL(float)
ROPELAB_CPU_KERNELS_DECL(double)
}  // namespace baseline
namespace avx2 {
ROPELAB_CPU_KERNELS_DECL(float)
ROPELAB_CPU_KERNELS_DECL(double)
}  // namespace avx2

/// Whether this CPU runs the AVX2+FMA build (checked once).
bool cpu_has_avx2_fma();

/// Loss semantics, per row n with target t != pad:
///   lse = log sum_v exp(x_v);  nll = lse - x_t;  loss = (1 - eps) nll + eps (lse - mean_v x_v)
/// (eps/V on every class); pad rows give 0. Backward:
///   grad_v = g (exp(x_v - lse) - eps/V) - g (1 - eps) [v == t]; 0 for pad rows.
/// Dropout keeps element i when hash32(i, seed) >= threshold (threshold = p * 2^32).

}  // namespace ropelab
