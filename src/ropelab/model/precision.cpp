#include "ropelab/model/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<Precision, 4> kPrecisionNames{
    {{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}, {Precision::automatic, "auto"}}};

const char* const kUnresolved = "precision auto is a request: the trainer resolves it to fp32 or bf16 before use";

// LibTorch 2.4 made autocast's C++ calls take the device type and deprecated the calls per
// device, which then warn on every use (every training update); before 2.4 there are only those.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(at::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
void set_autocast_enabled(at::DeviceType type, bool enabled) { at::autocast::set_autocast_enabled(type, enabled); }
at::ScalarType autocast_dtype(at::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
void set_autocast_dtype(at::DeviceType type, at::ScalarType dtype) { at::autocast::set_autocast_dtype(type, dtype); }
#else
bool autocast_enabled(at::DeviceType type) {
  return type == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast_enabled(at::DeviceType type, bool enabled) {
  type == at::kCUDA ? at::autocast::set_enabled(enabled) : at::autocast::set_cpu_enabled(enabled);
}
at::ScalarType autocast_dtype(at::DeviceType type) {
  return type == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(at::DeviceType type, at::ScalarType dtype) {
  type == at::kCUDA ? at::autocast::set_autocast_gpu_dtype(dtype) : at::autocast::set_autocast_cpu_dtype(dtype);
}
#endif

}  // namespace

torch::Dtype matmul_dtype(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return torch::kBFloat16;
    case Precision::fp16:
      return torch::kHalf;
    case Precision::automatic:
      throw std::invalid_argument(kUnresolved);
    case Precision::fp32:
      break;
  }
  return torch::kFloat;
}

PrecisionScope::PrecisionScope(Precision precision, const torch::Device& device) {
  if (precision == Precision::fp32) return;
  if (precision == Precision::automatic) throw std::invalid_argument(kUnresolved);
  if (precision == Precision::fp16 && !device.is_cuda())
    throw std::invalid_argument("precision fp16 runs on CUDA only (LibTorch's CPU autocast runs bf16); use bf16");
  active_ = true;
  type_ = device.is_cuda() ? at::kCUDA : at::kCPU;
  was_enabled_ = autocast_enabled(type_);
  was_dtype_ = autocast_dtype(type_);
  set_autocast_dtype(type_, matmul_dtype(precision));
  set_autocast_enabled(type_, true);
  at::autocast::increment_nesting();
}

PrecisionScope::~PrecisionScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();  // the cached weight casts
  set_autocast_enabled(type_, was_enabled_);
  set_autocast_dtype(type_, was_dtype_);
}

std::string to_string(Precision v) { return enum_name(v, kPrecisionNames); }
Precision parse_precision(const std::string& s) { return parse_enum(s, kPrecisionNames, "precision"); }

}  // namespace ropelab
