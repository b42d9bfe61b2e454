#include "ropelab/decode/search.h"

#include "ropelab/data/tokenizer.h"

namespace ropelab {

int64_t max_output_length(const DecodeOptions& options, int64_t source_len) {
  return static_cast<int64_t>(options.max_len_a() * static_cast<double>(source_len)) + options.max_len_b();
}

std::vector<Hypothesis> greedy_search(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                      bool use_cache) {
  torch::NoGradGuard no_grad;
  const int64_t batch = source.size(0);
  const auto device = source.device();
  auto source_len = source.ne(kPadId).sum(1).cpu();
  const int64_t limit = max_output_length(options, source_len.max().item<int64_t>());
  auto limits = (source_len.to(torch::kDouble) * options.max_len_a()).to(torch::kLong) + options.max_len_b();

  auto memory = model->encode(source);
  auto state = model->new_state();
  auto prefix = torch::full({batch, 1}, kBosId, torch::TensorOptions().dtype(torch::kLong).device(device));
  std::vector<Hypothesis> out(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch), false);
  int64_t remaining = batch;
  for (int64_t t = 0; t < limit && remaining > 0; ++t) {
    torch::Tensor logits = use_cache ? model->decode(prefix.narrow(1, t, 1), memory, &state)
                                     : model->decode(prefix, memory).narrow(1, t, 1);
    auto logp = torch::log_softmax(logits.squeeze(1).to(torch::kFloat), -1);  // (B, V)
    auto [best, next] = logp.max(-1);
    auto best_cpu = best.cpu();
    auto next_cpu = next.cpu();
    for (int64_t b = 0; b < batch; ++b) {
      if (done[static_cast<size_t>(b)]) continue;
      auto& h = out[static_cast<size_t>(b)];
      const auto token = next_cpu[b].item<int64_t>();
      h.score += best_cpu[b].item<double>();
      if (token == kEosId || t + 1 >= limits[b].item<int64_t>()) {
        done[static_cast<size_t>(b)] = true;
        --remaining;
        if (token != kEosId) h.tokens.push_back(token);
      } else {
        h.tokens.push_back(token);
      }
    }
    prefix = torch::cat({prefix, next.unsqueeze(1)}, 1);
  }
  return out;
}

}  // namespace ropelab
