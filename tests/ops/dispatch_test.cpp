// Kernel dispatch (ops/dispatch.h): the CPU level, its guard and environment variable, and
// how a table picks its entry.
#include "ropelab/ops/dispatch.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "../test_util.h"

using namespace ropelab;

namespace {

int baseline_entry() { return 1; }
int avx2_entry() { return 2; }
int cuda_entry() { return 3; }

/// Runs a shell command line and returns its stdout and stderr.
std::string output_of(const std::string& command) {
  std::string output;
  FILE* pipe = popen(("{ " + command + " ; } 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  pclose(pipe);
  return output;
}

}  // namespace

TEST(CpuKernelDispatch, GuardForcesTheBaselineAndRestoresTheLevel) {
  const auto before = cpu_kernel_level();
  {
    CpuKernelLevelGuard baseline(CpuKernels::baseline);
    EXPECT_EQ(cpu_kernel_level(), CpuKernels::baseline);
    {
      CpuKernelLevelGuard avx2(CpuKernels::avx2);
      EXPECT_EQ(cpu_kernel_level(), cpu_has_avx2_fma() ? CpuKernels::avx2 : CpuKernels::baseline);
    }
    EXPECT_EQ(cpu_kernel_level(), CpuKernels::baseline);
  }
  EXPECT_EQ(cpu_kernel_level(), before);
  set_cpu_kernel_level(CpuKernels::baseline);
  EXPECT_EQ(cpu_kernel_level(), CpuKernels::baseline);
  set_cpu_kernel_level(CpuKernels::avx2);
  EXPECT_EQ(cpu_kernel_level(), cpu_has_avx2_fma() ? CpuKernels::avx2 : CpuKernels::baseline);
}

TEST(CpuKernelDispatch, TablePicksByDeviceAndLevel) {
  const DispatchTable<int (*)()> cpu_only{"cpu_only_op", &baseline_entry, &avx2_entry};
  const DispatchTable<int (*)()> with_cuda{"cuda_op", &baseline_entry, &avx2_entry, &cuda_entry};
  {
    CpuKernelLevelGuard level(CpuKernels::baseline);
    EXPECT_EQ(cpu_only(torch::kCPU)(), 1);
  }
  {
    CpuKernelLevelGuard level(CpuKernels::avx2);
    EXPECT_EQ(cpu_only(torch::kCPU)(), cpu_has_avx2_fma() ? 2 : 1);
  }
  EXPECT_TRUE(cpu_only.runs_on(torch::kCPU));
  EXPECT_FALSE(cpu_only.runs_on(torch::kCUDA));
  EXPECT_TRUE(with_cuda.runs_on(torch::kCUDA));
  EXPECT_EQ(with_cuda(torch::Device(torch::kCUDA, 0))(), 3);
  auto message = ropelab::testing::error_of([&] { cpu_only(torch::Device(torch::kCUDA, 0)); });
  EXPECT_NE(message.find("cpu_only_op: this ropelab was built without CUDA"), std::string::npos) << message;
  message = ropelab::testing::error_of([&] { with_cuda(torch::kMeta); });
  EXPECT_NE(message.find("cuda_op: runs on CPU or CUDA tensors; got meta"), std::string::npos) << message;
}

namespace {
int64_t current_gpu() { return ropelab::testing::FakeCudaGuard::current(); }
}  // namespace

TEST(CpuKernelDispatch, RunMakesTheTensorsGpuCurrentForTheCallOnly) {
  ropelab::testing::FakeCudaGuard fake;  // eight pretend GPUs, cuda:0 current
  const DispatchTable<int64_t (*)()> table{"op", [] { return int64_t{-1}; }, [] { return int64_t{-1}; }, &current_gpu};
  EXPECT_EQ(table.run(torch::Device(torch::kCUDA, 2)), 2);  // the kernel saw cuda:2 current
  EXPECT_EQ(current_gpu(), 0);                              // and the caller's GPU is back
  EXPECT_EQ(table.run(torch::Device(torch::kCUDA, 0)), 0);
  EXPECT_EQ(table.run(torch::kCPU), -1);  // the CPU entry, with no GPU touched
  EXPECT_EQ(current_gpu(), 0);
}

TEST(CpuKernelDispatch, LevelNames) {
  EXPECT_EQ(parse_cpu_kernels("baseline"), CpuKernels::baseline);
  EXPECT_EQ(parse_cpu_kernels("avx2"), CpuKernels::avx2);
  EXPECT_EQ(to_string(CpuKernels::avx2), "avx2");
  auto message = ropelab::testing::error_of([] { parse_cpu_kernels("sse"); });
  EXPECT_NE(message.find("(expected baseline | avx2)"), std::string::npos) << message;
}

// The environment variable is read once per process: each value runs in a child process,
// this test binary again, which prints the level it runs.
TEST(CpuKernelDispatch, EnvironmentVariableSetsTheLevel) {
  const char* self = "CpuKernelDispatch.EnvironmentVariableSetsTheLevel";
  if (std::getenv("ROPELAB_DISPATCH_TEST_CHILD")) {
    const auto message =
        ropelab::testing::error_of([] { std::printf("level=%s\n", to_string(cpu_kernel_level()).c_str()); });
    std::printf("%s\n", message.c_str());
    return;
  }
  const auto exe = std::filesystem::read_symlink("/proc/self/exe").string();
  auto child = [&](const std::string& value) {
    return output_of("ROPELAB_DISPATCH_TEST_CHILD=1 ROPELAB_CPU_KERNELS=" + value + " '" + exe +
                     "' --gtest_filter=" + self);
  };
  EXPECT_NE(child("baseline").find("level=baseline"), std::string::npos);
  const std::string best = cpu_has_avx2_fma() ? "level=avx2" : "level=baseline";
  EXPECT_NE(child("avx2").find(best), std::string::npos);
  EXPECT_NE(child("").find(best), std::string::npos);  // empty: the default
  const auto bad = child("fast");
  EXPECT_NE(bad.find("unknown ROPELAB_CPU_KERNELS value 'fast' (expected baseline | avx2)"), std::string::npos) << bad;
}
