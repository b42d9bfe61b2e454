#pragma once
/// `ropelab ablate`: runs every variant x seed of an experiment (config/experiment.h) as
/// `ropelab train` + `ropelab eval` child processes, skips finished runs (so a stopped
/// ablation resumes, continuing an interrupted run from its last checkpoint), and writes
///   OUT/results.csv   one row per run
///   OUT/results.md    one row per variant: mean and standard deviation over seeds, then
///                     paired bootstrap tests of each variant against the first
///   OUT/significance.csv  those tests, one row per (variant, column, seed or pooled)
///   OUT/valid_curves.svg  validation loss per variant (mean over seeds) against the step
/// Runs live in OUT/runs/VARIANT.seedN with their logs next to them.

#include <map>
#include <string>
#include <vector>

#include "ropelab/config/experiment.h"
#include "ropelab/eval/paired_items.h"

namespace ropelab {

struct AblationOptions {
  std::string out_dir;
  std::string executable;  // the ropelab binary the runs use
  int64_t jobs = 1;        // runs at a time
  int64_t threads = 0;     // threads per run; 0 = cores / jobs
  std::string device;      // --device for every run (empty: the configs')
};

/// The numbers one finished run contributes.
struct RunResult {
  std::string variant;
  int64_t seed = 0;
  std::map<std::string, double> metrics;         // valid_ppl, test_bleu, test_ppl@128, train_s, ...
  std::vector<std::pair<double, double>> curve;  // (step, validation loss)
  std::vector<PairedItems> items;                // test outputs for paired tests (Task::ablation_items)
  std::string items_error;                       // why `items` is empty, if it is
  /// Language models: the mean test loss at each position of the window, per context.
  std::map<int64_t, std::vector<double>> position_loss;
};

/// Reads a finished run directory (metrics.jsonl and eval.test*.json).
RunResult read_run_result(const std::string& run_dir, const Config& config, const TestEvaluations& asked);

/// Runs what is missing, then writes the result files. Returns the number of failed runs
/// (their logs are named on stderr); results cover the runs that finished.
int64_t run_ablation(const ExperimentSpec& spec, const AblationOptions& options);

/// Writes results.csv, results.md and valid_curves.svg for `results` into `out_dir`.
void write_ablation_results(const ExperimentSpec& spec, const std::vector<RunResult>& results,
                            const std::string& out_dir, const std::string& command);

}  // namespace ropelab
