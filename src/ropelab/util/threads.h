#pragma once
/// LibTorch's intra-op thread count.

#include <cstdint>

namespace ropelab {

/// Sets LibTorch's intra-op threads (0 = all cores); returns the number in use.
int64_t set_threads(int64_t threads);

}  // namespace ropelab
