#include "ropelab/task/language_model_task.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "ropelab/eval/loss.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/util/clock.h"

namespace ropelab {

// --- the model ----------------------------------------------------------------------

namespace {

class LanguageModelState : public TransformerDecoderState {
 public:
  LanguageModelState(LanguageModel net, bool use_cache)
      : TransformerDecoderState(use_cache && net->decoder->decodes_incrementally()), net_(std::move(net)) {}

 private:
  torch::Tensor run(const torch::Tensor& tokens, DecoderCache* cache) override { return net_->forward(tokens, cache); }
  LanguageModel net_;
};

}  // namespace

Decoding LanguageModelTask::Model::start_decoding(const Batch& inputs, const DecodeOptions& options,
                                                  bool use_cache) const {
  Decoding d;
  d.state = std::make_unique<LanguageModelState>(net, use_cache);
  d.start = inputs.target_in;  // (B, 1 + P): EOS, then the prompt
  const int64_t prompt = d.start.size(1) - 1;
  d.limits.assign(static_cast<size_t>(d.start.size(0)), max_output_length(options, prompt));
  d.min_length = options.min_len();
  return d;
}

// --- data ----------------------------------------------------------------------------

void LanguageModelTask::tokenizer_texts(const std::function<void(const std::string&)>& emit) const {
  for_each_line(config_.data.train(), [&](std::string& line, int64_t) { emit(line); });
}

std::string LanguageModelTask::write_training_store(const Tokenizer& tokenizer, const std::string& path) const {
  const int64_t empty = write_lm_store(config_.data.train(), tokenizer, config_.data.context(), path);
  return "(" + std::to_string(empty) + " empty lines skipped)";
}

std::unique_ptr<TokenStore> LanguageModelTask::open_training_store(const Tokenizer& tokenizer,
                                                                   const std::string& path) const {
  (void)tokenizer;
  return std::make_unique<TokenStore>(path);
}

std::vector<Example> LanguageModelTask::read_examples(const std::string& path, const Tokenizer& tokenizer,
                                                      int64_t* skipped) const {
  return lm_chunks(read_text_lines(path), tokenizer, config_.data.context(), skipped, config_.data.eval_tokens());
}

std::string LanguageModelTask::describe_data(size_t train, const std::string& store_summary, size_t valid) const {
  return std::to_string(train) + " training chunks of " + std::to_string(config_.data.context()) + " tokens " +
         store_summary + ", " + std::to_string(valid) + " validation chunks";
}

// --- decoding and evaluation -----------------------------------------------------------

namespace {

/// A prompt's decoding: EOS (the document boundary the model was trained with), then the prompt.
Decoding start_prompt(const TaskModel& model, const std::vector<int64_t>& prompt, const DecodeRequest& request,
                      const torch::Device& device) {
  std::vector<int64_t> start{kEosId};
  start.insert(start.end(), prompt.begin(), prompt.end());
  Batch inputs;
  inputs.target_in = torch::tensor(start, torch::kLong).unsqueeze(0).to(device);
  return model.start_decoding(inputs, request.search.decode, request.use_cache);
}

}  // namespace

std::vector<std::string> LanguageModelTask::decode_lines(const TaskModel& model, const Tokenizer& tokenizer,
                                                         const std::vector<std::string>& lines,
                                                         const DecodeRequest& request, const torch::Device& device,
                                                         int64_t* truncated) const {
  (void)truncated;
  std::vector<std::string> out;
  for (const auto& line : lines) {  // one prompt at a time: prompts differ in length
    auto ids = tokenizer.encode(line);
    auto hyps = search(start_prompt(model, ids, request, device), request.search);
    ids.insert(ids.end(), hyps[0].tokens.begin(), hyps[0].tokens.end());
    out.push_back(tokenizer.decode(ids));
  }
  return out;
}

bool LanguageModelTask::stream_line(const TaskModel& model, const Tokenizer& tokenizer, const std::string& line,
                                    const DecodeRequest& request, const torch::Device& device,
                                    const std::function<bool(const std::string&)>& emit) const {
  const auto ids = tokenizer.encode(line);
  if (!emit(tokenizer.decode(ids))) return false;
  IncrementalDetokenizer text(tokenizer, ids);
  bool more = true;
  search(start_prompt(model, ids, request, device), request.search, [&](int64_t, int64_t token) {
    const auto piece = text.push(token);
    return more = emit(piece);
  });
  return more;
}

std::vector<std::string> LanguageModelTask::decode_inputs(const std::string& path) const {
  std::vector<std::string> prompts;
  for (auto& line : read_text_lines(path))
    if (!line.empty()) prompts.push_back(std::move(line));
  return prompts;
}

EvalReport LanguageModelTask::evaluate(const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                                       const std::string& path, const DecodeRequest& request,
                                       const EvalProtocol& protocol, const torch::Device& device) const {
  (void)request;
  const int64_t context = protocol.context > 0 ? protocol.context : config_.data.context();
  const int64_t stride = protocol.stride > 0 ? protocol.stride : context;
  if (stride > context)
    throw std::runtime_error("--stride " + std::to_string(stride) + " is longer than the context " +
                             std::to_string(context) + ": windows would skip tokens");
  int64_t empty = 0;
  const auto windows =
      lm_windows(read_text_lines(path), tokenizer, context, stride, &empty, config_.data.eval_tokens());
  const double start = now_seconds();
  std::vector<ExampleLoss> per_window, per_position;
  const auto totals = evaluate_loss(*this, model, ExampleView(windows), config_.train.max_tokens(), 0.0, device,
                                    &per_window, protocol.per_position ? &per_position : nullptr);
  const double seconds = now_seconds() - start;
  const double perplexity = totals.perplexity();
  const auto tokens = static_cast<int64_t>(totals.tokens);
  EvalReport report;
  report.file_tag =
      name + ".ctx" + std::to_string(context) + (stride < context ? ".stride" + std::to_string(stride) : "");
  report.fields = {{"context", context}, {"stride", stride},         {"chunks", windows.size()},
                   {"tokens", tokens},   {"perplexity", perplexity}, {"bits_per_token", std::log2(perplexity)},
                   {"seconds", seconds}};
  std::ostringstream s;
  s << "perplexity = " << perplexity << " (" << std::log2(perplexity) << " bits/token; " << tokens << " tokens in "
    << windows.size() << " windows of " << context;
  if (stride < context)
    s << ", sliding by " << stride << ": each token with at least " << context - stride << " tokens of history";
  s << ")";
  report.summary = s.str();
  report.item_columns = {"nll", "tokens"};  // per window, for paired tests between runs
  for (const auto& w : per_window) report.items.push_back({w.nll, w.tokens});
  for (const auto& p : per_position) {
    report.position_loss.push_back(p.tokens > 0 ? p.nll / p.tokens : std::numeric_limits<double>::quiet_NaN());
    report.position_tokens.push_back(p.tokens);
  }
  return report;
}

std::vector<AblationEval> LanguageModelTask::ablation_evals(const TestEvaluations& asked) const {
  std::vector<AblationEval> out;
  const auto& position = config_.model.decoder_position();
  // A learned table has no positions past max_len: longer contexts are not evaluated.
  const auto& traits = position_traits(position.type());
  const int64_t longest = traits.bounded ? position.max_len() : 0;
  const std::vector<std::string> tokens =
      asked.tokens > 0 ? std::vector<std::string>{"data.eval_tokens=" + std::to_string(asked.tokens)}
                       : std::vector<std::string>{};
  // `ropelab eval --split test` at `context` (sliding by `stride`, 0: none) with `flags`,
  // then these overrides after eval_tokens, and the name it gives its reports
  auto eval = [&](int64_t context, int64_t stride, const std::vector<std::string>& overrides,
                  std::vector<std::string> flags) {
    auto all = tokens;
    all.insert(all.end(), overrides.begin(), overrides.end());
    std::string tag = "eval.test.ctx" + std::to_string(context);
    std::vector<std::string> args{"eval", "--split", "test", "--context", std::to_string(context)};
    args.insert(args.end(), flags.begin(), flags.end());
    if (stride > 0) {
      args.insert(args.end(), {"--stride", std::to_string(stride)});
      tag += ".stride" + std::to_string(stride);
    }
    for (const auto& o : all) args.insert(args.end(), {"--set", o});
    return std::make_pair(args, tag + evaluation_tag(all));
  };
  for (auto c : asked.contexts.empty() ? std::vector<int64_t>{config_.data.context()} : asked.contexts) {
    if (longest > 0 && c > longest) continue;
    const auto n = std::to_string(c);
    {
      const auto [args, tag] = eval(c, 0, {}, {"--per-position"});
      out.push_back(
          {tag + ".json", args, {{"perplexity", "test_ppl@" + n}}, tag + ".items.tsv", tag + ".positions.csv", c});
    }
    const auto trained = config_.data.context();
    if (traits.scalable && position.scaling().type() == RopeScalingType::none && c > trained)
      for (const auto& scaling : asked.scalings) {  // the same run, scaled to this context
        char factor[32];
        std::snprintf(factor, sizeof factor, "%g", static_cast<double>(c) / static_cast<double>(trained));
        const auto [args, tag] = eval(
            c, 0, {"model.position.scaling.type=" + scaling, "model.position.scaling.factor=" + std::string(factor)},
            {});
        out.push_back(
            {tag + ".json", args, {{"perplexity", "test_ppl@" + n + "+" + scaling}}, tag + ".items.tsv", "", c});
      }
    for (auto s : asked.strides) {  // sliding windows; a stride of the context or more is the above
      if (s >= c) continue;
      const auto [args, tag] = eval(c, s, {}, {});
      out.push_back({tag + ".json",
                     args,
                     {{"perplexity", "test_ppl@" + n + "/" + std::to_string(s)}},
                     tag + ".items.tsv",
                     "",
                     c});
    }
  }
  if (asked.passkey) {  // retrieval at every length the model can take: a column per length
    const auto& grid = *asked.passkey;
    std::vector<std::string> args{"passkey", "eval"};
    for (auto& arg : passkey_eval_args(grid)) args.push_back(std::move(arg));
    AblationEval passkey{"passkey.json", args, {}, "", "", 0};
    for (auto l : grid.lengths)
      if (longest == 0 || passkey_context(l, grid.digits) <= longest)
        passkey.columns.push_back({"accuracy@" + std::to_string(l), "passkey@" + std::to_string(l)});
    out.push_back(std::move(passkey));
  }
  return out;
}

std::vector<PairedItems> LanguageModelTask::ablation_items(const std::string& run_dir,
                                                           const TestEvaluations& asked) const {
  std::vector<PairedItems> out;
  for (const auto& eval : ablation_evals(asked))
    if (!eval.items_file.empty())
      out.push_back({eval.columns[0].second, perplexity_metric(),
                     read_item_table(run_dir + "/" + eval.items_file, {"nll", "tokens"})});
  return out;
}

}  // namespace ropelab
