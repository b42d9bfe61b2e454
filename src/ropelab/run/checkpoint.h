#pragma once
/// Checkpoints: model parameters and buffers, optimizer state and progress in one
/// torch archive, written atomically (temporary file, fsync, rename).

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ropelab {

/// fp16 training's dynamic loss scale (train/trainer.h, update_loss_scale) and the finite
/// updates since it last changed; scale 0 when the run does not scale its loss.
struct LossScale {
  double scale = 0;
  int64_t good = 0;
};

struct Progress {
  int64_t step = 0;             // optimizer updates done
  int64_t epoch = 0;            // passes over the training data begun
  int64_t batch = 0;            // batches of the current epoch consumed
  double best_valid = 1e30;     // best validation loss so far
  int64_t bad_validations = 0;  // validations since the best (early stopping)
  double seconds = 0;           // training wall time up to `step`, summed over resumes
  LossScale loss_scale;
};

/// Writes `path` atomically; the previous file at `path` survives any failure.
void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const Progress& progress);

/// Loads into `model` (and `optimizer`, `progress` when given). Throws std::runtime_error
/// naming the file for unreadable files and parameters missing or of another shape.
void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer = nullptr,
                     Progress* progress = nullptr);

/// Averages the parameters of `inputs` (Vaswani et al. 2017, 6.1: the last 5) into
/// `model` and writes them to `output` without optimizer state.
void average_checkpoints(const std::vector<std::string>& inputs, torch::nn::Module& model, const std::string& output);

}  // namespace ropelab
