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

}  // namespace ropelab
