#pragma once
// Template implementation of time_repeats (included by benchmarks.h).

#include "ropelab/util/runtime.h"

#include <algorithm>

namespace ropelab {

namespace detail {
void synchronize(const torch::Device& device);
}

template <typename F>
Timing time_repeats(F&& f, int64_t warmup, int64_t repeats, const torch::Device& device) {
  for (int64_t i = 0; i < warmup; ++i) f();
  detail::synchronize(device);
  std::vector<double> times;
  for (int64_t i = 0; i < repeats; ++i) {
    const double start = now_seconds();
    f();
    detail::synchronize(device);
    times.push_back(now_seconds() - start);
  }
  std::sort(times.begin(), times.end());
  Timing t;
  t.repeats = repeats;
  if (times.empty()) return t;
  t.median = times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  t.min = times.front();
  t.max = times.back();
  return t;
}

}  // namespace ropelab
