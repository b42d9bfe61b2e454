#pragma once
/// Kernel dispatch: one table per op, in the spirit of PyTorch's DispatchStub.
///
/// An op (ops/<op>/) has up to three implementations: its CPU loop in two builds,
/// baseline and AVX2+FMA (ops/cpu_build.h), and, when the Torch found has CUDA, a CUDA
/// kernel. The op's .cpp lists them in one DispatchTable; each call takes the entry for the
/// tensor's device and, on the CPU, for cpu_kernel_level(). The CPU is probed once; the
/// level is then one atomic load per call.
///
/// Forcing the baseline CPU build (to test it on an AVX2 machine, or to compare speed):
///   * set_cpu_kernel_level(CpuKernels::baseline), for the whole process;
///   * CpuKernelLevelGuard guard(CpuKernels::baseline), for one scope (tests);
///   * the environment variable ROPELAB_CPU_KERNELS=baseline, read at the first call that
///     asks for the level (=avx2, the default, runs AVX2 where the CPU has it; any other
///     value is an error naming the valid ones).
/// The level is process-wide, not per thread: the kernels' worker threads follow it.

#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

/// The CPU builds of the inner loops, in order: a level runs its build or a lower one.
enum class CpuKernels { baseline, avx2 };
std::string to_string(CpuKernels level);
CpuKernels parse_cpu_kernels(const std::string& name);

/// Whether this CPU runs the AVX2+FMA build (probed once).
bool cpu_has_avx2_fma();

/// The CPU build that runs now: avx2 when requested (the default) and cpu_has_avx2_fma(),
/// else baseline.
CpuKernels cpu_kernel_level();

/// Requests a level for the whole process; `avx2` on a CPU without it runs the baseline.
void set_cpu_kernel_level(CpuKernels level);

/// Requests `level` for its lifetime, then restores the previous request.
class CpuKernelLevelGuard {
 public:
  explicit CpuKernelLevelGuard(CpuKernels level);
  ~CpuKernelLevelGuard();
  CpuKernelLevelGuard(const CpuKernelLevelGuard&) = delete;
  CpuKernelLevelGuard& operator=(const CpuKernelLevelGuard&) = delete;

 private:
  CpuKernels previous_;
};

/// The implementations of one op. `Impl` is a function pointer (or a struct of them, for an
/// op with a forward and a backward) with the same signature on every device.
template <typename Impl>
struct DispatchTable {
  const char* op;                 // for error messages
  Impl cpu_baseline;              // the baseline build, runs on any x86-64 CPU
  Impl cpu_avx2;                  // the AVX2+FMA build
  std::optional<Impl> cuda = {};  // set only in a CUDA build (ROPELAB_WITH_CUDA)

  /// The CPU build for cpu_kernel_level().
  const Impl& cpu() const { return cpu_kernel_level() == CpuKernels::avx2 ? cpu_avx2 : cpu_baseline; }

  /// Whether some implementation runs on `device`.
  bool runs_on(c10::DeviceType device) const {
    return device == c10::DeviceType::CPU || (device == c10::DeviceType::CUDA && cuda.has_value());
  }

  /// The implementation for `device`.
  const Impl& operator()(const c10::Device& device) const {
    if (device.is_cpu()) return cpu();
    TORCH_CHECK(device.is_cuda(), op, ": runs on CPU or CUDA tensors; got ", device);
    TORCH_CHECK(cuda.has_value(), op, ": this ropelab was built without CUDA (the Torch it found has none); got ",
                device);
    return *cuda;
  }

  /// Calls the implementation for `device` with `device` made current for the call and
  /// restored after it: a CUDA kernel launched on the current stream then runs on the
  /// tensors' GPU (cuda:1, a rank's GPU), not on whichever GPU the caller had current.
  template <typename... Args>
  decltype(auto) run(const c10::Device& device, Args&&... args) const {
    const Impl& impl = (*this)(device);
    c10::OptionalDeviceGuard guard;
    if (!device.is_cpu()) guard.reset_device(device);
    return impl(std::forward<Args>(args)...);
  }
};

/// Of a CPU build's per-dtype loops, the one for scalar_t (float or double).
template <typename scalar_t, typename FloatFn, typename DoubleFn>
auto loop_for(FloatFn float_fn, DoubleFn double_fn) {
  static_assert(std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>, "loops exist for float, double");
  if constexpr (std::is_same_v<scalar_t, float>)
    return float_fn;
  else
    return double_fn;
}

/// The same with a bfloat16 loop: scalar_t float, double or c10::BFloat16.
template <typename scalar_t, typename FloatFn, typename DoubleFn, typename BFloat16Fn>
auto loop_for(FloatFn float_fn, DoubleFn double_fn, BFloat16Fn bfloat16_fn) {
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16>)
    return bfloat16_fn;
  else
    return loop_for<scalar_t>(float_fn, double_fn);
}

/// How a CPU loop sees an element of scalar_t: c10::BFloat16 as its bits (ops/cpu_build.h).
template <typename scalar_t>
using CpuElement = std::conditional_t<std::is_same_v<scalar_t, c10::BFloat16>, BFloat16Bits, scalar_t>;
static_assert(sizeof(c10::BFloat16) == sizeof(BFloat16Bits) && alignof(c10::BFloat16) == alignof(BFloat16Bits));

}  // namespace ropelab
