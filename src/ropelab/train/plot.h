#pragma once
/// Line plots as standalone SVG (no plotting library needed): loss curves of a run,
/// validation curves of an ablation.

#include <string>
#include <vector>

namespace ropelab {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

/// Writes an SVG line plot of `series` (each its own colour, with a legend) to `path`.
void write_line_plot_svg(const std::string& path, const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<Series>& series);

/// Reads RUN/metrics.jsonl and plots training and validation loss against the step.
void write_loss_curve(const std::string& metrics_jsonl, const std::string& svg_path);

}  // namespace ropelab
