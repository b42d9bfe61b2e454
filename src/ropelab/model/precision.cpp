#include "ropelab/model/precision.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace ropelab {

torch::Dtype matmul_dtype(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return torch::kBFloat16;
    case Precision::fp16:
      return torch::kHalf;
    case Precision::fp32:
      break;
  }
  return torch::kFloat;
}

PrecisionScope::PrecisionScope(Precision precision, const torch::Device& device) {
  if (precision == Precision::fp32) return;
  if (precision == Precision::fp16 && !device.is_cuda())
    throw std::invalid_argument("precision fp16 runs on CUDA only (LibTorch's CPU autocast runs bf16); use bf16");
  active_ = true;
  cuda_ = device.is_cuda();
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(matmul_dtype(precision));
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(matmul_dtype(precision));
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
}

PrecisionScope::~PrecisionScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();  // the cached weight casts
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
}

}  // namespace ropelab
