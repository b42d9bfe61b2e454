#pragma once
/// The test evaluations of an ablation run: for each protocol its task offers (the task
/// registry), the ropelab commands the experiment file asks for, the report each leaves in
/// the run directory (named by run/) and the table columns read from it.

#include <string>
#include <utility>
#include <vector>

#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/spec.h"
#include "ropelab/metrics/paired_items.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {

/// One evaluation `ropelab ablate` runs on the test split.
struct AblationEval {
  ProtocolKind protocol = ProtocolKind::translation_quality;
  std::vector<std::string> args;  // `ropelab ARGS --run RUN`: {"eval", "--split", "test", ...}
  /// The report's file tag (run/eval_files.h); passkey retrieval's files are RunPaths::passkey.
  std::string tag;
  std::vector<std::pair<std::string, ColumnKey>> columns;  // {the report's JSON key, the column}
  bool items = false;                                      // the report has test items for paired tests between runs
  bool positions = false;  // window perplexity: the mean loss by position (--per-position)
  int64_t context = 0;     // window perplexity: the evaluation context
  /// The tag of another evaluation whose report this one's command writes too (context
  /// gain: the window perplexity at its context, with positions); "" for none.
  std::string also_writes;
  /// Numbers the report must hold for it to be this evaluation's (passkey_seed: its documents);
  /// with report_may_lack, a report written before it recorded them counts too.
  std::vector<std::pair<std::string, double>> report_equals;
  bool report_may_lack = false;

  /// The report's JSON in `run_dir`.
  std::string report(const std::string& run_dir) const;
  /// The items' file in `run_dir` (the hypotheses, or the windows' table); "" without items.
  std::string items_file(const std::string& run_dir) const;
  /// The loss-by-position table in `run_dir`; "" without one.
  std::string positions_file(const std::string& run_dir) const;
};

/// The test evaluations of a run of `config`, as `asked`, in the order they run.
std::vector<AblationEval> ablation_evals(const Config& config, const TestEvaluations& asked);

/// A finished run's test outputs as items for paired tests between runs, one per paired
/// column (the hypotheses against the test references, or the windows' NLL).
std::vector<PairedItems> ablation_items(const std::string& run_dir, const Config& config, const TestEvaluations& asked);

}  // namespace ropelab
