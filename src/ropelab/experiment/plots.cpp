#include "ropelab/experiment/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/seed_stats.h"
#include "ropelab/util/svg_plot.h"

namespace ropelab {

using seed_stats::add_point;
using seed_stats::finite_values;

namespace {

/// Lines by panel of a figure: (order of the family, its title) -> lines.
using Families = std::map<std::pair<int, std::string>, std::vector<Series>>;

/// Each variant's label: the runs' own (the experiment file's, else the position registry's)
/// where they tell every variant apart, else its values of the grid keys that differ
/// (legend_labels), with their keys as the legend's title.
std::pair<std::string, std::map<std::string, std::string>> variant_labels(const PlotInputs& in) {
  std::map<std::string, std::string> own;
  for (const auto& r : in.results) own.emplace(r.variant, r.label);
  std::set<std::string> distinct;
  for (const auto& v : in.order)
    if (own.count(v) && !own.at(v).empty()) distinct.insert(own.at(v));
  if (distinct.size() == in.order.size()) return {"", own};
  const auto [title, labels] = legend_labels(in.order);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < in.order.size(); ++i) out[in.order[i]] = labels[i];
  return {title, out};
}

/// The panel of a variant's line: its kind of position information, and RoPE scaling at
/// evaluation in a panel of its own (it multiplies the rotary lines).
std::pair<int, std::string> family_of(PositionKind kind, bool scaled) {
  switch (kind) {
    case PositionKind::none:
    case PositionKind::additive:
      return {0, "absolute (added) and none"};
    case PositionKind::rotary:
      return scaled ? std::make_pair(2, std::string("rotations, RoPE scaling at evaluation"))
                    : std::make_pair(1, std::string("rotations"));
    case PositionKind::bias:
      return {3, "logit biases"};
  }
  return {4, "other"};
}

PositionKind kind_of(const PlotInputs& in, const std::string& variant) {
  for (const auto& r : in.results)
    if (r.variant == variant) return r.position;
  return PositionKind::none;
}

/// Writes the families' lines, each family in panels of at most kLinesPerPanel lines
/// ("rotations (1/2)"); one panel alone is a plain plot. Nothing without lines.
void write_families(const std::string& path, Families families, const PlotOptions& plot) {
  std::vector<Panel> panels;
  for (auto& [family, lines] : families) {
    const size_t parts = (lines.size() + kLinesPerPanel - 1) / kLinesPerPanel;
    for (size_t p = 0; p < parts; ++p) {
      Panel panel{family.second + (parts > 1 ? " (" + std::to_string(p + 1) + "/" + std::to_string(parts) + ")" : ""),
                  {}};
      for (size_t k = p * kLinesPerPanel; k < std::min(lines.size(), (p + 1) * kLinesPerPanel); ++k)
        panel.series.push_back(std::move(lines[k]));
      panels.push_back(std::move(panel));
    }
  }
  if (panels.empty()) return;
  if (panels.size() == 1) return write_line_plot(path, panels[0].series, plot);
  write_line_panels(path, panels, plot);
}

/// The shortest training context of the runs (the grid's, where fine-tunes train longer),
/// marked on the plots against length; NaN without one.
void mark_training_context(const std::vector<RunResult>& results, PlotOptions& plot) {
  int64_t context = 0;
  for (const auto& r : results)
    if (r.context > 0) context = context == 0 ? r.context : std::min(context, r.context);
  if (context == 0) return;
  plot.x_mark = static_cast<double>(context);
  plot.x_mark_label = "trained at " + std::to_string(context);
}

PlotOptions titled(const PlotInputs& in, const std::string& what, const std::string& x, const std::string& y,
                   const std::string& legend_title) {
  PlotOptions plot;
  plot.title = in.experiment + ": " + what;
  plot.x_label = x, plot.y_label = y;
  plot.caption = in.command;
  plot.legend_title = legend_title;
  return plot;
}

}  // namespace

void write_valid_curves(const PlotInputs& in) {
  const auto [legend, labels] = variant_labels(in);
  Families families;
  for (const auto& variant : in.order) {
    Series s;  // mean validation loss per step over the seeds that have it, ± their sample sd
    s.name = labels.at(variant);
    std::map<double, std::vector<double>> by_step;
    for (const auto& r : in.results)
      if (r.variant == variant)
        for (const auto& [step, loss] : r.curve) by_step[step].push_back(loss);
    for (const auto& [step, losses] : by_step) add_point(s, step, losses);
    families[family_of(kind_of(in, variant), false)].push_back(std::move(s));
  }
  write_families(in.layout.valid_curves_svg(), std::move(families),
                 titled(in, "validation loss", "step", "validation loss (mean ± sd over seeds)", legend));
}

