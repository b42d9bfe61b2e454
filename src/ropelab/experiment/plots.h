#pragma once
/// The plots of an ablation directory (experiment/results.h writes them with the tables):
/// validation curves, test perplexity by evaluation length, test loss by position in the
/// window, context gain by position bucket, retrieval accuracy by length, and retrieval heat
/// maps per variant. Each is written only where the table has its columns.
///
/// A figure reads at a glance: its lines are named by label (the experiment file's, else the
/// position registry's: "rotary", "rotary+yarn", "alibi + w512s4"), in small multiples by
/// family of position information (absolute and none, rotations, logit biases) with shared
/// axes, at most six lines a panel, each line of a panel its own colour.

#include <string>
#include <vector>

#include "ropelab/experiment/results.h"
#include "ropelab/run/ablation_layout.h"

namespace ropelab {

/// What every plot of an ablation is drawn from.
struct PlotInputs {
  const std::vector<std::string>& order;    // the variants, in run order
  const std::vector<RunResult>& results;    // every finished run
  const std::vector<std::string>& metrics;  // the table's columns
  const AblationLayout& layout;
  std::string experiment, command;  // for titles and captions
};

/// Most lines in one panel of a figure.
constexpr size_t kLinesPerPanel = 6;

/// valid_curves.svg: validation loss against the step, mean ± sd over seeds.
void write_valid_curves(const PlotInputs& in);

/// extrapolation.svg and extrapolation.strideS.svg, from the test_ppl@C, test_ppl@C/S and
/// test_ppl@C+SCALING and test_ppl@C#wW[sS] columns, when two or more contexts were
/// evaluated.
void write_extrapolation_plots(const PlotInputs& in);

/// positions.svg, from the runs' per-position test losses at the longest context.
void write_positions_plot(const PlotInputs& in);

/// gain.svg (gain.wW.svg per further window): context gain against the position bucket at the
/// longest context evaluated, from the gain@C#wW:B-E columns.
void write_gain_plots(const PlotInputs& in);

/// passkey.svg and retrieval.TASK.svg: accuracy against the document length, from the
/// passkey@L and TASK@L columns.
void write_accuracy_plots(const PlotInputs& in);

}  // namespace ropelab
