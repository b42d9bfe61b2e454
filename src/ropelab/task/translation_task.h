#pragma once
/// Translation (Vaswani et al. 2017): an encoder-decoder Seq2Seq model on parallel text,
/// decoded by any search (evaluated by eval/translation_quality.h).

#include "ropelab/task/task.h"

namespace ropelab {

class TranslationTask : public Task {
 public:
  using Task::Task;
  /// The first problem of the config's data section for this task (its task registry row).
  static SettingProblem data_problem(const Config& config);

  /// A Seq2Seq model as a TaskModel. Decoding inputs are Batch::source (and
  /// source_positions in the grid layout).
  class Model : public TaskModel {
   public:
    explicit Model(Seq2Seq net) : net(std::move(net)) {}
    torch::nn::Module& module() const override { return *net.ptr(); }
    torch::Tensor hidden(const Batch& batch, int64_t outputs) const override;
    torch::Tensor project(const torch::Tensor& hidden) const override { return net.ptr()->embedding->logits(hidden); }
    Decoding start_decoding(const Batch& inputs, const DecodeOptions& options, bool use_cache) const override;
    Seq2Seq net;
  };

  void tokenizer_texts(const std::function<void(const std::string&)>& emit) const override;
  std::string write_training_store(const Tokenizer& tokenizer, const std::string& path) const override;
  std::unique_ptr<TokenStore> open_training_store(const Tokenizer& tokenizer, const std::string& path) const override;
  std::vector<Example> read_examples(const std::string& path, const Tokenizer& tokenizer,
                                     int64_t* skipped = nullptr) const override;
  std::string describe_data(size_t train, const std::string& store_summary, size_t valid) const override;
  Batch collate(const ExampleSet& examples, const std::vector<size_t>& indices,
                const torch::Device& device) const override {
    return ropelab::collate(examples, indices, device);
  }
  std::shared_ptr<TaskModel> build_model(int64_t vocab_size) const override {
    return std::make_shared<Model>(Seq2Seq(model_options(vocab_size)));
  }
  std::string model_noun() const override { return "translator"; }
  std::string decode_command() const override { return "translate"; }
  std::vector<std::string> decode_inputs(const std::string& path) const override;
  std::vector<std::string> decode_lines(const TaskModel& model, const Tokenizer& tokenizer,
                                        const std::vector<std::string>& lines, const DecodeRequest& request,
                                        const torch::Device& device, int64_t* truncated = nullptr) const override;
};

/// Source coordinates for `model`'s encoder: the data's N-d positions when its position
/// encoder has N axes (N > 1), else undefined (token order).
Positions encoder_positions(const Seq2Seq& model, const torch::Tensor& data_positions);

}  // namespace ropelab
