#include "ropelab/train/distributed.h"

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "ropelab/build_config.h"
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#if ROPELAB_WITH_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // ProcessGroupGloo.hpp is guarded by it (Debian's LibTorch has Gloo)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if ROPELAB_WITH_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <stdexcept>

namespace ropelab {

namespace {

int64_t env_int(const char* name, int64_t fallback, int64_t min) {
  const char* value = std::getenv(name);
  if (!value || !*value) return fallback;
  char* end = nullptr;
  const long long parsed = std::strtoll(value, &end, 10);
  if (*end != '\0' || parsed < min)
    throw std::runtime_error(std::string("environment: ") + name + "='" + value +
                             "' is not an integer >= " + std::to_string(min));
  return parsed;
}

}  // namespace

LaunchEnv LaunchEnv::from_environment() {
  LaunchEnv env;
  env.world_size = env_int("WORLD_SIZE", 1, 1);
  env.rank = env_int("RANK", 0, 0);
  env.local_rank = env_int("LOCAL_RANK", env.rank, 0);
  env.local_world_size = env_int("LOCAL_WORLD_SIZE", env.world_size, 1);
  env.master_port = env_int("MASTER_PORT", 29500, 1);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  if (env.rank >= env.world_size)
    throw std::runtime_error("environment: RANK=" + std::to_string(env.rank) +
                             " must be below WORLD_SIZE=" + std::to_string(env.world_size));
  if (env.master_port > 65535) throw std::runtime_error("environment: MASTER_PORT must be below 65536");
  return env;
}

// Gloo's and NCCL's process groups derive from c10d::ProcessGroup in LibTorch 1.x and from
// c10d::Backend (same collectives) in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBase = c10d::Backend;
#else
using ProcessGroupBase = c10d::ProcessGroup;
#endif

struct DataParallel::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<ProcessGroupBase> group;
  std::string backend;
  std::chrono::milliseconds timeout;
  torch::Device device{torch::kCPU};
};

DataParallel::DataParallel(const LaunchEnv& env, const torch::Device& device, std::chrono::milliseconds timeout)
    : env_(env), group_(std::make_unique<Group>()) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = static_cast<size_t>(env.world_size);
  store_options.timeout = timeout;
  auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  group_->store = c10::make_intrusive<c10d::PrefixStore>("ropelab", tcp);
  group_->timeout = timeout;
  group_->device = device;
  const int rank = static_cast<int>(env.rank), size = static_cast<int>(env.world_size);
  if (device.is_cuda()) {
#if ROPELAB_WITH_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    group_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_->store, rank, size, options);
    group_->backend = "nccl";
#else
    throw std::runtime_error("distributed training on CUDA needs a LibTorch built with NCCL");
#endif
  } else {
#if ROPELAB_WITH_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr));
    group_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, rank, size, options);
    group_->backend = "gloo";
#else
    throw std::runtime_error(
        "distributed training on the CPU needs Gloo: this ropelab was built without it "
        "(-DROPELAB_WITH_GLOO=OFF)");
#endif
  }
}

DataParallel::~DataParallel() = default;

std::string DataParallel::backend() const { return group_->backend; }

void DataParallel::all_reduce_sum(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes) {
  size_t first = 0;
  while (first < tensors.size()) {  // one bucket: consecutive tensors of one dtype up to bucket_bytes
    size_t last = first;
    int64_t bytes = 0;
    while (last < tensors.size() && tensors[last].scalar_type() == tensors[first].scalar_type() &&
           (last == first || bytes + tensors[last].nbytes() <= static_cast<size_t>(bucket_bytes)))
      bytes += static_cast<int64_t>(tensors[last++].nbytes());
    std::vector<torch::Tensor> bucket(tensors.begin() + static_cast<std::ptrdiff_t>(first),
                                      tensors.begin() + static_cast<std::ptrdiff_t>(last));
    std::vector<torch::Tensor> flat{torch::cat([&] {
      std::vector<torch::Tensor> views;
      for (const auto& t : bucket) views.push_back(t.reshape({-1}));
      return views;
    }())};
    c10d::AllreduceOptions options;
    options.timeout = group_->timeout;
    group_->group->allreduce(flat, options)->wait(group_->timeout);
    int64_t offset = 0;
    for (auto& t : bucket) {
      t.copy_(flat[0].narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
    first = last;
  }
}

void DataParallel::broadcast(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    std::vector<torch::Tensor> one{t};
    c10d::BroadcastOptions options;
    options.timeout = group_->timeout;
    group_->group->broadcast(one, options)->wait(group_->timeout);
  }
}

void DataParallel::barrier() {
  // An all-reduce of one number: Gloo's barrier has no per-call timeout on every path.
  auto token = torch::zeros({1}, torch::TensorOptions().device(group_->device));
  all_reduce_sum({token});
}

std::vector<size_t> shard_of(const std::vector<size_t>& indices, int64_t rank, int64_t world) {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(rank); i < indices.size(); i += static_cast<size_t>(world))
    out.push_back(indices[i]);
  return out;
}

}  // namespace ropelab
