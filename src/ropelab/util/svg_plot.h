#pragma once
/// Line plots and heat maps as standalone SVG (no plotting library needed): loss curves of a
/// run, validation curves of an ablation, passkey grids. Ticks fall on round numbers (1, 2 or 5 times a power
/// of ten), axes can be logarithmic, a series can carry a shaded band (mean ± sd over
/// seeds), the legend names what tells the series apart, and a caption can say which
/// command made the plot.

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ropelab {

struct Series {
  std::string name;
  std::vector<double> x, y;
  /// Optional: the half-width of a shaded band around y at each point (a standard
  /// deviation); empty for none, else one value per point (NaN: no band there).
  std::vector<double> spread;
};

struct PlotOptions {
  std::string title, x_label, y_label;
  std::string caption;  // below the plot, e.g. the command that made it
  bool log_x = false, log_y = false;
  bool markers = false;  // a dot at every point (for few points per series)
  /// The legend's title when the series names are labels already (not `key=value`).
  std::string legend_title;
  /// A dashed vertical line at this x with `x_mark_label` beside it (the training length,
  /// say); NaN: none.
  double x_mark = std::numeric_limits<double>::quiet_NaN();
  std::string x_mark_label;
};

/// Writes an SVG line plot of `series` (each its own colour, with a legend) to `path`.
/// Series names of the form `key=value,key=value` are shortened in the legend to the keys
/// whose values differ between the series (legend_labels).
void write_line_plot(const std::string& path, const std::vector<Series>& series, const PlotOptions& options);

/// One panel of a figure of small multiples: its title and its series.
struct Panel {
  std::string title;
  std::vector<Series> series;
};

/// Writes panels side by side, `columns` to a row, with shared axes (so that the panels
/// compare at a glance), each with its own legend; `options` apply to every panel.
void write_line_panels(const std::string& path, const std::vector<Panel>& panels, const PlotOptions& options,
                       int columns = 2);

struct HeatMapOptions {
  std::string title, x_label, y_label, caption;
};

/// Writes an SVG heat map: values[row][column] in [0, 1] (NaN: no value, drawn grey), a
/// cell per value shaded from white (0) to dark blue (1) with the value printed in it,
/// `columns` labelling the x axis and `rows` the y axis (first row at the top).
void write_heat_map(const std::string& path, const std::vector<std::string>& columns,
                    const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values,
                    const HeatMapOptions& options);

/// Round tick positions in [lo, hi]: multiples of 1, 2 or 5 times a power of ten, the step
/// that gives closest to `target` ticks.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

/// Tick positions for a logarithmic axis over [lo, hi] (lo > 0): 1, 2 and 5 times the
/// powers of ten, thinned to the powers of ten alone when those give at least three; a range
/// holding fewer than two of them gets nice_ticks' round linear steps.
std::vector<double> log_ticks(double lo, double hi);

/// The legend of series named `key=value,...` (top-level commas; a value may hold braces):
/// the keys whose values differ between the names, joined as the legend's title, and each
/// name's values of those keys as its label; a mapping value led by its type reads as the
/// type and the rest ("{type: rotary, nope_every: 3}" -> "rotary (nope_every: 3)"). Names
/// of another form are kept as they are, with an empty title.
std::pair<std::string, std::vector<std::string>> legend_labels(const std::vector<std::string>& names);

}  // namespace ropelab
