#include "ropelab/util/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <thread>

namespace ropelab {

namespace {

struct BlasThreadCalls {
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;
};

const BlasThreadCalls& blas_thread_calls() {
  static const BlasThreadCalls calls = [] {
    BlasThreadCalls out;
    out.set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    out.get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (!out.set || !out.get) out = {};
    return out;
  }();
  return calls;
}

}  // namespace

int64_t set_threads(int64_t threads) {
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  at::set_num_threads(static_cast<int>(threads));
  set_blas_threads(threads);
  return at::get_num_threads();
}

int64_t blas_threads() {
  const auto& calls = blas_thread_calls();
  return calls.get ? calls.get() : 0;
}

void set_blas_threads(int64_t threads) {
  const auto& calls = blas_thread_calls();
  if (calls.set) calls.set(static_cast<int>(threads));
}

}  // namespace ropelab
