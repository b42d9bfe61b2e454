#include "ropelab/eval/window_perplexity.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "ropelab/data/examples.h"
#include "ropelab/data/text.h"
#include "ropelab/eval/loss.h"
#include "ropelab/util/clock.h"

namespace ropelab {

std::string window_perplexity_tag(const std::string& name, int64_t context, int64_t stride) {
  return name + ".ctx" + std::to_string(context) +
         (stride > 0 && stride < context ? ".stride" + std::to_string(stride) : "");
}

EvalReport window_perplexity(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                             const std::string& name, const std::string& path, const WindowPerplexity& window,
                             const torch::Device& device) {
  const auto& config = task.config();
  const int64_t context = window.context > 0 ? window.context : config.data.context();
  const int64_t stride = window.stride > 0 ? window.stride : context;
  if (stride > context)
    throw std::runtime_error("--stride " + std::to_string(stride) + " is longer than the context " +
                             std::to_string(context) + ": windows would skip tokens");
  int64_t empty = 0;
  const auto windows = lm_windows(read_text_lines(path), tokenizer, context, stride, &empty, config.data.eval_tokens(),
                                  config.data.documents());
  const double start = now_seconds();
  std::vector<ExampleLoss> per_window, per_position;
  const auto totals = evaluate_loss(task, model, ExampleView(windows), config.train.max_tokens(), 0.0, device,
                                    &per_window, window.per_position ? &per_position : nullptr);
  return window_perplexity_report(name, context, stride, windows, totals, per_window, per_position,
                                  now_seconds() - start);
}

EvalReport window_perplexity_report(const std::string& name, int64_t context, int64_t stride,
                                    const std::vector<Example>& windows, const LossTotals& totals,
                                    const std::vector<ExampleLoss>& per_window,
                                    const std::vector<ExampleLoss>& per_position, double seconds) {
  const double perplexity = totals.perplexity();
  const auto tokens = static_cast<int64_t>(totals.tokens);
  EvalReport report;
  report.file_tag = window_perplexity_tag(name, context, stride);
  report.fields = {{"context", context}, {"stride", stride},         {"chunks", windows.size()},
                   {"tokens", tokens},   {"perplexity", perplexity}, {"bits_per_token", std::log2(perplexity)},
                   {"seconds", seconds}};
  std::ostringstream s;
  s << "perplexity = " << perplexity << " (" << std::log2(perplexity) << " bits/token; " << tokens << " tokens in "
    << windows.size() << " windows of " << context;
  if (stride < context)
    s << ", sliding by " << stride << ": each token after the first " << context - stride << " with at least "
      << context - stride << " tokens of history";
  s << ")";
  report.summary = s.str();
  // per window, for paired tests between runs; its document, the unit a bootstrap resamples
  report.item_columns = {"nll", "tokens", "document"};
  for (size_t i = 0; i < per_window.size(); ++i)
    report.items.push_back({per_window[i].nll, per_window[i].tokens, static_cast<double>(windows[i].document)});
  for (const auto& p : per_position) {
    report.position_loss.push_back(p.tokens > 0 ? p.nll / p.tokens : std::numeric_limits<double>::quiet_NaN());
    report.position_tokens.push_back(p.tokens);
  }
  return report;
}

}  // namespace ropelab
