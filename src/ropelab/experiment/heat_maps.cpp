#include "ropelab/experiment/heat_maps.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "ropelab/util/svg_plot.h"

namespace ropelab {

namespace {

/// One measure's heat map for `variant`: cell (depth d, length l) pooled over its runs'
/// accuracy cells of column MEASURE@l, whose d-th cell is that depth's.
void write_one(const PlotInputs& in, const std::string& measure, const std::vector<int64_t>& lengths,
               const std::vector<double>& depths, const std::string& variant) {
  std::vector<std::vector<double>> values(depths.size(), std::vector<double>(lengths.size()));
  bool any = false;
  for (size_t d = 0; d < depths.size(); ++d)
    for (size_t l = 0; l < lengths.size(); ++l) {
      double correct = 0, documents = 0;
      for (const auto& r : in.results) {
        const auto it = r.accuracy_cells.find(measure + "@" + std::to_string(lengths[l]));
        if (r.variant != variant || it == r.accuracy_cells.end() || it->second.size() != depths.size()) continue;
        correct += static_cast<double>(it->second[d].first), documents += static_cast<double>(it->second[d].second);
      }
      values[d][l] = documents > 0 ? correct / documents : std::numeric_limits<double>::quiet_NaN();
      any = any || documents > 0;
    }
  if (!any) return;
  std::vector<std::string> columns, rows;
  for (auto l : lengths) columns.push_back(std::to_string(l));
  for (auto d : depths) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", d);
    rows.push_back(depths.size() == 1 && measure != "passkey" ? std::string("all") : std::string(text));
  }
  HeatMapOptions options;
  std::string label = variant;
  for (const auto& r : in.results)
    if (r.variant == variant && !r.label.empty()) label = r.label;
  options.title = label + ": " + measure + " accuracy, pooled over seeds";
  options.x_label = "document length (characters)";
  options.y_label = depths.size() == 1 && measure != "passkey" ? "" : "depth of the asked needle";
  options.caption = in.experiment + ": " + in.command;
  const auto path = in.layout.heat_map_svg(measure, variant);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_heat_map(path, columns, rows, values, options);
}

}  // namespace

void write_heat_maps(const PlotInputs& in, const TestEvaluations& asked) {
  for (const auto& variant : in.order) {
    if (asked.passkey) write_one(in, "passkey", asked.passkey->lengths, asked.passkey->depths, variant);
    for (const auto& task : asked.retrieval_tasks) {
      auto grid = asked.retrieval_grid;
      grid.task.task = parse_retrieval_task(task);
      write_one(in, task, grid.lengths, grid.cell_depths(), variant);
    }
  }
}

}  // namespace ropelab
