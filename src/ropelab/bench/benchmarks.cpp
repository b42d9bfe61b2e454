#include "ropelab/bench/benchmarks.h"

#include "ropelab/data/corpus.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/train/run.h"
#include "ropelab/train/trainer.h"

#include <torch/csrc/autograd/profiler_legacy.h>


namespace ropelab {

namespace detail {
void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}
}  // namespace detail

TrainBenchResult bench_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device) {
  torch::manual_seed(static_cast<uint64_t>(config.train.seed()));
  auto model = build_model(config, options.vocab_size);
  model->to(device);
  model->train();
  TrainBenchResult result;
  for (const auto& p : model->parameters()) result.parameters += p.numel();
  const auto& t = config.train;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(t.lr())
                                                        .betas({t.adam_beta1(), t.adam_beta2()})
                                                        .eps(t.adam_eps())
                                                        .weight_decay(t.weight_decay()));
  // Fixed-shape batch of ordinary tokens (no padding): source and target of `length` tokens.
  auto random_tokens = [&] {
    return torch::randint(kEosId + 1, options.vocab_size, {options.batch, options.length}, torch::kLong).to(device);
  };
  Batch batch;
  batch.source = random_tokens();
  batch.target_in = random_tokens();
  batch.target_out = random_tokens();
  batch.target_tokens = options.batch * options.length;
  batch.sentences = options.batch;
  const std::vector<Batch> batches = {batch};
  int64_t step = 0;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profiler;
  if (!options.profile.empty()) {
    for (int64_t i = 0; i < options.warmup; ++i)
      update_step(model, optimizer, batches, t, learning_rate(t, config.model.d_model(), ++step));
    profiler = std::make_unique<torch::autograd::profiler::RecordProfile>(options.profile);
  }
  result.step = time_repeats([&] { update_step(model, optimizer, batches, t, learning_rate(t, config.model.d_model(), ++step)); },
                             options.warmup, options.steps, device);
  result.target_tokens_per_second = static_cast<double>(batch.target_tokens) / result.step.median;
  return result;
}

}  // namespace ropelab
