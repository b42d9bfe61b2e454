#include "ropelab/eval/context_gain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "ropelab/data/text.h"
#include "ropelab/eval/loss.h"
#include "ropelab/eval/window_perplexity.h"
#include "ropelab/util/clock.h"

namespace ropelab {

namespace {

/// Buckets with fewer tokens than this are printed, and marked as too small for a reading.
constexpr double kReadableTokens = 10000;

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

std::string GainBucket::name() const { return std::to_string(begin) + "-" + std::to_string(end); }
std::string GainBucket::label() const { return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")"; }

std::vector<GainBucket> context_gain_buckets(int64_t window, int64_t context) {
  std::vector<GainBucket> out;
  for (int64_t begin = window; begin < context; begin *= 2) out.push_back({begin, std::min(2 * begin, context)});
  return out;
}

std::string context_gain_tag(const std::string& name, int64_t context, int64_t window) {
  return name + ".ctx" + std::to_string(context) + ".gain" + std::to_string(window);
}

std::string context_gain_error(const Task& task, int64_t window, int64_t context) {
  const auto& attention = task.config().model.attention();
  if (window <= 0) return "--context-gain " + std::to_string(window) + ": the window must be positive";
  if (window >= context)
    return "--context-gain " + std::to_string(window) + " is not below the context " + std::to_string(context) +
           ": a window of that many keys sees the whole evaluation window, so there is nothing to gain";
  if (attention.type() != AttentionType::softmax)
    return "--context-gain needs softmax attention (a sliding window); the run's model.attention.type is " +
           to_string(attention.type());
  if (const auto own = widest_window(attention); own > 0 && window >= own)
    return "--context-gain " + std::to_string(window) + ": the run's own " +
           (attention.layer_windows().empty() ? "model.attention.window=" + std::to_string(own)
                                              : "model.attention.layer_windows='" + attention.layer_windows() + "'") +
           " already hides every key farther than that";
  return "";
}

std::shared_ptr<TaskModel> windowed_model(const Task& task, const TaskModel& model, int64_t vocab_size, int64_t window,
                                          const torch::Device& device) {
  auto config = task.config();
  auto& attention = config.model.attention();
  if (attention.layer_windows().empty()) {
    attention.window(window);
  } else {  // each layer sees at most `window` keys, fewer where its own window says so
    std::string narrowed;
    for (auto own : layer_windows(attention, config.model.decoder_layers()))
      narrowed += (narrowed.empty() ? "" : ",") + std::to_string(own > 0 ? std::min(own, window) : window);
    attention.layer_windows(narrowed);
  }
  attention.sinks(0).window_positions(WindowPositions::sequence);
  auto copy = make_task(config)->build_model(vocab_size);
  torch::NoGradGuard no_grad;
  auto parameters = model->named_parameters();
  auto buffers = model->named_buffers();
  for (auto& p : copy->module().named_parameters()) p.value().copy_(parameters[p.key()]);
  for (auto& b : copy->module().named_buffers()) b.value().copy_(buffers[b.key()]);
  copy->module().to(device);
  copy->module().eval();
  return copy;
}

std::vector<std::vector<RatioItem>> gain_items(const std::vector<Example>& windows,
                                               const std::vector<std::vector<double>>& full,
                                               const std::vector<std::vector<double>>& windowed,
                                               const std::vector<GainBucket>& buckets) {
  std::map<int64_t, size_t> unit_of;  // Example::document -> its index, in order of first appearance
  for (const auto& w : windows) unit_of.emplace(w.document, unit_of.size());
  std::vector<std::vector<RatioItem>> items(buckets.size(), std::vector<RatioItem>(unit_of.size()));
  for (size_t i = 0; i < windows.size(); ++i) {
    const size_t unit = unit_of.at(windows[i].document);
    const auto &a = full[i], &b = windowed[i];
    TORCH_INTERNAL_ASSERT(a.size() == b.size(), "context gain: the passes scored different positions");
    for (size_t k = 0; k < buckets.size(); ++k)
      for (auto j = buckets[k].begin; j < buckets[k].end && j < static_cast<int64_t>(a.size()); ++j) {
        const double full_nll = a[static_cast<size_t>(j)], windowed_nll = b[static_cast<size_t>(j)];
        if (std::isnan(full_nll) || std::isnan(windowed_nll)) continue;  // padding, or context only
        items[k][unit].numerator += windowed_nll - full_nll;
        items[k][unit].denominator += 1;
      }
  }
  return items;
}

EvalReport context_gain_report(const Task& task, const TaskModel& full, const TaskModel& windowed,
                               const std::vector<Example>& windows, const ContextGain& gain, const std::string& name,
                               const std::string& units, const torch::Device& device) {
  const double start = now_seconds();
  const auto max_tokens = task.config().train.max_tokens();
  std::vector<std::vector<double>> full_nll, windowed_nll;
  // Both passes start from one generator state, so that positions drawn at evaluation
  // (train_positions.drawn_at_eval) are the same in both and only the window differs.
  const auto draws = torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kLong).item<int64_t>();
  torch::manual_seed(static_cast<uint64_t>(draws));
  std::vector<ExampleLoss> per_window, per_position;
  const auto totals =
      evaluate_loss(task, full, ExampleView(windows), max_tokens, 0.0, device, &per_window, &per_position, &full_nll);
  const double full_seconds = now_seconds() - start;
  torch::manual_seed(static_cast<uint64_t>(draws));
  const auto narrow =
      evaluate_loss(task, windowed, ExampleView(windows), max_tokens, 0.0, device, nullptr, nullptr, &windowed_nll);
  auto buckets = context_gain_buckets(gain.window, gain.context);
  if (buckets.size() > 1) buckets.push_back({gain.window, gain.context});  // every token past the window
  const auto items = gain_items(windows, full_nll, windowed_nll, buckets);

