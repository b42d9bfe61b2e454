#include "ropelab/run/eval_files.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "ropelab/eval/paired_items.h"
#include "ropelab/report/plot.h"

namespace ropelab {

namespace {

std::string precision_suffix(const EvalFileOptions& options) {
  return options.precision == "fp32" ? "" : "." + options.precision;
}

/// RUN/eval.<tag>.positions.csv (position, mean loss, tokens) and its plot.
void write_positions(const std::string& stem, const std::string& run_dir, const EvalReport& report,
                     const EvalFileOptions& options) {
  std::vector<std::vector<double>> rows;
  Series curve;
  curve.name = run_dir;
  for (size_t j = 0; j < report.position_loss.size(); ++j) {
    rows.push_back({static_cast<double>(j), report.position_loss[j], report.position_tokens[j]});
    if (report.position_tokens[j] > 0)
      curve.x.push_back(static_cast<double>(j)), curve.y.push_back(report.position_loss[j]);
  }
  write_item_table(stem + ".csv", {"position", "mean_loss", "tokens"}, rows);
  PlotOptions plot;
  plot.title = run_dir + ": loss by position (" + report.file_tag + ")";
  plot.x_label = "position in the window";
  plot.y_label = "mean loss (nats per token)";
  plot.caption = options.command;
  write_line_plot(stem + ".svg", {curve}, plot);
}

}  // namespace

std::string eval_file_tag(const EvalReport& report, const EvalFileOptions& options) {
  return report.file_tag + evaluation_tag(options.overrides) + precision_suffix(options);
}

std::vector<std::string> write_eval_files(const std::string& run_dir, const EvalReport& report,
                                          const EvalFileOptions& options) {
  const std::filesystem::path dir(run_dir);
  const std::string tag = eval_file_tag(report, options);
  std::vector<std::string> wrote;
  if (!report.hypotheses.empty()) {
    const auto name = std::filesystem::path(options.split).filename().string();
    const auto path = (dir / ("hyp." + name + precision_suffix(options) + ".txt")).string();
    std::ofstream hyp(path);
    for (const auto& h : report.hypotheses) hyp << h << '\n';
    wrote.push_back(path);
  }
  if (!report.items.empty()) {
    const auto path = (dir / ("eval." + tag + ".items.tsv")).string();
    write_item_table(path, report.item_columns, report.items);
    wrote.push_back(path);
  }
  if (!report.position_loss.empty()) {
    const auto stem = (dir / ("eval." + tag + ".positions")).string();
    write_positions(stem, run_dir, report, options);
    wrote.push_back(stem + ".csv and .svg");
  }
  nlohmann::ordered_json json = {
      {"split", options.split}, {"checkpoint", options.checkpoint}, {"precision", options.precision}};
  if (!options.overrides.empty()) json["set"] = options.overrides;
  json.update(report.fields);
  const auto path = (dir / ("eval." + tag + ".json")).string();
  std::ofstream(path) << json.dump() << '\n';
  wrote.push_back(path);
  return wrote;
}

double read_report_number(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains(key) || !json[key].is_number())
    return std::numeric_limits<double>::quiet_NaN();
  return json[key].get<double>();
}

}  // namespace ropelab
