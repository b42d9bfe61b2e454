#pragma once
/// Planning an ablation: for each variant x seed, which run directory it uses and which
/// ropelab commands are left to run there, from the experiment and what is on disk. Pure:
/// what it knows of the disk comes through RunsOnDisk, which tests replace.

#include <string>
#include <vector>

#include "ropelab/experiment/evaluations.h"
#include "ropelab/experiment/spec.h"

namespace ropelab {

/// What planning reads of an ablation directory.
class RunsOnDisk {
 public:
  virtual ~RunsOnDisk() = default;
  /// The finished runs (their ablation.done exists) in the directory, sorted.
  virtual std::vector<std::string> finished_runs() const = 0;
  /// Whether the run in `dir` finished: it trained to its end and was evaluated.
  virtual bool finished(const std::string& dir) const = 0;
  /// Whether the run in `dir` trained to its end (RunPaths::trained), evaluated or not.
  virtual bool trained(const std::string& dir) const = 0;
  /// Whether `dir` holds a run started from `config` (run_started_with).
  virtual bool started_with(const std::string& dir, const Config& config) const = 0;
  /// Whether `dir` holds `eval`'s report with every column this version reads, and its
  /// items and positions files.
  virtual bool has_evaluation(const std::string& dir, const AblationEval& eval) const = 0;
};

/// The real ablation directory.
class AblationDirectory : public RunsOnDisk {
 public:
  explicit AblationDirectory(std::string out_dir) : out_dir_(std::move(out_dir)) {}
  std::vector<std::string> finished_runs() const override;
  bool finished(const std::string& dir) const override;
  bool trained(const std::string& dir) const override;
  bool started_with(const std::string& dir, const Config& config) const override;
  bool has_evaluation(const std::string& dir, const AblationEval& eval) const override;

 private:
  std::string out_dir_;
};

/// One run of an experiment and what is left to do for it.
struct Job {
  std::string variant;  // the variant's name; "base" for the unnamed one
  std::string label;    // the variant's label from the experiment file; "" without one
  int64_t seed = 0;
  std::string dir, log;  // the run directory and its log
  Config config;         // the variant's config at this seed
  /// The ropelab commands left, in order, each an argument list after the executable
  /// (`--threads`, `--device` and `--run` or `-o` included). Empty: nothing is left.
  std::vector<std::vector<std::string>> steps;
  /// steps[0] trains: the run must reach its end (RunPaths::trained) before the evaluations.
  bool trains = false;
  /// The job is the run's whole work: a training from its start, then every evaluation (not
  /// a resume, nor a trained run's missing evaluations). Only these give the pace of the rest,
  /// and only these start the run's log anew (the others append to it).
  bool whole = false;
  /// The experiment's fine-tunes start from this run: once finished, it is marked as such
  /// (AblationLayout::finetune_source), so that its records keep checkpoint_best.pt.
  bool finetune_source = false;
};

struct PlanOptions {
  std::string out_dir;
  int64_t threads = 1;  // --threads of every command
  std::string device;   // --device of every command; "": the configs'
};

/// Plans the run of `variant` at `seed` (with the `extra` overrides after the variant's own:
/// a fine-tune's train.init_from). Its directory is OUT/runs/VARIANT.seedN, or, where that
/// has not finished, a finished run of the same config (experiments written into one
/// directory share their common runs). Its steps:
///   - a finished run of this config: the evaluations it lacks (none: nothing to do);
///   - a run of this config trained to its end but stopped among its evaluations: the
///     evaluations it lacks (a session that ends mid-evaluation loses only the one under way);
///   - a run started from this config: train --resume (it continues or restarts), then
///     every evaluation;
///   - otherwise (new, or a run of another config, which --overwrite moves aside): train
///     --overwrite from the experiment's files and overrides, then every evaluation.
Job plan_job(const ExperimentSpec& spec, const Variant& variant, int64_t seed, const std::vector<std::string>& extra,
             const PlanOptions& options, const RunsOnDisk& disk);

}  // namespace ropelab
