#pragma once
// The rotary inner loop over rows of a (..., T, ..., Dh) tensor, for float and double, in
// two builds (baseline and AVX2+FMA) selected at run time. No ATen types here.

#include <cstdint>

namespace ropelab {

/// x seen as rows of Dh elements (unit stride within a row); output contiguous.
struct RotaryRows {
  int64_t count = 0, T = 0, Dh = 0, half = 0, time_axis = 0, axes = 0;
  bool contiguous = false;  // rows back to back: row r at r * Dh
  int64_t inner = 1;        // rows per time step within a run (product of the axes after time)
  int64_t sizes[8] = {}, strides[8] = {};  // leading axes (all but the last)
};

#define ROPELAB_ROTARY_ROWS_DECL                                                                                     \
  void rotary_rows(const RotaryRows& r, const float* x, float* out, const float* cos, const float* sin,             \
                   bool interleaved, float sign, int64_t begin, int64_t end);                                       \
  void rotary_rows(const RotaryRows& r, const double* x, double* out, const double* cos, const double* sin,         \
                   bool interleaved, double sign, int64_t begin, int64_t end);

namespace baseline {
ROPELAB_ROTARY_ROWS_DECL
}
namespace avx2 {
ROPELAB_ROTARY_ROWS_DECL
}

/// Whether this CPU runs the AVX2+FMA build.
bool cpu_has_avx2_fma();

}  // namespace ropelab
