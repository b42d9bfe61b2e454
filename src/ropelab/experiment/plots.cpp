#include "ropelab/experiment/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/seed_stats.h"
#include "ropelab/util/svg_plot.h"

namespace ropelab {

using seed_stats::add_point;
using seed_stats::finite_values;

namespace {

/// Each variant's legend label (its values of the grid keys that differ, util/svg_plot.h)
/// and the legend's title.
std::pair<std::string, std::map<std::string, std::string>> variant_labels(const std::vector<std::string>& order) {
  const auto [title, labels] = legend_labels(order);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < order.size(); ++i) out[order[i]] = labels[i];
  return {title, out};
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

/// The panel of a line against length: the variant's kind of position information, and
/// RoPE scaling at evaluation in a panel of its own (it multiplies the rotary lines).
std::pair<int, std::string> panel_of(PositionKind kind, bool scaled) {
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

}  // namespace

/// extrapolation.svg, when the table has test perplexity at two or more contexts: mean
/// perplexity over seeds (± sd shaded) against the evaluation length on log axes, a line
/// per variant and way of evaluating (RoPE scaling, windowed attention), in panels by the
/// kind of position information with shared axes, the training context marked;
/// non-overlapping windows in extrapolation.svg, sliding windows of each stride S in
/// extrapolation.strideS.svg.
void write_extrapolation_plots(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                               const std::vector<std::string>& metrics, const AblationLayout& layout,
                               const std::string& experiment, const std::string& command) {
  // window perplexity columns (test_ppl@C[/S][+SCALING]) -> (stride or 0, scaling) -> (context, column)
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, std::string>>> groups;
  std::map<std::string, bool> scaled;  // evaluated_as -> with a RoPE scaling
  for (const auto& m : metrics) {
    const auto key = parse_column(m);
    if (!key || key->measure != ColumnKey::Measure::test_ppl || key->length == 0) continue;
    groups[{key->stride, key->evaluated_as()}].emplace_back(key->length, m);
    scaled[key->evaluated_as()] = !key->scaling.empty();
  }
  std::map<std::string, PositionKind> kind;  // variant -> its position information
  for (const auto& r : results) kind.emplace(r.variant, r.position);
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
  const auto [legend_title, labels] = variant_labels(order);
  for (const auto stride : strides) {
    std::map<std::pair<int, std::string>, std::vector<Series>> panels;  // small multiples by family
    for (const auto& variant : order)
      for (auto& [group, columns] : groups) {
        if (group.first != stride) continue;
        std::sort(columns.begin(), columns.end());
        Series line;
        // "alibi", "rotary + yarn", "xpos + w512s4"
        line.name = labels.at(variant) + (group.second == "none" ? "" : " + " + group.second);
        bool own = group.second == "none";  // a scaled line needs a scaled value of its own
        for (const auto& [context, column] : columns) {
          const auto values = finite_values(results, variant, column);
          if (!values.empty()) own = own || parse_column(column)->evaluated_as() != "none";
          add_point(line, static_cast<double>(context), values);
        }
        if (own && !line.x.empty())
          panels[panel_of(kind.count(variant) ? kind.at(variant) : PositionKind::none, scaled[group.second])].push_back(
              std::move(line));
      }
    PlotOptions plot;
    plot.title =
        experiment + ": test perplexity by evaluation length, " +
        (stride == 0 ? std::string("non-overlapping windows") : "windows sliding by " + std::to_string(stride));
    plot.x_label = "evaluation context (tokens)";
    plot.y_label = "test perplexity (mean ± sd over seeds)";
    plot.log_x = plot.log_y = true;
    plot.markers = true;
    plot.caption = command;
    plot.legend_title = legend_title.empty() ? "" : legend_title + " (+ at evaluation)";
    mark_training_context(results, plot);
    if (panels.size() == 1) {
      write_line_plot(layout.extrapolation_svg(stride), panels.begin()->second, plot);
      continue;
    }
    std::vector<Panel> figure;
    for (auto& [panel, lines] : panels) figure.push_back({panel.second, std::move(lines)});
    write_line_panels(layout.extrapolation_svg(stride), figure, plot);
  }
}

/// passkey.svg, when the table has passkey accuracy ("passkey@L"): the accuracy over
/// depths against the prompt length on a log axis, a line per variant (mean ± sd over seeds).
void write_passkey_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                        const std::vector<std::string>& metrics, const std::string& path, const std::string& experiment,
                        const std::string& command) {
  std::vector<Series> lines;
  for (const auto& variant : order) {
    Series line;
    line.name = variant;
    for (const auto& m : metrics) {
      const auto key = parse_column(m);
      if (!key || key->measure != ColumnKey::Measure::passkey) continue;
      add_point(line, static_cast<double>(key->length), finite_values(results, variant, m));
    }
    if (!line.x.empty()) lines.push_back(std::move(line));
  }
  if (lines.empty()) return;
  PlotOptions plot;
  plot.title = experiment + ": passkey retrieval by document length";
  plot.x_label = "prompt length (characters)";
  plot.y_label = "accuracy over key depths (mean ± sd over seeds)";
  plot.log_x = true;
  plot.markers = true;
  plot.caption = command;
  write_line_plot(path, lines, plot);
}

/// positions.svg for language models: the mean test loss at each position of the window,
/// at the longest context evaluated, in quarter-octave bins of positions, a line per
/// variant (mean over seeds, ± sd shaded): where past the training length each encoding
/// breaks.
void write_positions_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                          const std::string& path, const std::string& experiment, const std::string& command) {
  int64_t context = 0;
  for (const auto& r : results)
    for (const auto& [c, losses] : r.position_loss) context = std::max(context, c);
  if (context == 0) return;
  // Positions 1..context in bins of a quarter octave ([2^(b/4), 2^((b+1)/4))): a run's
  // value in a bin is the mean of its positions' losses, which averages out the few windows
  // behind each single position of a long window.
  auto bin_of = [](int64_t position) { return static_cast<int64_t>(std::floor(4 * std::log2(position) + 1e-9)); };
  std::vector<Series> lines;
  for (const auto& variant : order) {
    Series line;
    line.name = variant;
    std::map<int64_t, std::vector<double>> by_bin;  // bin -> each run's mean over the bin
    for (const auto& r : results) {
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
    if (!line.x.empty()) lines.push_back(std::move(line));
  }
  PlotOptions plot;
  plot.title = experiment + ": test loss by position in windows of " + std::to_string(context);
  plot.x_label = "position in the window (tokens of history + 1; quarter-octave bins)";
  plot.y_label = "mean test loss (nats per token, mean ± sd over seeds)";
  plot.log_x = true;
  plot.caption = command;
  mark_training_context(results, plot);
  write_line_plot(path, lines, plot);
}

}  // namespace ropelab
