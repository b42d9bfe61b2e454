#include "ropelab/run/eval_files.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "ropelab/eval/paired_items.h"

namespace ropelab {

namespace {

std::string precision_suffix(const EvalFileOptions& options) {
  return options.precision == "fp32" ? "" : "." + options.precision;
}

/// RUN/eval.<tag>.positions: the stem of the table and its plot.
std::string positions_stem(const std::string& run_dir, const EvalReport& report, const EvalFileOptions& options) {
  return (std::filesystem::path(run_dir) / ("eval." + eval_file_tag(report, options) + ".positions")).string();
}

}  // namespace

std::string eval_file_tag(const EvalReport& report, const EvalFileOptions& options) {
  return report.file_tag + evaluation_tag(options.overrides) + precision_suffix(options);
}

std::string eval_positions_plot(const std::string& run_dir, const EvalReport& report, const EvalFileOptions& options) {
  return positions_stem(run_dir, report, options) + ".svg";
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
  if (!report.position_loss.empty()) {  // position, mean loss, tokens
    const auto path = positions_stem(run_dir, report, options) + ".csv";
    std::vector<std::vector<double>> rows;
    for (size_t j = 0; j < report.position_loss.size(); ++j)
      rows.push_back({static_cast<double>(j), report.position_loss[j], report.position_tokens[j]});
    write_item_table(path, {"position", "mean_loss", "tokens"}, rows);
    wrote.push_back(path);
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
