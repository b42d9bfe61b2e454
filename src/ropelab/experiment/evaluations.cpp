#include "ropelab/experiment/evaluations.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "ropelab/data/text.h"
#include "ropelab/eval/context_gain.h"
#include "ropelab/eval/window_perplexity.h"
#include "ropelab/metrics/metrics.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/run/eval_files.h"
#include "ropelab/run/run.h"

namespace ropelab {

namespace {

using Measure = ColumnKey::Measure;

/// Translation quality of the test split: one `ropelab eval`.
AblationEval translation_quality_eval() {
  AblationEval e;
  e.protocol = ProtocolKind::translation_quality;
  e.args = {"eval", "--split", "test"};
  e.tag = "test";
  e.columns = {{"bleu", {Measure::test_bleu}},
               {"chrf", {Measure::test_chrf}},
               {"ter", {Measure::test_ter}},
               {"perplexity", {Measure::test_ppl}}};
  e.items = true;
  return e;
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
    // the same run scaled by `factor`; a fixed factor's column says it (test_ppl@C+yarn4x)
    auto scaled = [&](const std::string& scaling, double factor, bool fixed) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", factor);
      const std::string factor_text = text;
      auto e = eval(c, 0, {"model.position.scaling.type=" + scaling, "model.position.scaling.factor=" + factor_text},
                    {}, {Measure::test_ppl, c, 0, fixed ? scaling + factor_text + "x" : scaling});
      // a fixed factor equal to the exact one: the same evaluation, under both columns
      auto same = std::find_if(out.begin(), out.end(), [&](const AblationEval& o) { return o.tag == e.tag; });
      if (same != out.end())
        same->columns.push_back(e.columns.front());
      else
        out.push_back(std::move(e));
    };
    // randomized positions already span the evaluation lengths (train_positions.range): the
    // method is read as trained, not scaled
    const bool scalable = traits.scalable && position.scaling().type() == RopeScalingType::none &&
                          position.train_positions().type() != TrainPositionsType::randomized;
    if (scalable && c > trained)
      for (const auto& scaling : asked.scalings)  // to this context: s = context / data.context
        scaled(scaling, static_cast<double>(c) / static_cast<double>(trained), false);
    if (scalable)
      for (const auto& scaling : asked.scalings)  // at a fixed factor, whatever the context
        for (auto factor : asked.scaling_factors)
          if (scaling != "dynamic_ntk") scaled(scaling, factor, true);
    // Windowed attention past the training context: each query sees the `trained` keys
    // before it, as in training, plus the sinks (a run trained with a window keeps its own).
    if (c > trained && config.model.attention().type() == AttentionType::softmax &&
        config.model.attention().window() == 0 && config.model.attention().layer_windows().empty())
      for (auto sinks : asked.window_sinks)
        out.push_back(eval(
            c, 0,
            {"model.attention.window=" + std::to_string(trained), "model.attention.sinks=" + std::to_string(sinks)}, {},
            {Measure::test_ppl, c, 0, "", trained, sinks}));
    for (auto s : asked.strides)  // sliding windows; a stride of the context or more is the above
      if (s < c) out.push_back(eval(c, s, {}, {}, {Measure::test_ppl, c, s}));
  }
}

/// Context gain at every context asked (the training context without one) above each
/// window asked: a column per bucket of positions and, with two or more, one over them all.
/// A model that cannot be measured (a learned table shorter than the context, a Performer,
/// its own window) has none.
void context_gain_evals(const Config& config, const TestEvaluations& asked, std::vector<AblationEval>& out) {
  if (asked.gain_windows.empty()) return;
  const auto& position = config.model.decoder_position();
  const int64_t longest = position_traits(position.type()).bounded ? position.max_len() : 0;
  const auto task = make_task(config);
  std::vector<std::string> overrides;
  if (asked.tokens > 0) overrides.push_back("data.eval_tokens=" + std::to_string(asked.tokens));
  for (auto c : asked.contexts.empty() ? std::vector<int64_t>{config.data.context()} : asked.contexts)
    for (auto w : asked.gain_windows) {
      if ((longest > 0 && c > longest) || !context_gain_error(*task, w, c).empty()) continue;
      AblationEval e;
      e.protocol = ProtocolKind::context_gain;
      e.args = {"eval", "--split", "test", "--context", std::to_string(c), "--context-gain", std::to_string(w)};
      for (const auto& o : overrides) e.args.insert(e.args.end(), {"--set", o});
      e.tag = context_gain_tag("test", c, w) + evaluation_tag(overrides);
      e.also_writes = window_perplexity_tag("test", c, 0) + evaluation_tag(overrides);  // its full pass
      auto buckets = context_gain_buckets(w, c);
      if (buckets.size() > 1) buckets.push_back({w, c});
      for (const auto& b : buckets) e.columns.push_back({"gain@" + b.name(), ColumnKey::gain(c, w, b.begin, b.end)});
      e.items = true;
      e.context = c;
      out.push_back(std::move(e));
    }
}

