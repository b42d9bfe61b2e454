#include "ropelab/train/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "ropelab/run/metrics_log.h"

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
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

}  // namespace

void write_line_plot_svg(const std::string& path, const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<Series>& series) {
  const double W = 720, H = 440, left = 70, right = 160, top = 40, bottom = 50;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad, y1 += pad;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (W - left - right); };
  auto py = [&](double y) { return H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom); };
  static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title)
      << "</text>\n";
  for (int i = 0; i <= 5; ++i) {  // grid and ticks
    const double fx = x0 + (x1 - x0) * i / 5.0, fy = y0 + (y1 - y0) * i / 5.0;
    svg << "<line x1=\"" << px(fx) << "\" y1=\"" << top << "\" x2=\"" << px(fx) << "\" y2=\"" << H - bottom
        << "\" stroke=\"#eee\"/><text x=\"" << px(fx) << "\" y=\"" << H - bottom + 16 << "\" text-anchor=\"middle\">"
        << number(fx) << "</text>\n<line x1=\"" << left << "\" y1=\"" << py(fy) << "\" x2=\"" << W - right << "\" y2=\""
        << py(fy) << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << py(fy) + 4
        << "\" text-anchor=\"end\">" << number(fy) << "</text>\n";
  }
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << W - left - right << "\" height=\""
      << H - top - bottom << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << left + (W - left - right) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">"
      << escape(x_label) << "</text>\n<text transform=\"translate(18," << top + (H - top - bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(y_label) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* colour = kColours[k % 10];
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) svg << px(s.x[i]) << ',' << py(s.y[i]) << ' ';
    svg << "\"/>\n<line x1=\"" << W - right + 12 << "\" y1=\"" << top + 14 + 18 * k << "\" x2=\"" << W - right + 34
        << "\" y2=\"" << top + 14 + 18 * k << "\" stroke=\"" << colour << "\" stroke-width=\"3\"/><text x=\""
        << W - right + 40 << "\" y=\"" << top + 18 + 18 * k << "\">" << escape(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  std::ofstream out(path);
  out << svg.str();
  if (!out) throw std::runtime_error(path + ": cannot write plot");
}

void write_loss_curve(const std::string& metrics_jsonl, const std::string& svg_path) {
  Series train{"train loss", {}, {}}, valid{"valid loss", {}, {}};
  for (const auto& e : read_metrics(metrics_jsonl)) {
    Series* s = e.event == "train" ? &train : e.event == "valid" ? &valid : nullptr;
    if (!s) continue;
    s->x.push_back(static_cast<double>(e.step));
    s->y.push_back(e.get("loss"));
  }
  write_line_plot_svg(svg_path, "loss (label-smoothed cross-entropy per target token)", "step", "loss", {train, valid});
}

}  // namespace ropelab
