// Which GPU a process computes on, and that it becomes the current one (util/device.h).
// The CUDA side runs here against c10's fake CUDA guard (test_util.h), so these tests need
// neither a GPU nor a CUDA LibTorch.
#include "ropelab/util/device.h"

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::FakeCudaGuard;

namespace {
const torch::Device kCuda(torch::kCUDA);
}

TEST(Device, EachLocalRankComputesOnItsOwnGpu) {
  EXPECT_EQ(device_for_rank(kCuda, 0, 1, 1), torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(device_for_rank(kCuda, 0, 4, 4), torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(device_for_rank(kCuda, 3, 4, 4), torch::Device(torch::kCUDA, 3));
  // an indexed GPU is kept for a single process
  EXPECT_EQ(device_for_rank(torch::Device(torch::kCUDA, 1), 0, 1, 2), torch::Device(torch::kCUDA, 1));
  // the CPU is everyone's
  EXPECT_EQ(device_for_rank(torch::kCPU, 2, 4, 0), torch::Device(torch::kCPU));
}

TEST(Device, ARankWithoutAGpuOfItsOwnIsRefused) {
  auto message = error_of([] { device_for_rank(kCuda, 2, 4, 2); });
  EXPECT_NE(message.find("LOCAL_RANK 2 computes on cuda:2 but this machine has 2 CUDA devices"), std::string::npos)
      << message;
  message = error_of([] { device_for_rank(kCuda, 0, 1, 0); });
  EXPECT_NE(message.find("has 0 CUDA devices"), std::string::npos) << message;
  message = error_of([] { device_for_rank(torch::Device(torch::kCUDA, 1), 0, 2, 2); });
  EXPECT_NE(message.find("device cuda:1 names one GPU but 2 ranks run on this machine"), std::string::npos) << message;
}

TEST(Device, MakeCurrentSetsTheCurrentGpu) {
  FakeCudaGuard fake;
  make_current(torch::Device(torch::kCUDA, 3));
  EXPECT_EQ(FakeCudaGuard::current(), 3);
  make_current(torch::kCPU);  // the CPU has no current device: nothing changes
  EXPECT_EQ(FakeCudaGuard::current(), 3);
  EXPECT_NE(error_of([] { make_current(kCuda); }).find("has no index"), std::string::npos);
}

TEST(Device, UseDeviceParsesAndRefusesMissingCuda) {
  EXPECT_EQ(use_device("cpu"), torch::Device(torch::kCPU));
  if (torch::cuda::is_available()) {
    EXPECT_EQ(use_device("cuda"), torch::Device(torch::kCUDA, 0));
  } else {
    const auto message = error_of([] { use_device("cuda"); });
    EXPECT_NE(message.find("device cuda requested but this LibTorch build or machine has no CUDA"), std::string::npos)
        << message;
  }
  EXPECT_NE(error_of([] { use_device("tpu"); }).find("unknown device 'tpu'"), std::string::npos);
}
