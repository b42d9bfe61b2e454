#pragma once
/// Which keys a query sees, beside key padding: the causal mask, a sliding window and
/// attention sinks, shared by every attention kernel and the ATen reference.
///
/// Query i of Tq is aligned with key a = i + Tk - Tq (cached decoding: the new queries
/// follow the cached keys). It sees key j when
///   causal        j <= a
///   window W > 0  |a - j| < W (causal: the W most recent keys, itself included), or j < sinks
///                 (the first `sinks` keys stay visible: Xiao et al. 2023, "StreamingLLM")
/// A query that sees no key at all gets a zero output.

#include <algorithm>
#include <cstdint>

namespace ropelab {

struct KeyVisibility {
  bool causal = false;
  int64_t window = 0;  // 0: every key
  int64_t sinks = 0;   // with a window: keys [0, sinks) always visible

  bool visible(int64_t aligned_query, int64_t key) const {
    if (causal && key > aligned_query) return false;
    if (window <= 0 || key < sinks) return true;
    const int64_t distance = aligned_query >= key ? aligned_query - key : key - aligned_query;
    return distance < window;
  }
  /// Whether some key can be hidden other than by padding.
  bool restricts() const { return causal || window > 0; }
};

/// A half-open range of keys.
struct KeyRange {
  int64_t begin = 0, end = 0;
};

/// At most two ranges of keys (of Tk) that queries [i0, i1) (of Tq) may see: the sinks, then
/// the causal / window span; returns how many. Keys outside them are hidden from every query
/// of the range, so a tiled kernel skips their tiles.
inline int visible_key_ranges(const KeyVisibility& vis, int64_t tq, int64_t tk, int64_t i0, int64_t i1,
                              KeyRange out[2]) {
  const int64_t a0 = i0 + tk - tq, a1 = i1 - 1 + tk - tq;  // the first and last query's key
  int64_t lo = 0, hi = tk;
  if (vis.causal) hi = std::min(hi, a1 + 1);
  if (vis.window > 0) {
    lo = std::max<int64_t>(0, a0 - vis.window + 1);
    if (!vis.causal) hi = std::min(hi, a1 + vis.window);
  }
  int n = 0;
  if (vis.window > 0 && vis.sinks > 0 && lo > 0) {
    const int64_t sink_end = std::min({vis.sinks, lo, vis.causal ? a1 + 1 : tk});
    if (sink_end > 0) out[n++] = {0, sink_end};
  }
  if (lo < hi) out[n++] = {lo, hi};
  return n;
}

/// Whether every query of [i0, i1) sees every key of [j0, j1) (padding aside): a tile that
/// needs no mask.
inline bool sees_whole_tile(const KeyVisibility& vis, int64_t tq, int64_t tk, int64_t i0, int64_t i1, int64_t j0,
                            int64_t j1) {
  const int64_t a0 = i0 + tk - tq, a1 = i1 - 1 + tk - tq;
  if (vis.causal && j1 - 1 > a0) return false;
  if (vis.window > 0 && j1 > vis.sinks) {
    const int64_t first = std::max(j0, vis.sinks);  // the keys that only the window shows
    if (first < a1 - vis.window + 1) return false;
    if (!vis.causal && j1 - 1 > a0 + vis.window - 1) return false;
  }
  return true;
}

}  // namespace ropelab
