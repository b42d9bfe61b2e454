#pragma once
/// The plots of one run directory, drawn from what the lower rooms measured and wrote:
/// the loss curves of training, a language model's loss by position in the window, and
/// passkey retrieval's accuracy by length and depth. The file names are run/'s.

#include <ostream>
#include <string>
#include <vector>

#include "ropelab/eval/passkey.h"
#include "ropelab/eval/protocols.h"
#include "ropelab/run/run.h"

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

/// The files of a passkey or retrieval evaluation (`files` from RunPaths::passkey or
/// ::retrieval): the table, the heat map (`grid` gives its axes) and the summary, written
/// last since `ablate` takes it as "evaluated" (a table or heat map that cannot be written
/// leaves none, and the next `ablate` evaluates again); then the partial file is removed.
/// Prints the cells and the files written to `out`, a partial file left behind to `log`.
void write_passkey_results(const RunPaths::PasskeyFiles& files, const std::vector<PasskeyCell>& cells,
                           const PasskeyGrid& grid, const std::string& title, const std::string& caption,
                           std::ostream& out, std::ostream& log);

}  // namespace ropelab
