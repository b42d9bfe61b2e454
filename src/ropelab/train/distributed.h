#pragma once
/// Data-parallel training on LibTorch's c10d: launched like torchrun (RANK, WORLD_SIZE,
/// LOCAL_RANK, MASTER_ADDR, MASTER_PORT), rendezvous through a TCPStore, Gloo on the CPU
/// and NCCL on CUDA (when this LibTorch was built with it). Every rank holds the whole
/// model; each reads its own rows of every batch; gradients are summed across ranks in
/// buckets. c10d types stay in distributed.cpp.

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace ropelab {

/// The torchrun environment. World size 1 (no variables set) means single-process.
struct LaunchEnv {
  int64_t rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  bool distributed() const { return world_size > 1; }
  /// Reads the variables; throws std::runtime_error naming a variable with a bad value.
  static LaunchEnv from_environment();
};

class DataParallel {
 public:
  /// Joins the group (rank 0 hosts the TCPStore). `timeout` bounds every collective:
  /// a dead or stuck rank makes the others fail instead of hanging.
  DataParallel(const LaunchEnv& env, const torch::Device& device, std::chrono::milliseconds timeout);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  bool is_main() const { return env_.rank == 0; }
  std::string backend() const;

  /// Sums the tensors across ranks in place, packed into flat buckets of about
  /// `bucket_bytes` (one collective per bucket). Tensors must be contiguous.
  void all_reduce_sum(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes = 25 << 20);
  /// Copies rank 0's values into the tensors on every rank.
  void broadcast(const std::vector<torch::Tensor>& tensors);
  void barrier();

 private:
  struct Group;
  LaunchEnv env_;
  std::unique_ptr<Group> group_;
};

/// Rows `rank`, `rank + world`, ... of a batch's example indices: this rank's shard.
std::vector<size_t> shard_of(const std::vector<size_t>& indices, int64_t rank, int64_t world);

}  // namespace ropelab
