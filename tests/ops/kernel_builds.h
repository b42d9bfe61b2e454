#pragma once
// The CPU builds each op kernel is tested in (ops/dispatch.h): a test parameter (build,
// dtype) and a fixture that runs the test body in that build. The AVX2 build is skipped
// on a CPU without AVX2+FMA.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "../test_util.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab::testing {

struct KernelCase {
  CpuKernels build;
  torch::Dtype dtype;
};

/// Every build with every dtype of `dtypes`.
inline std::vector<KernelCase> kernel_cases(const std::vector<torch::Dtype>& dtypes) {
  std::vector<KernelCase> cases;
  for (auto build : {CpuKernels::baseline, CpuKernels::avx2})
    for (auto dtype : dtypes) cases.push_back({build, dtype});
  return cases;
}

/// "baseline_Float", "avx2_BFloat16", ...: the test name suffix, and how gtest prints the
/// parameter (ctest's test names include it).
inline std::string kernel_case_name(const ::testing::TestParamInfo<KernelCase>& info) {
  return to_string(info.param.build) + "_" + c10::toString(info.param.dtype);
}
inline void PrintTo(const KernelCase& c, std::ostream* os) {
  *os << to_string(c.build) << "_" << c10::toString(c.dtype);
}

class KernelTest : public Seeded, public ::testing::WithParamInterface<KernelCase> {
 protected:
  void SetUp() override {
    Seeded::SetUp();
    if (build() == CpuKernels::avx2 && !cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2+FMA";
    level_.emplace(build());
    ASSERT_EQ(cpu_kernel_level(), build());
  }
  void TearDown() override { level_.reset(); }

  CpuKernels build() const { return GetParam().build; }
  torch::Dtype dtype() const { return GetParam().dtype; }
  torch::TensorOptions options() const { return torch::TensorOptions().dtype(dtype()); }

 private:
  std::optional<CpuKernelLevelGuard> level_;
};

}  // namespace ropelab::testing
