#pragma once
/// `ropelab train`: the optimisation loop for any task (task/): data, model, updates
/// (Vaswani et al. 2017, section 5), validation and checkpoints into a run directory (run/).

#include <string>
#include <vector>

#include "ropelab/data/batching.h"
#include "ropelab/eval/loss.h"
#include "ropelab/options/config.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/task/task.h"
#include "ropelab/train/distributed.h"

namespace ropelab {

/// Dynamic loss scaling for fp16 training (Micikevicius et al. 2018): the loss is multiplied
/// by the scale before the backward pass, so that small gradients survive fp16, and the
/// gradients are divided by it again inside Adam's pass. An update whose scaled gradients
/// overflow is skipped and halves the scale; kLossScaleGrowth finite updates in a row
/// double it. The scale starts at kLossScaleInitial and is kept in checkpoints (Progress).
constexpr double kLossScaleInitial = 65536.0;
constexpr int64_t kLossScaleGrowth = 2000;
void update_loss_scale(LossScale& scale, bool finite);

/// lr at optimizer update `step` (1-based) for the configured schedule.
double learning_rate(const TrainOptions& options, int64_t d_model, int64_t step);

/// One optimizer update over `batches` (gradient accumulation): forward, smoothed loss,
/// backward, gradients scaled to a per-target-token mean over the whole update,
/// clipping, then Adam at learning rate `lr`. Returns the summed statistics.
/// With a data-parallel `group`, `batches` are this rank's shards: gradients and
/// statistics are summed over the ranks first (so the update equals one process on the
/// whole batches), and `*stop` (when given) becomes true if any rank asked to stop.
/// A non-finite loss (on any rank) or gradient norm skips the update: no optimizer step,
/// gradients cleared, `skipped` set. With a `loss_scale` (fp16), the backward pass runs on
/// the scaled loss and the scale is updated (update_loss_scale); an overflow of the scaled
/// gradients sets `overflow` as well.
LossTotals update_step(const TaskModel& model, torch::optim::Adam& optimizer, const std::vector<Batch>& batches,
                       const TrainOptions& options, double lr, DataParallel* group = nullptr, bool* stop = nullptr,
                       LossScale* loss_scale = nullptr);

/// Trains from `config` into `run_dir`, writing its config.yaml with `files`; with
/// `resume`, continues the run found there.
void train(const Config& config, const ConfigFiles& files, const std::string& run_dir, bool resume);

}  // namespace ropelab