  EvalReport report;
  report.file_tag = context_gain_tag(name, gain.context, gain.window);
  const auto unit_count = items.empty() ? size_t{0} : items[0].size();
  report.fields = {{"context", gain.context},
                   {"window", gain.window},
                   {"units", units},
                   {"unit_count", unit_count},
                   {"windows", windows.size()},
                   {"tokens", static_cast<int64_t>(totals.tokens)},
                   {"perplexity", totals.perplexity()},
                   {"windowed_perplexity", narrow.perplexity()},
                   {"resamples", kContextGainResamples},
                   {"bootstrap_seed", kContextGainSeed}};
  std::ostringstream s;
  s << "context gain of keys farther than " << gain.window << " in windows of " << gain.context << " ("
    << windows.size() << " windows; 95% bootstrap intervals over " << unit_count << " " << units
    << "; nats/token, > 0: the farther keys help)";
  for (size_t k = 0; k < buckets.size(); ++k) {
    const auto& b = buckets[k];
    const auto r = cluster_bootstrap({items[k]}, kContextGainResamples, kContextGainSeed);
    const auto key = b.name();
    report.fields["gain@" + key] = r.estimate;  // NaN (null) for a bucket without tokens
    report.fields["ci95@" + key] = {r.low, r.high};
    report.fields["p@" + key] = r.p_value;
    report.fields["tokens@" + key] = static_cast<int64_t>(r.denominator);
    s << "\ncontext gain " << (k + 1 == buckets.size() && buckets.size() > 1 ? "all " : "") << b.label() << ": ";
    if (r.denominator == 0) {
      s << "no tokens";
      continue;
    }
    s << number("%.4f", r.estimate) << " nats/token (95% CI " << number("%.4f", r.low) << ", " << number("%.4f", r.high)
      << "), " << static_cast<int64_t>(r.denominator) << " tokens";
    if (r.denominator < kReadableTokens) s << " (fewer than 10000: too few for a reading)";
  }
  s << "\nperplexity " << number("%.4f", totals.perplexity()) << " with every key, "
    << number("%.4f", narrow.perplexity()) << " with the last " << gain.window;
  report.summary = s.str();
  report.fields["seconds"] = now_seconds() - start;
  // the full pass is the window perplexity at this context (`eval --context C --per-position`)
  report.companions.push_back(window_perplexity_report(name, gain.context, gain.context, windows, totals, per_window,
                                                       per_position, full_seconds));
  // per unit and bucket, for tests between runs
  report.item_columns = {"unit", "bucket_begin", "bucket_end", "gain", "tokens"};
  for (size_t k = 0; k < buckets.size(); ++k)
    for (size_t u = 0; u < items[k].size(); ++u)
      report.items.push_back({static_cast<double>(u), static_cast<double>(buckets[k].begin),
                              static_cast<double>(buckets[k].end), items[k][u].numerator, items[k][u].denominator});
  return report;
}

EvalReport context_gain(const Task& task, const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                        const std::string& path, const ContextGain& gain, const torch::Device& device) {
  const auto& config = task.config();
  ContextGain resolved = gain;
  if (resolved.context <= 0) resolved.context = config.data.context();
  if (const auto error = context_gain_error(task, resolved.window, resolved.context); !error.empty())
    throw std::runtime_error(error);
  const auto windows = lm_windows(read_text_lines(path), tokenizer, resolved.context, resolved.context, nullptr,
                                  config.data.eval_tokens(), config.data.documents());
  const auto narrow = windowed_model(task, model, tokenizer.vocab_size(), resolved.window, device);
  return context_gain_report(task, model, *narrow, windows, resolved, name,
                             config.data.documents() ? "documents" : "blocks", device);
}

}  // namespace ropelab
