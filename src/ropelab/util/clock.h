#pragma once
/// Wall-clock time for progress lines and benchmarks.

#include <string>

namespace ropelab {

/// Wall-clock seconds since an arbitrary epoch (steady clock).
double now_seconds();

/// "1h02m", "3m07s", "12s"
std::string format_duration(double seconds);

}  // namespace ropelab
