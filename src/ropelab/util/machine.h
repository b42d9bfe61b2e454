#pragma once
/// What a benchmark names about the machine it runs on, and the BLAS core worth asking for.

#include <istream>
#include <string>

namespace ropelab {

/// What a benchmark names about the machine it ran on.
struct MachineInfo {
  std::string cpu;         // cpu_description of /proc/cpuinfo
  std::string aten_isa;    // ATen's vectorised kernels chosen at run time: DEFAULT, AVX2, AVX512
  std::string blas_core;   // OpenBLAS's core type in this process; "" when the BLAS is another
  std::string thread_env;  // how long idle threads spin: OMP_WAIT_POLICY, GOMP_SPINCOUNT and
                           // OPENBLAS_THREAD_TIMEOUT as set in this process ("" when none is)
};
MachineInfo machine_info();

/// One line for logs and reports: "CPU; ATen kernels AVX2; OpenBLAS core Haswell; thread
/// settings: defaults" (or the variables set).
std::string describe(const MachineInfo& machine);

/// The first processor of a /proc/cpuinfo text (each key's first value), as "AMD EPYC (family 26, model 2), 2 cores":
/// its model name (or "unknown CPU"), then its family and model where the text gives them
/// (one name covers CPUs of different speed), then `cores`, the machine's logical cores.
std::string cpu_description(std::istream& cpuinfo, unsigned cores);

/// OpenBLAS's core type in this process (openblas_get_corename); "" when the BLAS is another.
std::string openblas_core();

/// The OpenBLAS core type (OPENBLAS_CORETYPE) worth asking for when OpenBLAS chose `chosen`
/// (openblas_get_corename) on a CPU with these features, or "" to keep its choice:
/// SkylakeX on an AVX-512 CPU (F, BW, VL, DQ) unless it chose an AVX-512 core; Haswell on an
/// AVX2+FMA CPU when it chose a pre-AVX2 core. Case-insensitive.
std::string openblas_core_correction(const std::string& chosen, bool avx2_fma, bool avx512);

}  // namespace ropelab
