#pragma once
/// What an ablation's finished runs contribute, and the tables it writes of them:
///   OUT/results.csv       one row per run: variant, seed, its directory, then its numbers
///   OUT/results.md        one row per variant: mean and standard deviation over seeds (`*`:
///                         differs from the baseline, Holm-adjusted), then passkey accuracy
///                         pooled over seeds with Wilson's 95% intervals and over seeds as
///                         the unit, then the tests of experiment/significance_tests.h
///   OUT/significance.csv  those tests, one row each
///   OUT/valid_curves.svg  validation loss per variant (mean over seeds) against the step
/// and the plots of experiment/plots.h.

#include <map>
#include <string>
#include <vector>

#include "ropelab/experiment/spec.h"
#include "ropelab/metrics/paired_items.h"
#include "ropelab/position/position_traits.h"

namespace ropelab {

/// The numbers one finished run contributes.
struct RunResult {
  std::string variant;
  std::string label;  // for figures: the experiment file's, else position_label of the run's encoder
  int64_t seed = 0;
  std::string run;                               // the run directory, relative to the ablation's output directory
  std::string device = "unknown";                // where the run trained: its config.yaml's train.device
  int64_t context = 0;                           // language models: the training context (data.context)
  PositionKind position = PositionKind::none;    // how the (decoder's) encoder gives positions: plots' panels
  std::map<std::string, double> metrics;         // valid_ppl, test_bleu, test_ppl@128, train_s, ...
  std::vector<std::pair<double, double>> curve;  // (step, validation loss)
  std::vector<PairedItems> items;                // test outputs for paired tests (Task::ablation_items)
  std::string items_error;                       // why `items` is empty, if it is
  /// Language models: the mean test loss at each position of the window, per context.
  std::map<int64_t, std::vector<double>> position_loss;
  /// Language models: per accuracy column (passkey@L), retrieval's (correct, documents) over depths.
  std::map<std::string, std::pair<int64_t, int64_t>> accuracy_counts;
  /// Language models: per accuracy column (passkey@L), each evaluated depth cell's
  /// (correct, documents): the units of its tests against other variants.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> accuracy_cells;
};

/// Reads a finished run directory (metrics.jsonl and the reports of the evaluations asked).
RunResult read_run_result(const std::string& run_dir, const Config& config, const TestEvaluations& asked);

/// Writes the tables and plots of `results` into `out_dir`; `command` is the one that
/// made them, for their captions.
void write_ablation_results(const ExperimentSpec& spec, const std::vector<RunResult>& results,
                            const std::string& out_dir, const std::string& command);

}  // namespace ropelab
