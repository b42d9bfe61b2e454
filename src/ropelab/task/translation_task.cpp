#include "ropelab/task/translation_task.h"

#include <numeric>

namespace ropelab {

SettingProblem TranslationTask::data_problem(const Config& config) {
  const auto& data = config.data;
  if (data.format() == CorpusFormat::text)
    return {"data.format", "text", "holds no pairs for task translation (expected tsv or parallel)"};
  if (data.documents()) return {"data.documents", "true", "applies to language models (task lm)"};
  if (!data.retrieval().tasks().empty())
    return {"data.retrieval.tasks", data.retrieval().tasks(), "applies to language models (task lm)"};
  return {};
}

Positions encoder_positions(const Seq2Seq& model, const torch::Tensor& data_positions) {
  const int64_t axes = model->encoder->position()->axes();
  if (!data_positions.defined() || axes == 1) return {};
  TORCH_CHECK(data_positions.size(-1) == axes, "source positions have ", data_positions.size(-1),
              " coordinates; the encoder's position encoder takes ", axes);
  return {data_positions, axes};
}

// --- the model ----------------------------------------------------------------------

namespace {

/// Decoding a Seq2Seq model: the encoder's memory is computed once and kept per row.
class TranslationState : public TransformerDecoderState {
 public:
  TranslationState(Seq2Seq net, Memory memory, bool use_cache)
      : TransformerDecoderState(use_cache && net->decoder->decodes_incrementally()),
        net_(std::move(net)),
        memory_(std::move(memory)) {}

 private:
  torch::Tensor run(const torch::Tensor& tokens, DecoderCache* cache) override {
    return net_->decode(tokens, memory_, cache, {}, 1);
  }
  void select_inputs(const torch::Tensor& index) override { memory_ = memory_.index_select(index); }
  Seq2Seq net_;
  Memory memory_;
};

}  // namespace

torch::Tensor TranslationTask::Model::hidden(const Batch& batch, int64_t outputs) const {
  auto model = net;
  return model->decode_hidden(batch.target_in,
                              model->encode(batch.source, encoder_positions(model, batch.source_positions)), nullptr,
                              {}, outputs);
}

Decoding TranslationTask::Model::start_decoding(const Batch& inputs, const DecodeOptions& options,
                                                bool use_cache) const {
  auto model = net;
  const auto& source = inputs.source;  // (B, S)
  Decoding d;
  auto memory = model->encode(source, encoder_positions(model, inputs.source_positions));
  d.state = std::make_unique<TranslationState>(model, std::move(memory), use_cache);
  d.start =
      torch::full({source.size(0), 1}, kBosId, torch::TensorOptions().dtype(torch::kLong).device(source.device()));
  const auto lengths = source.ne(kPadId).sum(1).cpu();  // tokens + EOS
  const auto length = lengths.accessor<int64_t, 1>();
  for (int64_t b = 0; b < lengths.size(0); ++b) d.limits.push_back(max_output_length(options, length[b]));
  d.min_length = options.min_len();
  return d;
}

// --- data ----------------------------------------------------------------------------

void TranslationTask::tokenizer_texts(const std::function<void(const std::string&)>& emit) const {
  for_each_pair(config_.data, config_.data.train(), [&](std::string& src, std::string& tgt, int64_t) {
    emit(src);  // a joint source+target vocabulary
    emit(tgt);
  });
}

std::string TranslationTask::write_training_store(const Tokenizer& tokenizer, const std::string& path) const {
  int64_t empty = 0;
  const int64_t dropped = write_pair_store(config_.data, config_.data.train(), tokenizer, path, &empty);
  return "(" + std::to_string(dropped) + " over data.max_len=" + std::to_string(config_.data.max_len()) + " skipped, " +
         std::to_string(empty) + " with an empty side skipped)";
}

std::unique_ptr<TokenStore> TranslationTask::open_training_store(const Tokenizer& tokenizer,
                                                                 const std::string& path) const {
  return std::make_unique<TokenStore>(path, row_separator_id(config_.data, tokenizer));
}

std::vector<Example> TranslationTask::read_examples(const std::string& path, const Tokenizer& tokenizer,
                                                    int64_t* skipped) const {
  const auto pairs = read_parallel(config_.data, path);
  if (skipped) *skipped += pairs.skipped_empty;
  return tokenize_pairs(pairs, tokenizer, config_.data.max_len(), true, nullptr,
                        row_separator_id(config_.data, tokenizer));
}

std::string TranslationTask::describe_data(size_t train, const std::string& store_summary, size_t valid) const {
  return std::to_string(train) + " training pairs " + store_summary + ", " + std::to_string(valid) +
         " validation pairs";
}

// --- decoding and evaluation -----------------------------------------------------------

std::vector<std::string> TranslationTask::decode_lines(const TaskModel& model, const Tokenizer& tokenizer,
                                                       const std::vector<std::string>& lines,
                                                       const DecodeRequest& request, const torch::Device& device,
                                                       int64_t* truncated) const {
  const auto limit = static_cast<size_t>(config_.data.max_len() - 1);  // room for EOS
  const auto separator = row_separator_id(config_.data, tokenizer);
  std::vector<Example> examples;
  std::vector<size_t> line_of;  // examples[i] translates lines[line_of[i]]
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;  // empty lines stay empty
    auto ids = tokenizer.encode(lines[i]);
    if (ids.size() > limit) {
      ids.resize(limit);
      if (truncated) ++*truncated;
    }
    auto positions = separator >= 0 ? grid_positions(ids, separator) : std::vector<int64_t>{};
    examples.push_back({std::move(ids), {}, std::move(positions)});
    line_of.push_back(i);
  }
  // Sorted by length so batches carry little padding; the budget counts beams.
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return examples[a].source.size() < examples[b].source.size(); });
  const int64_t rows = request.search.sample ? 1 : request.search.decode.beam();
  const auto batches = pack_batches(
      order, [&](size_t i) { return examples[i].source.size() + 1; }, std::max<int64_t>(1, request.max_tokens / rows));
  std::vector<std::string> out(lines.size());
  for (const auto& batch : batches) {
    auto inputs = ropelab::collate(examples, batch, device);
    auto hyps = search(model.start_decoding(inputs, request.search.decode, request.use_cache), request.search);
    for (size_t k = 0; k < batch.size(); ++k) out[line_of[batch[k]]] = tokenizer.decode(hyps[k].tokens);
  }
  return out;
}

std::vector<std::string> TranslationTask::decode_inputs(const std::string& path) const {
  return read_parallel(config_.data, path).source;
}

}  // namespace ropelab
