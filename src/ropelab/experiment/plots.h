#pragma once
/// The plots of an ablation directory beyond the validation curves (experiment/results.h
/// writes those with the tables): test perplexity by evaluation length, test loss by
/// position in the window, passkey accuracy by length. Each is written only where the
/// table has its columns.

#include <string>
#include <vector>

#include "ropelab/experiment/results.h"
#include "ropelab/run/ablation_layout.h"

namespace ropelab {

/// extrapolation.svg and extrapolation.strideS.svg, from the test_ppl@C, test_ppl@C/S and
/// test_ppl@C+SCALING and test_ppl@C#wW[sS] columns, when two or more contexts were
/// evaluated.
void write_extrapolation_plots(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                               const std::vector<std::string>& metrics, const AblationLayout& layout,
                               const std::string& experiment, const std::string& command);

/// passkey.svg, from the passkey@L columns.
void write_passkey_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                        const std::vector<std::string>& metrics, const std::string& path, const std::string& experiment,
                        const std::string& command);

/// positions.svg, from the runs' per-position test losses at the longest context.
void write_positions_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                          const std::string& path, const std::string& experiment, const std::string& command);

}  // namespace ropelab