/// extrapolation.svg, when the table has test perplexity at two or more contexts: mean
/// perplexity over seeds (± sd shaded) against the evaluation length on log axes, a line
/// per variant and way of evaluating (RoPE scaling, windowed attention), in panels by the
/// kind of position information with shared axes, the training context marked;
/// non-overlapping windows in extrapolation.svg, sliding windows of each stride S in
/// extrapolation.strideS.svg.
void write_extrapolation_plots(const PlotInputs& in) {
  // window perplexity columns (test_ppl@C[/S][+SCALING]) -> (stride or 0, scaling) -> (context, column)
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, std::string>>> groups;
  std::map<std::string, bool> scaled;  // evaluated_as -> with a RoPE scaling
  for (const auto& m : in.metrics) {
    const auto key = parse_column(m);
    if (!key || key->measure != ColumnKey::Measure::test_ppl || key->length == 0) continue;
    groups[{key->stride, key->evaluated_as()}].emplace_back(key->length, m);
    scaled[key->evaluated_as()] = !key->scaling.empty();
  }
  size_t contexts = 0;
  for (const auto& [group, columns] : groups) contexts = std::max(contexts, columns.size());
  if (contexts < 2) return;
  // A scaled line starts from the plain evaluation at the contexts it does not cover (the
  // training context, where the factor would be 1).
  for (auto& [group, columns] : groups) {
    if (group.second == "none" || !groups.count({group.first, "none"})) continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (const auto& [context, column] : columns) first = std::min(first, context);
    for (const auto& plain : groups.at({group.first, "none"}))
      if (plain.first < first) columns.push_back(plain);
  }
  std::set<int64_t> strides;
  for (const auto& [group, columns] : groups) strides.insert(group.first);
  const auto [legend, labels] = variant_labels(in);
  for (const auto stride : strides) {
    Families families;
    for (const auto& variant : in.order)
      for (auto& [group, columns] : groups) {
        if (group.first != stride) continue;
        std::sort(columns.begin(), columns.end());
        Series line;
        // "alibi", "rotary + yarn", "xpos + w512s4"
        line.name = labels.at(variant) + (group.second == "none" ? "" : " + " + group.second);
        bool own = group.second == "none";  // a scaled line needs a scaled value of its own
        for (const auto& [context, column] : columns) {
          const auto values = finite_values(in.results, variant, column);
          if (!values.empty()) own = own || parse_column(column)->evaluated_as() != "none";
          add_point(line, static_cast<double>(context), values);
        }
        if (own && !line.x.empty())
          families[family_of(kind_of(in, variant), scaled[group.second])].push_back(std::move(line));
      }
    auto plot = titled(
        in,
        "test perplexity by evaluation length, " +
            (stride == 0 ? std::string("non-overlapping windows") : "windows sliding by " + std::to_string(stride)),
        "evaluation context (tokens)", "test perplexity (mean ± sd over seeds)",
        legend.empty() ? "" : legend + " (+ at evaluation)");
    plot.log_x = plot.log_y = plot.markers = true;
    mark_training_context(in.results, plot);
    write_families(in.layout.extrapolation_svg(stride), std::move(families), plot);
  }
}

/// positions.svg for language models: the mean test loss at each position of the window,
/// at the longest context evaluated, in quarter-octave bins of positions, a line per
/// variant (mean over seeds, ± sd shaded): where past the training length each encoding
/// breaks.
void write_positions_plot(const PlotInputs& in) {
  int64_t context = 0;
  for (const auto& r : in.results)
    for (const auto& [c, losses] : r.position_loss) context = std::max(context, c);
  if (context == 0) return;
  // Positions 1..context in bins of a quarter octave ([2^(b/4), 2^((b+1)/4))): a run's
  // value in a bin is the mean of its positions' losses, which averages out the few windows
  // behind each single position of a long window.
  auto bin_of = [](int64_t position) { return static_cast<int64_t>(std::floor(4 * std::log2(position) + 1e-9)); };
  const auto [legend, labels] = variant_labels(in);
  Families families;
  for (const auto& variant : in.order) {
    Series line;
    line.name = labels.at(variant);
    std::map<int64_t, std::vector<double>> by_bin;  // bin -> each run's mean over the bin
    for (const auto& r : in.results) {
      if (r.variant != variant || !r.position_loss.count(context)) continue;
      std::map<int64_t, std::pair<double, int64_t>> sums;  // bin -> (sum, positions)
      const auto& losses = r.position_loss.at(context);
      for (size_t j = 0; j < losses.size(); ++j)
        if (std::isfinite(losses[j])) {
          auto& [sum, n] = sums[bin_of(static_cast<int64_t>(j) + 1)];
          sum += losses[j], ++n;
        }
      for (const auto& [bin, sum] : sums) by_bin[bin].push_back(sum.first / static_cast<double>(sum.second));
    }
    for (const auto& [bin, values] : by_bin)  // at the bin's geometric middle
      add_point(line, std::pow(2.0, (static_cast<double>(bin) + 0.5) / 4), values);
    if (!line.x.empty()) families[family_of(kind_of(in, variant), false)].push_back(std::move(line));
  }
  auto plot = titled(in, "test loss by position in windows of " + std::to_string(context),
                     "position in the window (tokens of history + 1; quarter-octave bins)",
                     "mean test loss (nats per token, mean ± sd over seeds)", legend);
  plot.log_x = true;
  mark_training_context(in.results, plot);
  write_families(in.layout.positions_svg(), std::move(families), plot);
}

