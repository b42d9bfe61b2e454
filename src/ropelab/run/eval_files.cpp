#include "ropelab/run/eval_files.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ropelab/metrics/paired_items.h"
#include "ropelab/util/files.h"

namespace ropelab {

namespace {

std::string precision_suffix(const EvalFileOptions& options) {
  return options.precision == Precision::fp32 ? "" : "." + to_string(options.precision);
}

}  // namespace

std::string evaluation_tag(const std::vector<std::string>& overrides) {
  if (overrides.empty()) return "";
  std::string tag = ".set";
  for (const auto& o : overrides) {
    tag += '_';
    for (char c : o.substr(o.find('=') + 1))
      tag += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ? c : '-';
  }
  return tag;
}

EvalFilePaths eval_file_paths(const std::string& run_dir, const std::string& tag) {
  const auto stem = (std::filesystem::path(run_dir) / ("eval." + tag)).string();
  return {stem + ".json", stem + ".items.tsv", stem + ".positions.csv", stem + ".positions.svg"};
}

std::string hypotheses_path(const std::string& run_dir, const std::string& split, const std::string& suffix) {
  const auto name = std::filesystem::path(split).filename().string();
  return (std::filesystem::path(run_dir) / ("hyp." + name + suffix + ".txt")).string();
}

std::string eval_file_tag(const EvalReport& report, const EvalFileOptions& options) {
  return report.file_tag + evaluation_tag(options.overrides) + precision_suffix(options);
}

std::string eval_positions_plot(const std::string& run_dir, const EvalReport& report, const EvalFileOptions& options) {
  return eval_file_paths(run_dir, eval_file_tag(report, options)).positions_svg;
}

std::vector<std::string> write_eval_files(const std::string& run_dir, const EvalReport& report,
                                          const EvalFileOptions& options) {
  const auto files = eval_file_paths(run_dir, eval_file_tag(report, options));
  std::vector<std::string> wrote;
  if (!report.hypotheses.empty()) {
    const auto path =
        hypotheses_path(run_dir, options.split, evaluation_tag(options.overrides) + precision_suffix(options));
    std::string text;
    for (const auto& h : report.hypotheses) text += h + '\n';
    write_file_atomically(path, text, "hypotheses");
    wrote.push_back(path);
  }
  if (!report.items.empty()) {
    const auto& path = files.items;
    write_item_table(path, report.item_columns, report.items);
    wrote.push_back(path);
  }
  if (!report.position_loss.empty()) {  // position, mean loss, tokens
    const auto& path = files.positions_csv;
    std::vector<std::vector<double>> rows;
    for (size_t j = 0; j < report.position_loss.size(); ++j)
      rows.push_back({static_cast<double>(j), report.position_loss[j], report.position_tokens[j]});
    write_item_table(path, {"position", "mean_loss", "tokens"}, rows);
    wrote.push_back(path);
  }
  nlohmann::ordered_json json = {
      {"split", options.split}, {"checkpoint", options.checkpoint}, {"precision", to_string(options.precision)}};
  if (!options.overrides.empty()) json["set"] = options.overrides;
  json.update(report.fields);
  write_file_atomically(files.json, json.dump() + '\n', "evaluation report");
  wrote.push_back(files.json);
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
