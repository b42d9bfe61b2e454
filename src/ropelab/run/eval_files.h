#pragma once
/// The files one evaluation of a trained run leaves in its run directory (`ropelab eval`):
///   RUN/hyp.<split><set><precision>.txt       the hypotheses of a translation task
///   RUN/eval.<tag>.json                       the report's fields, after split, checkpoint, precision
///   RUN/eval.<tag>.items.tsv                  per-item statistics for paired tests between runs
///   RUN/eval.<tag>.positions.csv and .svg     a language model's mean loss by position
///                                             (the plot drawn by report/run_plots.h)
/// where <tag> is the report's file tag, then the --set overrides (<set>, evaluation_tag), then
/// the precision when it is not fp32: reports and hypotheses of another precision or config
/// sit beside the plain ones, never over them.

#include <string>
#include <vector>

#include "ropelab/eval/protocols.h"
#include "ropelab/model/precision.h"

namespace ropelab {

/// What names and describes one evaluation's files.
struct EvalFileOptions {
  std::string split;       // as asked for: test | valid | a file
  std::string checkpoint;  // best | last | a file
  Precision precision = Precision::fp32;
  std::vector<std::string> overrides;  // --set KEY=VALUE, in order
};

/// What `ropelab eval --set K=V ...` adds to its report's name, so that evaluations of one
/// run under other settings keep their own: ".set_yarn_8" for --set ...type=yarn --set
/// ...factor=8; "" without overrides.
std::string evaluation_tag(const std::vector<std::string>& overrides);

/// The files of the evaluation whose <tag> is `tag`, in `run_dir`.
struct EvalFilePaths {
  std::string json;           // RUN/eval.<tag>.json
  std::string items;          // RUN/eval.<tag>.items.tsv
  std::string positions_csv;  // RUN/eval.<tag>.positions.csv
  std::string positions_svg;  // RUN/eval.<tag>.positions.svg
};
EvalFilePaths eval_file_paths(const std::string& run_dir, const std::string& tag);

/// RUN/hyp.<split's file name><suffix>.txt: the hypotheses of a translation task; the suffix
/// is the overrides' tag and the precision's (empty for a plain evaluation).
std::string hypotheses_path(const std::string& run_dir, const std::string& split, const std::string& suffix = "");

/// The <tag> of the files: the report's file tag, the overrides' tag, the precision.
std::string eval_file_tag(const EvalReport& report, const EvalFileOptions& options);

/// RUN/eval.<tag>.positions.svg: where the loss by position is drawn.
std::string eval_positions_plot(const std::string& run_dir, const EvalReport& report, const EvalFileOptions& options);

/// Writes `report`'s files but the plot into `run_dir`; returns their paths in the order
/// written, the JSON report last.
std::vector<std::string> write_eval_files(const std::string& run_dir, const EvalReport& report,
                                          const EvalFileOptions& options);

/// The number at `key` of the JSON report at `path`; NaN when the file, the key or a
/// number there is missing.
double read_report_number(const std::string& path, const std::string& key);

}  // namespace ropelab
