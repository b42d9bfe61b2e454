#include "ropelab/util/threads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

namespace ropelab {

int64_t set_threads(int64_t threads) {
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  at::set_num_threads(static_cast<int>(threads));
  return at::get_num_threads();
}

}  // namespace ropelab
