#pragma once
/// A run directory: everything needed to resume, evaluate or decode.
///   RUN/config.yaml             the merged, effective config
///   RUN/vocab.txt | spm.model   the tokenizer
///   RUN/checkpoint_last.pt, RUN/checkpoint_best.pt, RUN/checkpoint_STEP.pt (the newest few)
///   RUN/metrics.jsonl           one JSON object per log or validation event (run/metrics_log.h)
///   RUN/data/                   the training split's token store
///   RUN/loss.svg                the loss curves; RUN/trained: training reached its end
///   RUN/checkpoint_avgN.pt      ropelab average's output
///   RUN/passkey.{csv,json,svg}  passkey retrieval (.partial.jsonl while under way)
///   RUN/retrieval.TASK.{csv,json,svg}  a retrieval probe (data/retrieval.h)
///   RUN/eval.*, RUN/hyp.*       evaluations: run/eval_files.h

#include <memory>
#include <string>
#include <vector>

#include "ropelab/data/tokenizer.h"
#include "ropelab/options/config.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {

struct RunPaths {
  explicit RunPaths(std::string dir);
  std::string dir, config, last, best, metrics, data;
  /// Written when training reaches its end (train.steps, or early stopping), removed when
  /// training starts: a run stopped by a signal exits 0 but has no such file.
  std::string trained;
  /// "best" | "last" | a file path -> the checkpoint file.
  std::string checkpoint(const std::string& which) const;
  /// The checkpoint --resume continues from: `last`, or `best` where a run stopped after a
  /// validation saved it and before `last` was written (absent: `last`, for the error).
  std::string resume_from() const;
  /// RUN/config.stepSTEP.yaml: the config a run trained with up to STEP, kept when a resume
  /// at STEP changed it (--set); config.yaml is the one it goes on with.
  std::string config_until(int64_t step) const;
  /// RUN/checkpoint_STEP.pt, kept for the newest train.keep_checkpoints validations.
  std::string numbered(int64_t step) const;
  /// The numbered checkpoints present, oldest first.
  std::vector<std::string> numbered_checkpoints() const;
  /// Copies the last checkpoint to checkpoint_STEP.pt and keeps only the newest `keep`.
  void keep_numbered(int64_t step, int64_t keep) const;
  /// RUN/checkpoint_avgN.pt: the average of the newest N numbered checkpoints (ropelab average).
  std::string averaged(int64_t count) const;
  /// The tokenizer's file: RUN/vocab.txt (word), RUN/spm.model (sentencepiece, its
  /// piece list beside it as spm.vocab); "" for the byte tokenizer, which has none.
  std::string tokenizer(TokenizerType type) const;
  /// RUN/loss.svg: the training and validation loss curves.
  std::string loss_plot() const;
  /// Passkey retrieval's files: RUN/passkey<precision>.csv (every cell), .json (accuracy
  /// per length) and .svg (the heat map), and .partial.jsonl (the cells scored so far while
  /// the evaluation is under way: eval/passkey.h); `precision_suffix` is "" for fp32, else
  /// ".bf16" or ".fp16" (beside the fp32 files).
  struct PasskeyFiles {
    std::string csv, json, svg, partial;
  };
  PasskeyFiles passkey(const std::string& precision_suffix) const;
  /// A retrieval task's files (`ropelab retrieval eval`), as passkey's: RUN/retrieval.TASK<precision>.{csv,json,svg}.
  PasskeyFiles retrieval(const std::string& task, const std::string& precision_suffix) const;
};

/// Whether the run in `dir` was started from `config`: its config.yaml (read with `files`)
/// is `config` but for train.threads and train.device, which change no result, and for the
/// position settings its encoders do not read (position/unused_settings.h). False without
/// a readable one.
bool run_started_with(const std::string& dir, const Config& config, const ConfigFiles& files);

/// The device the run in `dir` trained on: its config.yaml's train.device (read with
/// `files`), whatever device later evaluates it; "unknown" without one. One that cannot be
/// read throws the reader's error, which names the file.
std::string run_device(const std::string& dir, const ConfigFiles& files);

/// A trained run loaded for inference, in eval mode on `device`.
struct LoadedRun {
  Config config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Task> task;
  std::shared_ptr<TaskModel> model;
};
/// Its config.yaml is read with `files`; `overrides` (KEY=VALUE) change the run's config
/// for this use only; they may touch only what leaves the trained parameters as they are
/// (ConfigFiles::override_error).
LoadedRun open_run(const std::string& dir, const std::string& checkpoint, const torch::Device& device,
                   const ConfigFiles& files, const std::vector<std::string>& overrides = {});

/// The run's config, tokenizer and task with a freshly initialised model (no checkpoint).
LoadedRun open_run_untrained(const std::string& dir, const ConfigFiles& files,
                             const std::vector<std::string>& overrides = {});

}  // namespace ropelab
