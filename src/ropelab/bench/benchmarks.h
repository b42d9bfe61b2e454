#pragma once
/// Benchmarks behind `ropelab bench ...`: measured, never asserted in tests.

#include "ropelab/config/config.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ropelab {

/// Median and spread of repeated timings, in seconds.
struct Timing {
  double median = 0, min = 0, max = 0;
  int64_t repeats = 0;
};

/// Times `f` `repeats` times after `warmup` untimed calls (CUDA synchronised).
template <typename F>
Timing time_repeats(F&& f, int64_t warmup, int64_t repeats, const torch::Device& device);

struct TrainBenchOptions {
  int64_t vocab_size = 8000;
  int64_t batch = 64;     // sentences
  int64_t length = 32;    // tokens per source and target sentence
  int64_t warmup = 3;
  int64_t steps = 20;
  /// When set, the timed steps are recorded by LibTorch's profiler into this Chrome trace.
  std::string profile;
};

struct TrainBenchResult {
  Timing step;
  double target_tokens_per_second = 0;
  int64_t parameters = 0;
};

/// Times full training updates (forward, loss, backward, Adam) of the configured Seq2Seq
/// model on fixed-shape synthetic batches, exactly as the trainer runs them.
TrainBenchResult bench_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device);

}  // namespace ropelab

#include "ropelab/bench/timing_impl.h"