/// Passkey retrieval over the asked grid: a column per length the model can take; documents
/// from the grid's seed, or with documents_per_seed from it plus the run's training seed.
/// With eval_window_sinks, also the prompts longer than data.context under a window of
/// data.context keys and each number of sinks, as the perplexity past it is (a run trained with
/// its own window keeps it), each in its own report (passkey.set_W_S.json).
void passkey_evals(const Config& config, const TestEvaluations& asked, std::vector<AblationEval>& out) {
  if (!asked.passkey) return;
  const auto& position = config.model.decoder_position();
  const int64_t longest = position_traits(position.type()).bounded ? position.max_len() : 0;
  auto grid = *asked.passkey;
  // a set per seed, or one for all; a report of another set is not this one's (one written
  // before reports recorded their set is the shared set's)
  if (asked.passkey_per_seed) grid.seed += static_cast<uint64_t>(config.train.seed());
  // the prompt lengths evaluated, and those read as columns
  auto passkey = [&](const std::vector<int64_t>& asked_lengths, const std::vector<int64_t>& lengths,
                     const std::vector<std::string>& overrides, const ColumnKey& column) {
    AblationEval e;
    e.protocol = ProtocolKind::passkey;
    e.tag = evaluation_tag(overrides);
    e.report_equals = {{"passkey_seed", static_cast<double>(grid.seed)}};
    e.report_may_lack = !asked.passkey_per_seed;
    auto cells = grid;
    cells.lengths = asked_lengths;
    e.args = {"passkey", "eval"};
    for (auto& arg : passkey_eval_args(cells)) e.args.push_back(std::move(arg));
    for (const auto& o : overrides) e.args.insert(e.args.end(), {"--set", o});
    for (auto l : lengths) {
      auto key = column;
      key.length = l;
      e.columns.push_back({"accuracy@" + std::to_string(l), key});
    }
    out.push_back(std::move(e));
  };
  const auto trained = config.data.context();
  std::vector<int64_t> taken, beyond;  // the lengths the model can take; those past data.context
  for (auto l : grid.lengths) {
    const int64_t tokens = passkey_context(l, grid.digits);
    if (longest > 0 && tokens > longest) continue;
    taken.push_back(l);
    if (tokens > trained) beyond.push_back(l);
  }
  passkey(grid.lengths, taken, {}, {Measure::passkey, 0});  // a prompt too long gets a cell that says why
  const auto& attention = config.model.attention();
  if (beyond.empty() || attention.type() != AttentionType::softmax || attention.window() > 0 ||
      !attention.layer_windows().empty())
    return;
  for (auto sinks : asked.window_sinks)
    passkey(beyond, beyond,
            {"model.attention.window=" + std::to_string(trained), "model.attention.sinks=" + std::to_string(sinks)},
            {Measure::passkey, 0, 0, "", trained, sinks});
}

/// A window-perplexity evaluation's items: each window's [NLL, tokens] and its document
/// (a table written before documents were recorded has none: each window is its own unit).
PairedItems window_items(const std::string& column, const std::string& file) {
  const bool documents = read_item_header(file).size() == 3;
  const auto table =
      documents ? read_item_table(file, {"nll", "tokens", "document"}) : read_item_table(file, {"nll", "tokens"});
  PairedItems items{column, perplexity_metric(), {}, {}};
  const size_t width = documents ? 3 : 2;
  for (size_t i = 0; i < table.size(); i += width) {
    items.stats.insert(items.stats.end(), {table[i], table[i + 1]});
    items.units.push_back(documents ? static_cast<int64_t>(table[i + 2]) : static_cast<int64_t>(i / width));
  }
  return items;
}

