#pragma once
/// Training hyperparameters (Vaswani et al. 2017, 5.3-5.4).

#include <torch/arg.h>

#include <cstdint>
#include <string>

#include "ropelab/model/precision.h"

namespace ropelab {

/// `noam`: lr = lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5) (the paper: lr 1);
/// `inverse_sqrt`: linear warm-up to lr, then lr * sqrt(warmup / step) (fairseq);
/// `constant`: lr throughout.
enum class LrSchedule { noam, inverse_sqrt, constant };

/// train.lr_schedule's spelling ("noam", "inverse_sqrt", "constant").
std::string to_string(LrSchedule schedule);
LrSchedule parse_lr_schedule(const std::string& name);

struct TrainOptions {
  /// cpu, cuda, cuda:N
  TORCH_ARG(std::string, device) = "cpu";
  /// Intra-op threads; 0 = all cores.
  TORCH_ARG(int64_t, threads) = 0;
  TORCH_ARG(int64_t, seed) = 1;
  TORCH_ARG(Precision, precision) = Precision::fp32;
  /// Optimizer updates to run.
  TORCH_ARG(int64_t, steps) = 100000;
  /// Token budget of one batch (source or target side, whichever is longer, padding included).
  TORCH_ARG(int64_t, max_tokens) = 4096;
  /// Batches per optimizer update (gradient accumulation).
  TORCH_ARG(int64_t, accumulate) = 1;
  TORCH_ARG(LrSchedule, lr_schedule) = LrSchedule::noam;
  /// noam: a factor on the formula; inverse_sqrt and constant: the peak rate.
  TORCH_ARG(double, lr) = 1.0;
  TORCH_ARG(int64_t, warmup) = 4000;
  TORCH_ARG(double, adam_beta1) = 0.9;
  TORCH_ARG(double, adam_beta2) = 0.98;
  TORCH_ARG(double, adam_eps) = 1e-9;
  TORCH_ARG(double, weight_decay) = 0.0;
  /// torch's variant: eps/V to every class including the target; pads ignored.
  TORCH_ARG(double, label_smoothing) = 0.1;
  /// Gradient-norm clipping; 0 = off.
  TORCH_ARG(double, clip_norm) = 0.0;
  TORCH_ARG(int64_t, log_every) = 100;
  /// Validation loss / perplexity every N updates; 0 = only at the end.
  TORCH_ARG(int64_t, valid_every) = 1000;
  /// Early stopping after N validations without improvement; 0 = off.
  TORCH_ARG(int64_t, patience) = 0;
  /// Numbered checkpoints kept (one per validation, for `ropelab average`); 0 = none.
  TORCH_ARG(int64_t, keep_checkpoints) = 5;
  /// Data-parallel runs: seconds a collective may wait for the other ranks before the
  /// run stops with an error (a dead or stuck rank).
  TORCH_ARG(double, dist_timeout) = 120;
  /// Updates with a non-finite loss or gradient skipped (each with a warning) before the
  /// run stops; the last checkpoint written stays the last good one. 0: stop at the first.
  TORCH_ARG(int64_t, max_nonfinite) = 10;
  /// Fine-tuning: a finished run directory (its best checkpoint, else its last) or a
  /// checkpoint file whose parameters and buffers start this run; the tokenizer comes from
  /// that directory (the file's directory). Optimizer, schedule and step start afresh.
  /// Empty: a model initialised from train.seed.
  TORCH_ARG(std::string, init_from) = "";
};

}  // namespace ropelab
