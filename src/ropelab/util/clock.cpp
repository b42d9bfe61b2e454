#include "ropelab/util/clock.h"

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace ropelab {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", static_cast<long>(s / 3600), static_cast<long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", static_cast<long>(s / 60), static_cast<long>(s % 60));
  else
    std::snprintf(buffer, sizeof buffer, "%lds", static_cast<long>(s));
  return buffer;
}

}  // namespace ropelab