/// A context-gain evaluation's items, one set per column (bucket): each unit's [gain, tokens].
std::vector<PairedItems> gain_items(const AblationEval& eval, const std::string& file) {
  const auto table = read_item_table(file, {"unit", "bucket_begin", "bucket_end", "gain", "tokens"});
  std::vector<PairedItems> out;
  for (const auto& [key, column] : eval.columns) {
    PairedItems items{format_column(column), per_token_metric(), {}, {}};
    for (size_t i = 0; i < table.size(); i += 5)
      if (static_cast<int64_t>(table[i + 1]) == column.begin && static_cast<int64_t>(table[i + 2]) == column.end) {
        items.stats.insert(items.stats.end(), {table[i + 3], table[i + 4]});
        items.units.push_back(static_cast<int64_t>(table[i]));
      }
    if (items.units.empty()) throw std::runtime_error(file + ": no items of bucket " + key.substr(5));
    out.push_back(std::move(items));
  }
  return out;
}

/// The retrieval probes asked: per task, a column per length the model can take; documents
/// from the stream of the grid's seed plus the run's training seed, a set per seed.
void retrieval_evals(const Config& config, const TestEvaluations& asked, std::vector<AblationEval>& out) {
  const auto& position = config.model.decoder_position();
  const int64_t longest = position_traits(position.type()).bounded ? position.max_len() : 0;
  const auto& grid = asked.retrieval_grid;
  for (const auto& task : asked.retrieval_tasks) {
    AblationEval e;
    e.protocol = ProtocolKind::retrieval;
    e.tag = task;
    std::string lengths, depths;
    for (auto l : grid.lengths)
      if (longest == 0 || l + 1 <= longest) {  // the document and the EOS before it
        lengths += (lengths.empty() ? "" : ",") + std::to_string(l);
        e.columns.push_back({"accuracy@" + std::to_string(l), ColumnKey::retrieval(task, l)});
      }
    if (e.columns.empty()) continue;
    for (auto d : grid.depths) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", d);
      depths += (depths.empty() ? "" : ",") + std::string(text);
    }
    e.args = {"retrieval",        "eval",
              "--task",           task,
              "--lengths",        lengths,
              "--documents",      std::to_string(grid.documents),
              "--retrieval-seed", std::to_string(grid.seed + static_cast<uint64_t>(config.train.seed()))};
    if (retrieval_has_depth(parse_retrieval_task(task))) e.args.insert(e.args.end(), {"--depths", depths});
    if (parse_retrieval_task(task) != RetrievalTask::mqar) e.args.insert(e.args.end(), {"--corpus", grid.corpus});
    out.push_back(std::move(e));
  }
}

}  // namespace

std::string AblationEval::report(const std::string& run_dir) const {
  if (protocol == ProtocolKind::retrieval) return RunPaths(run_dir).retrieval(tag, "").json;
  return protocol == ProtocolKind::passkey ? RunPaths(run_dir).passkey(tag).json : eval_file_paths(run_dir, tag).json;
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
      case ProtocolKind::context_gain:
        context_gain_evals(config, asked, out);
        break;
      case ProtocolKind::passkey:
        passkey_evals(config, asked, out);
        break;
      case ProtocolKind::retrieval:
        retrieval_evals(config, asked, out);
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
    if (eval.protocol == ProtocolKind::window_perplexity) {  // one evaluation may fill several columns
      for (const auto& column : eval.columns) out.push_back(window_items(format_column(column.second), file));
      continue;
    }
    if (eval.protocol == ProtocolKind::context_gain) {
      for (auto& items : gain_items(eval, file)) out.push_back(std::move(items));
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
      out.push_back({format_column({column}), metric, metric->sentence_stats(hyps, {refs}), {}});
    }
  }
  return out;
}

}  // namespace ropelab
