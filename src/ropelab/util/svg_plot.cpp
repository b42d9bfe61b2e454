#include "ropelab/util/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "ropelab/util/files.h"

namespace ropelab {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::abs(v) < 1e-12) v = 0;  // no "-0" or "1e-17" for a tick at zero
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

/// `name` split at its top-level commas into (key, value) pairs; empty if some part has no '='.
std::vector<std::pair<std::string, std::string>> key_values(const std::string& name) {
  std::vector<std::pair<std::string, std::string>> pairs;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    const char c = i < name.size() ? name[i] : ',';
    if (c == '{' || c == '[' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == ')') --depth;
    if (c != ',' || depth > 0) continue;
    const auto part = name.substr(start, i - start);
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0) return {};
    pairs.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    start = i + 1;
  }
  return pairs;
}

/// "{type: X}" -> "X", "{type: X, rest}" -> "X (rest)"; other values as they are.
std::string short_value(const std::string& value) {
  const std::string lead = "{type: ";
  if (value.rfind(lead, 0) != 0 || value.back() != '}') return value;
  const auto inner = value.substr(lead.size(), value.size() - lead.size() - 1);
  const auto comma = inner.find(", ");
  if (comma == std::string::npos) return inner;
  return inner.substr(0, comma) + " (" + inner.substr(comma + 2) + ")";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 5.0, 10.0})  // the step closest to `target` ticks
    if (std::abs((hi - lo) / (m * power) - target) < std::abs((hi - lo) / step - target)) step = m * power;
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; ++k) ticks.push_back(k * step);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> all, decades;
  if (!(lo > 0) || !(hi >= lo)) return all;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9)) continue;
      all.push_back(v);
      if (m == 1.0) decades.push_back(v);
    }
  if (decades.size() >= 3) return decades;
  // a range narrower than 1-2-5 steps: round linear steps, so that the axis has numbers at all
  return all.size() >= 2 ? all : nice_ticks(lo, hi, 4);
}

std::pair<std::string, std::vector<std::string>> legend_labels(const std::vector<std::string>& names) {
  std::vector<std::vector<std::pair<std::string, std::string>>> parsed;
  for (const auto& n : names) {
    parsed.push_back(key_values(n));
    // every name must have the same keys in the same order
    if (parsed.back().empty() || parsed.back().size() != parsed.front().size()) return {"", names};
    for (size_t k = 0; k < parsed.back().size(); ++k)
      if (parsed.back()[k].first != parsed.front()[k].first) return {"", names};
  }
  if (parsed.empty()) return {"", names};
  std::vector<size_t> varying;
  for (size_t k = 0; k < parsed.front().size(); ++k)
    for (const auto& p : parsed)
      if (p[k].second != parsed.front()[k].second) {
        varying.push_back(k);
        break;
      }
  if (varying.empty()) return {"", names};
  std::string title;
  for (size_t k : varying) title += (title.empty() ? "" : ", ") + parsed.front()[k].first;
  std::vector<std::string> labels;
  for (const auto& p : parsed) {
    std::string label;
    for (size_t k : varying) label += (label.empty() ? "" : ", ") + short_value(p[k].second);
    labels.push_back(label);
  }
  return {title, labels};
}

namespace {

/// The plotted ranges of some panels' series (log10 on a log axis), with margins.
struct Axes {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
};

bool usable_point(const PlotOptions& o, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!o.log_x || x > 0) && (!o.log_y || y > 0);
}

bool has_mark(const PlotOptions& o) { return std::isfinite(o.x_mark) && (!o.log_x || o.x_mark > 0); }

Axes axes_of(const std::vector<const std::vector<Series>*>& panels, const PlotOptions& o) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto* series : panels)
    for (const auto& s : *series)
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!usable_point(o, s.x[i], s.y[i])) continue;
        const double sd = i < s.spread.size() && std::isfinite(s.spread[i]) ? s.spread[i] : 0.0;
        x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
        y0 = std::min(y0, s.y[i] - sd), y1 = std::max(y1, s.y[i] + sd);
      }
  if (!std::isfinite(x0)) x0 = 1, x1 = 2, y0 = 1, y1 = 2;
  if (has_mark(o)) x0 = std::min(x0, o.x_mark), x1 = std::max(x1, o.x_mark);
  if (o.log_y && y0 <= 0) y0 = y1 / 10;
  if (x1 == x0) x1 = o.log_x ? x0 * 2 : x0 + 1;
  if (y1 == y0) y1 = o.log_y ? y0 * 2 : y0 + 1;
  auto tx = [&](double x) { return o.log_x ? std::log10(x) : x; };
  auto ty = [&](double y) { return o.log_y ? std::log10(y) : y; };
  Axes a{tx(x0), tx(x1), ty(y0), ty(y1)};
  const double pad = 0.05 * (a.y1 - a.y0);
  a.y0 -= pad, a.y1 += pad;
  if (o.log_x) {
    const double xpad = 0.03 * (a.x1 - a.x0);
    a.x0 -= xpad, a.x1 += xpad;
  }
  return a;
}

