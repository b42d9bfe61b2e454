#include "ropelab/report/run_plots.h"

#include <cstdio>
#include <filesystem>
#include <limits>

#include "ropelab/eval/passkey_eval.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/util/svg_plot.h"

namespace ropelab {

void write_loss_curve(const std::string& metrics_jsonl, const std::string& svg_path) {
  Series train{"train loss", {}, {}, {}}, valid{"valid loss", {}, {}, {}};
  for (const auto& e : read_metrics(metrics_jsonl)) {
    Series* s = e.event == "train" ? &train : e.event == "valid" ? &valid : nullptr;
    if (!s) continue;
    s->x.push_back(static_cast<double>(e.step));
    s->y.push_back(e.get("loss"));
  }
  PlotOptions options;
  options.title = "loss (label-smoothed cross-entropy per target token)";
  options.x_label = "step";
  options.y_label = "loss";
  write_line_plot(svg_path, {train, valid}, options);
}

void write_run_loss_curve(const std::string& run_dir) {
  const RunPaths paths(run_dir);
  if (std::filesystem::exists(paths.trained)) write_loss_curve(paths.metrics, paths.loss_plot());
}

void write_position_loss_plot(const std::string& svg_path, const std::string& run_dir, const EvalReport& report,
                              const std::string& caption) {
  Series curve;
  curve.name = run_dir;
  for (size_t j = 0; j < report.position_loss.size(); ++j)
    if (report.position_tokens[j] > 0)
      curve.x.push_back(static_cast<double>(j)), curve.y.push_back(report.position_loss[j]);
  PlotOptions plot;
  plot.title = run_dir + ": loss by position (" + report.file_tag + ")";
  plot.x_label = "position in the window";
  plot.y_label = "mean loss (nats per token)";
  plot.caption = caption;
  write_line_plot(svg_path, {curve}, plot);
}

void write_passkey_heat_map(const std::string& svg_path, const std::vector<PasskeyCell>& cells, const PasskeyGrid& grid,
                            const std::string& title, const std::string& caption) {
  std::vector<std::string> columns, rows;
  for (auto l : grid.lengths) columns.push_back(std::to_string(l));
  std::vector<std::vector<double>> values(
      grid.depths.size(), std::vector<double>(grid.lengths.size(), std::numeric_limits<double>::quiet_NaN()));
  for (size_t d = 0; d < grid.depths.size(); ++d) {
    char label[32];
    std::snprintf(label, sizeof label, "%g%%", 100 * grid.depths[d]);
    rows.push_back(label);
  }
  for (size_t l = 0; l < grid.lengths.size(); ++l)
    for (size_t d = 0; d < grid.depths.size(); ++d) {
      const auto& c = cells.at(l * grid.depths.size() + d);
      if (c.error.empty()) values[d][l] = c.accuracy();
    }
  HeatMapOptions plot;
  plot.title = title;
  plot.x_label = "document length (characters)";
  plot.y_label = "depth of the key";
  plot.caption = caption;
  write_heat_map(svg_path, columns, rows, values, plot);
}

void write_passkey_results(const RunPaths::PasskeyFiles& files, const std::vector<PasskeyCell>& cells,
                           const PasskeyGrid& grid, const std::string& title, const std::string& caption,
                           std::ostream& out, std::ostream& log) {
  write_passkey_table(files.csv, cells);
  write_passkey_heat_map(files.svg, cells, grid, title, caption);
  write_passkey_summary(files.json, cells, grid.seed);
  remove_passkey_partial(files.partial, log);
  out << format_passkey_cells(cells) << "wrote " << files.csv << ", " << files.json << " and " << files.svg
      << std::endl;
}

}  // namespace ropelab
