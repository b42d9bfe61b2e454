#pragma once
/// What `ropelab bench train` and `ropelab bench gemm` measure and how they report it: one
/// JSON object per row (--json) or lines for a reader, each naming the machine.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ropelab/bench/benchmarks.h"
#include "ropelab/bench/gemm.h"
#include "ropelab/model/precision.h"
#include "ropelab/util/machine.h"

namespace ropelab {

/// The machine's description in a JSON row: cpu, aten_isa, blas_core, thread_env.
void add_machine(nlohmann::ordered_json& row, const MachineInfo& machine);

/// One training benchmark: the step's timing and, where the update's matrix products can be
/// counted from the model's shapes, their work and, with a GEMM peak, the share of it achieved.
struct TrainBenchReport {
  TrainBenchOptions options;
  std::string device;
  int64_t threads = 0;
  Precision precision = Precision::fp32;
  TrainBenchResult result;
  std::vector<GemmShape> gemms;  // empty when not counted
  std::string no_count;          // why they were not
  double flops = 0;              // matmul FLOPs of one update
  GemmBenchResult peak;          // the same GEMMs timed alone (seconds 0: not timed)
  MachineInfo machine;
  double achieved_gflops() const { return result.step.median > 0 ? flops / result.step.median / 1e9 : 0.0; }
};

/// Times `options.steps` training updates of `config`'s model on `device`, then, with
/// `gemm_repeats` > 0, each of the update's matrix products alone at the training's matmul
/// type (`threads`: the intra-op threads in use, for the report).
TrainBenchReport measure_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device,
                               int64_t threads, int64_t gemm_repeats);
nlohmann::ordered_json to_json(const TrainBenchReport& report);
void print(const TrainBenchReport& report);

/// One GEMM benchmark at the shapes of one training update.
struct GemmBenchReport {
  std::string device;
  int64_t threads = 0;
  Precision precision = Precision::fp32;
  GemmBenchResult result;
  MachineInfo machine;
};
/// One JSON object per shape, then one for the whole update.
std::vector<nlohmann::ordered_json> to_json_rows(const GemmBenchReport& report);
void print(const GemmBenchReport& report);

}  // namespace ropelab