/// Where a panel sits: its plot area [left, right] x [top, bottom], its legend to the right.
struct Frame {
  double left, right, top, bottom;
};

/// The legend's title and labels of `series` (legend_labels, or the options' title).
std::pair<std::string, std::vector<std::string>> legend_of(const std::vector<Series>& series, const PlotOptions& o) {
  std::vector<std::string> names;
  for (const auto& s : series) names.push_back(s.name);
  auto legend = legend_labels(names);
  if (legend.first.empty()) legend.first = o.legend_title;
  return legend;
}

/// The legend's width: about 7 px per character at 12 px.
double legend_width(const std::pair<std::string, std::vector<std::string>>& legend) {
  size_t longest = legend.first.size();
  for (const auto& l : legend.second) longest = std::max(longest, l.size() + 6);
  return std::max(120.0, 30.0 + 7.0 * static_cast<double>(longest));
}

/// One panel: grid, ticks, frame, axis labels, the mark, the series and their legend.
void draw_panel(std::ostringstream& svg, const std::vector<Series>& series,
                const std::pair<std::string, std::vector<std::string>>& legend, const PlotOptions& options,
                const Axes& axes, const Frame& f) {
  const auto& [legend_title, labels] = legend;
  auto tx = [&](double x) { return options.log_x ? std::log10(x) : x; };
  auto ty = [&](double y) { return options.log_y ? std::log10(y) : y; };
  auto usable = [&](double x, double y) { return usable_point(options, x, y); };
  auto px = [&](double x) { return f.left + (tx(x) - axes.x0) / (axes.x1 - axes.x0) * (f.right - f.left); };
  auto py = [&](double y) { return f.bottom - (ty(y) - axes.y0) / (axes.y1 - axes.y0) * (f.bottom - f.top); };
  static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const auto xticks =
      options.log_x ? log_ticks(std::pow(10.0, axes.x0), std::pow(10.0, axes.x1)) : nice_ticks(axes.x0, axes.x1);
  const auto yticks =
      options.log_y ? log_ticks(std::pow(10.0, axes.y0), std::pow(10.0, axes.y1)) : nice_ticks(axes.y0, axes.y1);
  for (double fx : xticks)
    svg << "<line x1=\"" << px(fx) << "\" y1=\"" << f.top << "\" x2=\"" << px(fx) << "\" y2=\"" << f.bottom
        << "\" stroke=\"#eee\"/><text x=\"" << px(fx) << "\" y=\"" << f.bottom + 16 << "\" text-anchor=\"middle\">"
        << number(fx) << "</text>\n";
  for (double fy : yticks)
    svg << "<line x1=\"" << f.left << "\" y1=\"" << py(fy) << "\" x2=\"" << f.right << "\" y2=\"" << py(fy)
        << "\" stroke=\"#eee\"/><text x=\"" << f.left - 6 << "\" y=\"" << py(fy) + 4 << "\" text-anchor=\"end\">"
        << number(fy) << "</text>\n";
  svg << "<rect x=\"" << f.left << "\" y=\"" << f.top << "\" width=\"" << f.right - f.left << "\" height=\""
      << f.bottom - f.top << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << (f.left + f.right) / 2 << "\" y=\"" << f.bottom + 38 << "\" text-anchor=\"middle\">"
      << escape(options.x_label) << (options.log_x ? " (log scale)" : "") << "</text>\n<text transform=\"translate("
      << f.left - 52 << "," << (f.top + f.bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(options.y_label) << (options.log_y ? " (log scale)" : "") << "</text>\n";
  if (has_mark(options))
    svg << "<line class=\"mark\" x1=\"" << px(options.x_mark) << "\" y1=\"" << f.top << "\" x2=\"" << px(options.x_mark)
        << "\" y2=\"" << f.bottom
        << "\" stroke=\"#555\" stroke-dasharray=\"5,4\"/><text x=\""
        // its label right of the line, or left of it near the frame's right edge (the legend's side)
        << (px(options.x_mark) > f.left + 0.7 * (f.right - f.left)
                ? std::to_string(px(options.x_mark) - 4) + "\" text-anchor=\"end"
                : std::to_string(px(options.x_mark) + 4))
        << "\" y=\"" << f.top + 14 << "\" font-size=\"11\" fill=\"#555\">" << escape(options.x_mark_label)
        << "</text>\n";
  if (!legend_title.empty())
    svg << "<text x=\"" << f.right + 12 << "\" y=\"" << f.top + 4 << "\" font-weight=\"bold\">" << escape(legend_title)
        << "</text>\n";
  const double legend_top = f.top + (legend_title.empty() ? 0 : 18);
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* colour = kColours[k % 10];
    // past ten series the colours repeat, each round with its own dashes
    static const char* kDashes[] = {"", " stroke-dasharray=\"7,4\"", " stroke-dasharray=\"2,3\""};
    const char* dash = kDashes[(k / 10) % 3];
    if (!s.spread.empty()) {  // the band: y + sd along the points, then y - sd back
      std::vector<size_t> points;
      for (size_t i = 0; i < s.x.size(); ++i)
        if (usable(s.x[i], s.y[i]) && i < s.spread.size() && std::isfinite(s.spread[i]) &&
            (!options.log_y || s.y[i] - s.spread[i] > 0))
          points.push_back(i);
      if (!points.empty()) {
        svg << "<polygon class=\"band\" fill=\"" << colour << "\" fill-opacity=\"0.15\" stroke=\"none\" points=\"";
        for (size_t i : points) svg << px(s.x[i]) << ',' << py(s.y[i] + s.spread[i]) << ' ';
        for (auto it = points.rbegin(); it != points.rend(); ++it)
          svg << px(s.x[*it]) << ',' << py(s.y[*it] - s.spread[*it]) << ' ';
        svg << "\"/>\n";
      }
    }
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\"" << dash << " stroke-width=\"1.8\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i)
      if (usable(s.x[i], s.y[i])) svg << px(s.x[i]) << ',' << py(s.y[i]) << ' ';
    svg << "\"/>\n";
    if (options.markers)
      for (size_t i = 0; i < s.x.size(); ++i)
        if (usable(s.x[i], s.y[i]))
          svg << "<circle cx=\"" << px(s.x[i]) << "\" cy=\"" << py(s.y[i]) << "\" r=\"3\" fill=\"" << colour
              << "\"/>\n";
    svg << "<line x1=\"" << f.right + 12 << "\" y1=\"" << legend_top + 14 + 18 * k << "\" x2=\"" << f.right + 34
        << "\" y2=\"" << legend_top + 14 + 18 * k << "\" stroke=\"" << colour << "\"" << dash
        << " stroke-width=\"3\"/><text x=\"" << f.right + 40 << "\" y=\"" << legend_top + 18 + 18 * k << "\">"
        << escape(labels[k]) << "</text>\n";
  }
}

