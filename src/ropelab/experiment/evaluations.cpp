#include "ropelab/experiment/evaluations.h"

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "ropelab/data/text.h"
#include "ropelab/eval/metrics.h"
#include "ropelab/eval/window_perplexity.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/run/eval_files.h"
#include "ropelab/run/run.h"

namespace ropelab {

namespace {

using Measure = ColumnKey::Measure;

/// Translation quality of the test split: one `ropelab eval`.
AblationEval translation_quality_eval() {
  return {ProtocolKind::translation_quality,
          {"eval", "--split", "test"},
          "test",
          {{"bleu", {Measure::test_bleu}},
           {"chrf", {Measure::test_chrf}},
           {"ter", {Measure::test_ter}},
           {"perplexity", {Measure::test_ppl}}},
          true,
          false,
          0};
}

/// Window perplexity of the test split at every context asked (the training context
/// without one), sliding by each stride below it, and for rotary runs past the training
/// context with each RoPE scaling asked.
void window_perplexity_evals(const Config& config, const TestEvaluations& asked, std::vector<AblationEval>& out) {
  const auto& position = config.model.decoder_position();
  // A learned table has no positions past max_len: longer contexts are not evaluated.
  const auto& traits = position_traits(position.type());
  const int64_t longest = traits.bounded ? position.max_len() : 0;
  const std::vector<std::string> tokens =
      asked.tokens > 0 ? std::vector<std::string>{"data.eval_tokens=" + std::to_string(asked.tokens)}
                       : std::vector<std::string>{};
  // `ropelab eval --split test` at `context` (sliding by `stride`, 0: none) with `flags`,
  // then these overrides after eval_tokens; its columns come from the caller
  auto eval = [&](int64_t context, int64_t stride, const std::vector<std::string>& overrides,
                  std::vector<std::string> flags, ColumnKey column) {
    auto all = tokens;
    all.insert(all.end(), overrides.begin(), overrides.end());
    AblationEval e;
    e.protocol = ProtocolKind::window_perplexity;
    e.args = {"eval", "--split", "test", "--context", std::to_string(context)};
    e.args.insert(e.args.end(), flags.begin(), flags.end());
    if (stride > 0) e.args.insert(e.args.end(), {"--stride", std::to_string(stride)});
    for (const auto& o : all) e.args.insert(e.args.end(), {"--set", o});
    e.tag = window_perplexity_tag("test", context, stride) + evaluation_tag(all);
    e.columns = {{"perplexity", column}};
    e.items = true;
    e.context = context;
    return e;
  };
  const auto trained = config.data.context();
  for (auto c : asked.contexts.empty() ? std::vector<int64_t>{trained} : asked.contexts) {
    if (longest > 0 && c > longest) continue;
    auto plain = eval(c, 0, {}, {"--per-position"}, {Measure::test_ppl, c});
    plain.positions = true;
    out.push_back(std::move(plain));
    if (traits.scalable && position.scaling().type() == RopeScalingType::none && c > trained)
      for (const auto& scaling : asked.scalings) {  // the same run, scaled to this context
        char factor[32];
        std::snprintf(factor, sizeof factor, "%g", static_cast<double>(c) / static_cast<double>(trained));
        out.push_back(eval(
            c, 0, {"model.position.scaling.type=" + scaling, "model.position.scaling.factor=" + std::string(factor)},
            {}, {Measure::test_ppl, c, 0, scaling}));
      }
    // Windowed attention past the training context: each query sees the `trained` keys
    // before it, as in training, plus the sinks (a run trained with a window keeps its own).
    if (c > trained && config.model.attention().type() == AttentionType::softmax &&
        config.model.attention().window() == 0)
      for (auto sinks : asked.window_sinks)
        out.push_back(eval(
            c, 0,
            {"model.attention.window=" + std::to_string(trained), "model.attention.sinks=" + std::to_string(sinks)}, {},
            {Measure::test_ppl, c, 0, "", trained, sinks}));
    for (auto s : asked.strides)  // sliding windows; a stride of the context or more is the above
      if (s < c) out.push_back(eval(c, s, {}, {}, {Measure::test_ppl, c, s}));
  }
}

/// Passkey retrieval over the asked grid: a column per length the model can take.
void passkey_evals(const Config& config, const TestEvaluations& asked, std::vector<AblationEval>& out) {
  if (!asked.passkey) return;
  const auto& position = config.model.decoder_position();
  const int64_t longest = position_traits(position.type()).bounded ? position.max_len() : 0;
  const auto& grid = *asked.passkey;
  AblationEval passkey;
  passkey.protocol = ProtocolKind::passkey;
  passkey.args = {"passkey", "eval"};
  for (auto& arg : passkey_eval_args(grid)) passkey.args.push_back(std::move(arg));
  for (auto l : grid.lengths)
    if (longest == 0 || passkey_context(l, grid.digits) <= longest)
      passkey.columns.push_back({"accuracy@" + std::to_string(l), {Measure::passkey, l}});
  out.push_back(std::move(passkey));
}

}  // namespace

std::string AblationEval::report(const std::string& run_dir) const {
  return protocol == ProtocolKind::passkey ? RunPaths(run_dir).passkey("").json : eval_file_paths(run_dir, tag).json;
}

std::string AblationEval::items_file(const std::string& run_dir) const {
  if (!items) return "";
  return protocol == ProtocolKind::translation_quality ? hypotheses_path(run_dir, "test")
                                                       : eval_file_paths(run_dir, tag).items;
}

std::string AblationEval::positions_file(const std::string& run_dir) const {
  return positions ? eval_file_paths(run_dir, tag).positions_csv : "";
}

std::vector<AblationEval> ablation_evals(const Config& config, const TestEvaluations& asked) {
  std::vector<AblationEval> out;
  for (const auto protocol : task_traits(config.task).protocols) switch (protocol) {
      case ProtocolKind::translation_quality:
        out.push_back(translation_quality_eval());
        break;
      case ProtocolKind::window_perplexity:
        window_perplexity_evals(config, asked, out);
        break;
      case ProtocolKind::passkey:
        passkey_evals(config, asked, out);
        break;
    }
  return out;
}

std::vector<PairedItems> ablation_items(const std::string& run_dir, const Config& config,
                                        const TestEvaluations& asked) {
  std::vector<PairedItems> out;
  for (const auto& eval : ablation_evals(config, asked)) {
    if (!eval.items) continue;
    const auto file = eval.items_file(run_dir);
    if (eval.protocol == ProtocolKind::window_perplexity) {
      out.push_back(
          {format_column(eval.columns[0].second), perplexity_metric(), read_item_table(file, {"nll", "tokens"})});
      continue;
    }
    // translation quality: the hypotheses against the test references, per text metric
    const auto hyps = read_text_lines(file);
    const auto refs = read_parallel(config.data, config.data.test()).target;
    if (hyps.size() != refs.size())
      throw std::runtime_error(file + " has " + std::to_string(hyps.size()) + " lines but " + config.data.test() +
                               " has " + std::to_string(refs.size()) + " test pairs");
    for (const auto& [name, column] : std::vector<std::pair<std::string, Measure>>{
             {"bleu", Measure::test_bleu}, {"chrf", Measure::test_chrf}, {"ter", Measure::test_ter}}) {
      std::shared_ptr<const TextMetric> metric = make_text_metric(name);
      out.push_back({format_column({column}), metric, metric->sentence_stats(hyps, {refs})});
    }
  }
  return out;
}

}  // namespace ropelab
