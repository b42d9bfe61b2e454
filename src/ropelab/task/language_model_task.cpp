#include "ropelab/task/language_model_task.h"

#include "ropelab/data/retrieval_mix.h"

namespace ropelab {

SettingProblem LanguageModelTask::data_problem(const Config& config) {
  const auto& data = config.data;
  if (data.format() != CorpusFormat::text)
    return {"data.format", to_string(data.format()), "cannot feed task lm (expected text)"};
  if (data.source_layout() != SourceLayout::sequence)
    return {"data.source_layout", to_string(data.source_layout()), "applies to translation sources only"};
  if (const auto mix = retrieval_mix_problem(data.retrieval()); !mix.key.empty())
    return {"data.retrieval." + mix.key, mix.value, mix.what};
  return {};
}

// --- the model ----------------------------------------------------------------------

namespace {

class LanguageModelState : public TransformerDecoderState {
 public:
  LanguageModelState(LanguageModel net, bool use_cache)
      : TransformerDecoderState(use_cache && net->decoder->decodes_incrementally()), net_(std::move(net)) {}

 private:
  torch::Tensor run(const torch::Tensor& tokens, DecoderCache* cache) override {
    return net_->forward(tokens, cache, {}, 1);
  }
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
  const auto& d = config_.data;
  std::unique_ptr<RetrievalMix> mix;  // retrieval documents of this seed's own
  if (!d.retrieval().tasks().empty())
    mix = std::make_unique<RetrievalMix>(d.retrieval(), d.train(), static_cast<uint64_t>(config_.train.seed()));
  const int64_t empty = write_lm_store(d.train(), tokenizer, d.context(), path, d.documents(), mix.get());
  return "(" + std::to_string(empty) + " empty lines skipped" + (mix ? "; " + mix->summary() : "") + ")";
}

std::unique_ptr<TokenStore> LanguageModelTask::open_training_store(const Tokenizer& tokenizer,
                                                                   const std::string& path) const {
  (void)tokenizer;
  return std::make_unique<TokenStore>(path);
}

std::vector<Example> LanguageModelTask::read_examples(const std::string& path, const Tokenizer& tokenizer,
                                                      int64_t* skipped) const {
  return lm_chunks(read_text_lines(path), tokenizer, config_.data.context(), skipped, config_.data.eval_tokens(),
                   config_.data.documents());
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

}  // namespace ropelab
