#pragma once
/// The matrix multiplications of one training update, counted from the model's shapes, and
/// the machine's GEMM speed at exactly those shapes (`ropelab bench gemm`): the peak a
/// training step is measured against (`ropelab bench train` reports its utilisation).

#include <torch/torch.h>

#include <string>
#include <vector>

#include "ropelab/bench/benchmarks.h"
#include "ropelab/config/config.h"

namespace ropelab {

/// `count` multiplications per update of `batch` independent (m x k) by (k x n) products.
struct GemmShape {
  std::string name;  // "encoder ffn in, grad weight", "decoder self scores", ...
  int64_t batch = 1, m = 0, n = 0, k = 0, count = 1;
  /// Runs in fp32 whatever the training precision: attention's own products (attend_in_fp32,
  /// attention/backend.h); only the projections around it run in bf16 or fp16.
  bool fp32 = false;
  double flops() const { return 2.0 * static_cast<double>(batch * m * n * k * count); }
};

/// Every matrix multiplication of one training update (forward and backward) of `config`'s
/// model on a batch of `sentences` x `length` tokens (source and target alike), grouped by
/// shape: per linear map, its forward product, the input's gradient and the weight's
/// gradient; per softmax attention, the scores and the weighted values forward and four
/// products backward (marked fp32); the output projection over `vocab`. Elementwise work
/// is not counted.
/// Throws std::invalid_argument for a backend other than softmax attention.
std::vector<GemmShape> training_gemms(const Config& config, int64_t vocab, int64_t sentences, int64_t length);

double total_flops(const std::vector<GemmShape>& shapes);

struct GemmRow {
  GemmShape shape;
  torch::Dtype dtype = torch::kFloat;  // the operands' type it was timed in
  Timing timing;                       // one multiplication
  double gflops() const { return shape.flops() / static_cast<double>(shape.count) / timing.median / 1e9; }
};

struct GemmBenchResult {
  std::vector<GemmRow> rows;
  double seconds = 0;  // every shape times its count: the update's GEMMs alone
  double flops = 0;
  double gflops() const { return seconds > 0 ? flops / seconds / 1e9 : 0.0; }
};

/// Times torch::mm (torch::bmm for batched shapes) on random operands of `dtype` (of fp32
/// for the shapes marked fp32, as training runs them) for each shape: `repeats` timed calls
/// after one untimed, the median kept.
GemmBenchResult bench_gemm(const std::vector<GemmShape>& shapes, torch::Dtype dtype, const torch::Device& device,
                           int64_t repeats);

}  // namespace ropelab
