#pragma once
/// train.precision: auto. Whether bf16 pays depends on the machine more than on the model:
/// on CPUs with AVX512-BF16 and a fast bf16 GEMM (AMD EPYC Zen 4 and later) bf16 trains at
/// about 1.6-1.9x fp32, while on a Xeon whose bf16 GEMM runs at half its fp32 rate it trains
/// at about 0.6x (docs/configs_and_training.md). So the trainer measures: the run's own model
/// on its first batch, forward, loss and backward in each precision, alternating, and keeps
/// the faster. The choice is written into the run's config.yaml, so a resumed or repeated run
/// does not depend on timing noise.

#include <string>

#include "ropelab/data/batching.h"
#include "ropelab/model/precision.h"
#include "ropelab/task/task.h"

namespace ropelab {

/// The seconds of one forward, loss and backward in each candidate, and the one kept.
struct PrecisionTrial {
  double fp32_seconds = 0.0;
  double bf16_seconds = 0.0;
  Precision chosen = Precision::fp32;
  int rounds = 0;
  int64_t ranks = 1;  // data-parallel: the times are the ranks' sum
  /// One line for the log: what was timed and what was kept.
  std::string describe() const;
};

/// bf16 when it took less time than fp32, otherwise fp32 (a tie keeps fp32).
Precision faster_precision(double fp32_seconds, double bf16_seconds);

/// Times forward, smoothed loss and backward of `model` on `batch` in fp32 and bf16,
/// alternating, one untimed pass of each and then `rounds` timed pairs; each candidate's
/// time is its median. The parameters are left as they were and their gradients dropped;
/// dropout draws are consumed (the trainer reseeds at every update).
PrecisionTrial time_precisions(const TaskModel& model, const Batch& batch, double label_smoothing, int rounds = 3);

}  // namespace ropelab
