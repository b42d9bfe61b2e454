#pragma once
/// The plots of one run directory, drawn from what the lower rooms measured and wrote:
/// the loss curves of training, a language model's loss by position in the window, and
/// passkey retrieval's accuracy by length and depth. The file names are run/'s.

#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/eval/protocols.h"

namespace ropelab {

/// The training and validation loss of RUN/metrics.jsonl against the step.
void write_loss_curve(const std::string& metrics_jsonl, const std::string& svg_path);
/// RUN/loss.svg from RUN/metrics.jsonl, for a run whose training reached its end (RUN/trained);
/// nothing for one stopped before it.
void write_run_loss_curve(const std::string& run_dir);

/// `report`'s mean loss by position in the window (EvalReport::position_loss), positions
/// without tokens left out; `run_dir` names the line, `caption` the command.
void write_position_loss_plot(const std::string& svg_path, const std::string& run_dir, const EvalReport& report,
                              const std::string& caption);

/// Passkey accuracy per (length, depth) as a heat map; cells that could not run are blank.
void write_passkey_heat_map(const std::string& svg_path, const std::vector<PasskeyCell>& cells, const PasskeyGrid& grid,
                            const std::string& title, const std::string& caption);

}  // namespace ropelab
