#pragma once
/// Language modelling: a decoder-only Transformer on plain text in chunks of
/// data.context tokens, continuing prompts with any search (evaluated by eval/window_perplexity.h).

#include "ropelab/task/task.h"

namespace ropelab {

class LanguageModelTask : public Task {
 public:
  using Task::Task;
  /// The first problem of the config's data section for this task (its task registry row).
  static SettingProblem data_problem(const Config& config);

  /// A LanguageModel as a TaskModel. Decoding inputs are Batch::target_in: EOS (the
  /// document boundary the model was trained with) followed by the prompt.
  class Model : public TaskModel {
   public:
    explicit Model(LanguageModel net) : net(std::move(net)) {}
    torch::nn::Module& module() const override { return *net.ptr(); }
    torch::Tensor hidden(const Batch& batch, int64_t outputs) const override {
      return net.ptr()->hidden(batch.target_in, nullptr, {}, outputs);
    }
    torch::Tensor project(const torch::Tensor& hidden) const override { return net.ptr()->embedding->logits(hidden); }
    Decoding start_decoding(const Batch& inputs, const DecodeOptions& options, bool use_cache) const override;
    LanguageModel net;
  };

  void tokenizer_texts(const std::function<void(const std::string&)>& emit) const override;
  std::string write_training_store(const Tokenizer& tokenizer, const std::string& path) const override;
  std::unique_ptr<TokenStore> open_training_store(const Tokenizer& tokenizer, const std::string& path) const override;
  std::vector<Example> read_examples(const std::string& path, const Tokenizer& tokenizer,
                                     int64_t* skipped = nullptr) const override;
  std::string describe_data(size_t train, const std::string& store_summary, size_t valid) const override;
  Batch collate(const ExampleSet& examples, const std::vector<size_t>& indices,
                const torch::Device& device) const override {
    return collate_lm(examples, indices, device);
  }
  std::shared_ptr<TaskModel> build_model(int64_t vocab_size) const override {
    return std::make_shared<Model>(LanguageModel(model_options(vocab_size)));
  }
  std::string model_noun() const override { return "language model"; }
  std::string decode_command() const override { return "generate"; }
  std::vector<std::string> decode_inputs(const std::string& path) const override;
  /// Each line is a prompt; the output is the prompt followed by its continuation.
  std::vector<std::string> decode_lines(const TaskModel& model, const Tokenizer& tokenizer,
                                        const std::vector<std::string>& lines, const DecodeRequest& request,
                                        const torch::Device& device, int64_t* truncated = nullptr) const override;
  /// The prompt's text, then each token's as it is chosen; only the current token and the
  /// model's caches are held, so a windowed model generates without end in bounded memory.
  bool stream_line(const TaskModel& model, const Tokenizer& tokenizer, const std::string& line,
                   const DecodeRequest& request, const torch::Device& device,
                   const std::function<bool(const std::string&)>& emit) const override;
};

}  // namespace ropelab