void write_gain_plots(const PlotInputs& in) {
  // window -> the longest context's buckets (begin, end, column), the span over them all left out
  std::map<int64_t, std::pair<int64_t, std::vector<std::tuple<int64_t, int64_t, std::string>>>> windows;
  for (const auto& m : in.metrics) {
    const auto key = parse_column(m);
    if (!key || key->measure != ColumnKey::Measure::gain) continue;
    auto& [context, buckets] = windows[key->window];
    if (key->length < context) continue;
    if (key->length > context) context = key->length, buckets.clear();
    buckets.emplace_back(key->begin, key->end, m);
  }
  const auto [legend, labels] = variant_labels(in);
  bool first = true;
  for (auto& [window, longest] : windows) {
    auto& [context, buckets] = longest;
    std::sort(buckets.begin(), buckets.end());
    if (buckets.size() > 1)  // [W, C) spans the others
      buckets.erase(std::remove_if(buckets.begin(), buckets.end(),
                                   [&, w = window, c = context](const auto& b) {
                                     return std::get<0>(b) == w && std::get<1>(b) == c;
                                   }),
                    buckets.end());
    Families families;
    for (const auto& variant : in.order) {
      Series line;
      line.name = labels.at(variant);
      for (const auto& [begin, end, column] : buckets)  // at the bucket's geometric middle
        add_point(line, std::sqrt(static_cast<double>(begin) * static_cast<double>(end)),
                  finite_values(in.results, variant, column));
      if (!line.x.empty()) families[family_of(kind_of(in, variant), false)].push_back(std::move(line));
    }
    auto plot = titled(
        in,
        "context gain of the keys farther than " + std::to_string(window) + " in windows of " + std::to_string(context),
        "position in the window (bucket's geometric middle)", "context gain (nats/token, mean ± sd over seeds)",
        legend);
    plot.log_x = plot.markers = true;
    mark_training_context(in.results, plot);
    write_families(in.layout.gain_svg(window, first), std::move(families), plot);
    first = false;
  }
}

void write_accuracy_plots(const PlotInputs& in) {
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> measures;  // passkey or task -> (length, column)
  for (const auto& m : in.metrics) {
    const auto key = parse_column(m);
    // under a window with sinks (passkey@L#wWsS): in the tables only
    if (key && key->accuracy() && key->window == 0)
      measures[key->task.empty() ? "passkey" : key->task].emplace_back(key->length, m);
  }
  const auto [legend, labels] = variant_labels(in);
  for (auto& [measure, columns] : measures) {
    std::sort(columns.begin(), columns.end());
    Families families;
    for (const auto& variant : in.order) {
      Series line;
      line.name = labels.at(variant);
      for (const auto& [length, column] : columns)
        add_point(line, static_cast<double>(length), finite_values(in.results, variant, column));
      if (!line.x.empty()) families[family_of(kind_of(in, variant), false)].push_back(std::move(line));
    }
    auto plot = titled(in, measure + " retrieval by document length",
                       measure == "passkey" ? "prompt length (characters)" : "document length (characters)",
                       "accuracy over depths (mean ± sd over seeds)", legend);
    plot.log_x = plot.markers = true;
    mark_training_context(in.results, plot);
    write_families(measure == "passkey" ? in.layout.passkey_svg() : in.layout.retrieval_svg(measure),
                   std::move(families), plot);
  }
}

}  // namespace ropelab