/// Writes a W x H SVG to `path`: white ground, `title` centred on top, `body`, and
/// `caption` at the bottom from x = `caption_x`.
void write_svg(const std::string& path, double W, double H, const std::string& title, const std::string& caption,
               double caption_x, const std::string& body) {
  // wide enough for the title (15 px) and the caption (11 px), at about 0.55 em a character
  W = std::max(
      {W, 8.5 * static_cast<double>(title.size()) + 20, caption_x + 6.2 * static_cast<double>(caption.size()) + 10});
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title) << "</text>\n"
      << body;
  if (!caption.empty())
    svg << "<text x=\"" << caption_x << "\" y=\"" << H - 10 << "\" font-size=\"11\" fill=\"#555\">" << escape(caption)
        << "</text>\n";
  svg << "</svg>\n";
  write_file_atomically(path, svg.str(), "plot");
}

}  // namespace

void write_line_plot(const std::string& path, const std::vector<Series>& series, const PlotOptions& options) {
  const auto legend = legend_of(series, options);
  const double left = 70, right = legend_width(legend), top = 40, bottom = 50,
               caption_h = options.caption.empty() ? 0 : 22;
  // tall enough for the legend: a title and 18 px per series
  const double W = 560 + right,
               H = std::max(440.0, top + 18.0 * static_cast<double>(series.size() + 2) + bottom) + caption_h;
  std::ostringstream body;
  draw_panel(body, series, legend, options, axes_of({&series}, options),
             {left, W - right, top, H - bottom - caption_h});
  write_svg(path, W, H, options.title, options.caption, 70, body.str());
}

void write_line_panels(const std::string& path, const std::vector<Panel>& panels, const PlotOptions& options,
                       int columns) {
  if (panels.empty()) return;
  std::vector<const std::vector<Series>*> all;
  std::vector<std::pair<std::string, std::vector<std::string>>> legends;
  double right = 0;
  size_t most = 0;
  for (const auto& p : panels) {
    all.push_back(&p.series);
    legends.push_back(legend_of(p.series, options));
    right = std::max(right, legend_width(legends.back()));
    most = std::max(most, p.series.size());
  }
  const auto axes = axes_of(all, options);  // shared: the panels compare at a glance
  const double left = 70, plot_w = 400, top = 40, panel_title = 20, bottom = 50;
  const double plot_h = std::max(260.0, 18.0 * static_cast<double>(most + 2));
  const double cell_w = left + plot_w + right, cell_h = panel_title + plot_h + bottom;
  const auto cols = static_cast<size_t>(std::max(1, columns));
  const size_t rows = (panels.size() + cols - 1) / cols;
  const double caption_h = options.caption.empty() ? 0 : 22;
  const double W = cell_w * static_cast<double>(std::min(cols, panels.size())),
               H = top + cell_h * static_cast<double>(rows) + caption_h;
  std::ostringstream body;
  for (size_t k = 0; k < panels.size(); ++k) {
    const double ox = cell_w * static_cast<double>(k % cols), oy = top + cell_h * static_cast<double>(k / cols);
    const Frame f{ox + left, ox + left + plot_w, oy + panel_title, oy + panel_title + plot_h};
    body << "<text class=\"panel\" x=\"" << (f.left + f.right) / 2 << "\" y=\"" << oy + 14
         << "\" text-anchor=\"middle\" font-weight=\"bold\">" << escape(panels[k].title) << "</text>\n";
    draw_panel(body, panels[k].series, legends[k], options, axes, f);
  }
  write_svg(path, W, H, options.title, options.caption, 70, body.str());
}

void write_heat_map(const std::string& path, const std::vector<std::string>& columns,
                    const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values,
                    const HeatMapOptions& options) {
  if (values.size() != rows.size())
    throw std::invalid_argument(path + ": " + std::to_string(values.size()) + " rows of values for " +
                                std::to_string(rows.size()) + " row labels");
  const int cell_w = 64, cell_h = 30, left = 90, top = 44, bottom = 70;
  const int W = std::max(420, left + cell_w * static_cast<int>(columns.size()) + 30);
  const int H = top + cell_h * static_cast<int>(rows.size()) + bottom;
  std::ostringstream svg;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (values[r].size() != columns.size())
      throw std::invalid_argument(path + ": row " + std::to_string(r) + " has " + std::to_string(values[r].size()) +
                                  " values for " + std::to_string(columns.size()) + " columns");
    const int y = top + cell_h * static_cast<int>(r);
    svg << "<text x=\"" << left - 8 << "\" y=\"" << y + cell_h / 2 + 4 << "\" text-anchor=\"end\">" << escape(rows[r])
        << "</text>\n";
    for (size_t c = 0; c < columns.size(); ++c) {
      const double v = values[r][c];
      const int x = left + cell_w * static_cast<int>(c);
      char fill[16];
      if (std::isnan(v)) {
        std::snprintf(fill, sizeof fill, "#cccccc");
      } else {  // white (0) to #08306b (1)
        const double t = std::clamp(v, 0.0, 1.0);
        std::snprintf(fill, sizeof fill, "#%02x%02x%02x", static_cast<int>(255 - t * (255 - 8)),
                      static_cast<int>(255 - t * (255 - 48)), static_cast<int>(255 - t * (255 - 107)));
      }
      svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w << "\" height=\"" << cell_h << "\" fill=\""
          << fill << "\" stroke=\"white\"/>\n<text x=\"" << x + cell_w / 2 << "\" y=\"" << y + cell_h / 2 + 4
          << "\" text-anchor=\"middle\" fill=\"" << (!std::isnan(v) && v > 0.55 ? "white" : "black") << "\">"
          << (std::isnan(v) ? std::string("n/a") : number(v)) << "</text>\n";
    }
  }
  const int axis_y = top + cell_h * static_cast<int>(rows.size());
  for (size_t c = 0; c < columns.size(); ++c)
    svg << "<text x=\"" << left + cell_w * static_cast<int>(c) + cell_w / 2 << "\" y=\"" << axis_y + 16
        << "\" text-anchor=\"middle\">" << escape(columns[c]) << "</text>\n";
  svg << "<text x=\"" << left + cell_w * static_cast<int>(columns.size()) / 2 << "\" y=\"" << axis_y + 36
      << "\" text-anchor=\"middle\">" << escape(options.x_label) << "</text>\n<text transform=\"translate(16,"
      << top + cell_h * static_cast<int>(rows.size()) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(options.y_label) << "</text>\n";
  write_svg(path, W, H, options.title, options.caption, 10, svg.str());
}

}  // namespace ropelab
