#include "ropelab/decode/search.h"

#include "ropelab/data/tokenizer.h"

namespace ropelab {

int64_t max_output_length(const DecodeOptions& options, int64_t source_len) {
  return static_cast<int64_t>(options.max_len_a() * static_cast<double>(source_len)) + options.max_len_b();
}

namespace {
/// Each sentence's output length limit (from its non-pad source length) and the largest.
std::pair<std::vector<int64_t>, int64_t> sentence_limits(const DecodeOptions& options, const torch::Tensor& source) {
  auto lengths = source.ne(kPadId).sum(1).cpu();
  auto len = lengths.accessor<int64_t, 1>();
  std::vector<int64_t> limits(static_cast<size_t>(lengths.size(0)));
  int64_t longest = 0;
  for (int64_t b = 0; b < lengths.size(0); ++b) {
    limits[static_cast<size_t>(b)] = max_output_length(options, len[b]);
    longest = std::max(longest, limits[static_cast<size_t>(b)]);
  }
  return {limits, longest};
}
}  // namespace

std::vector<Hypothesis> greedy_search(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                      bool use_cache, const torch::Tensor& source_positions) {
  torch::NoGradGuard no_grad;
  const int64_t batch = source.size(0);
  const auto device = source.device();
  const auto [limits, limit] = sentence_limits(options, source);

  auto memory = model->encode(source, source_positions);
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
    auto best_of = best_cpu.accessor<float, 1>();
    auto next_of = next_cpu.accessor<int64_t, 1>();
    for (int64_t b = 0; b < batch; ++b) {
      if (done[static_cast<size_t>(b)]) continue;
      auto& h = out[static_cast<size_t>(b)];
      const int64_t token = next_of[b];
      h.score += best_of[b];
      if (token == kEosId || t + 1 >= limits[static_cast<size_t>(b)]) {
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

namespace ropelab {

double length_penalty(const DecodeOptions& options, int64_t length) {
  const double n = static_cast<double>(length);
  switch (options.lenpen_formula()) {
    case LengthPenalty::gnmt:
      return std::pow((5.0 + n) / 6.0, options.lenpen());
    case LengthPenalty::average:
      return std::pow(n, options.lenpen());
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled LengthPenalty");
}

std::vector<Hypothesis> translate_batch(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                        bool use_cache, const torch::Tensor& source_positions) {
  return options.beam() == 1 ? greedy_search(model, source, options, use_cache, source_positions)
                             : beam_search(model, source, options, use_cache, source_positions);
}

std::vector<Hypothesis> beam_search(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                    bool use_cache, const torch::Tensor& source_positions) {
  torch::NoGradGuard no_grad;
  const int64_t B = source.size(0), K = options.beam();
  const auto device = source.device();
  const auto [limits, limit] = sentence_limits(options, source);

  // Rows b*K .. b*K+K-1 hold sentence b's beams.
  auto expand = torch::arange(B, torch::TensorOptions().dtype(torch::kLong).device(device)).repeat_interleave(K);
  auto memory = model->encode(source, source_positions).index_select(expand);
  auto state = model->new_state();
  auto prefix = torch::full({B * K, 1}, kBosId, torch::TensorOptions().dtype(torch::kLong).device(device));
  // Only beam 0 is live at the start, so the first expansion does not repeat itself.
  std::vector<double> scores(static_cast<size_t>(B * K), -std::numeric_limits<double>::infinity());
  for (int64_t b = 0; b < B; ++b) scores[static_cast<size_t>(b * K)] = 0.0;
  std::vector<std::vector<int64_t>> beams(static_cast<size_t>(B * K));
  struct Finished {
    std::vector<int64_t> tokens;
    double score, normalized;
  };
  std::vector<std::vector<Finished>> finished(static_cast<size_t>(B));
  std::vector<bool> done(static_cast<size_t>(B), false);
  int64_t remaining = B;

  for (int64_t t = 0; t < limit && remaining > 0; ++t) {
    auto logits = use_cache ? model->decode(prefix.narrow(1, t, 1), memory, &state)
                            : model->decode(prefix, memory).narrow(1, t, 1);
    auto logp = torch::log_softmax(logits.squeeze(1).to(torch::kFloat), -1);  // (B*K, V)
    const int64_t V = logp.size(1);
    auto total = logp + torch::tensor(scores, torch::kDouble).to(device, torch::kFloat).unsqueeze(1);
    auto [top_scores, top_index] = total.view({B, K * V}).topk(2 * K, 1);  // (B, 2K)
    top_scores = top_scores.to(torch::kDouble).cpu();
    top_index = top_index.cpu();
    auto ts = top_scores.accessor<double, 2>();
    auto ti = top_index.accessor<int64_t, 2>();

    std::vector<int64_t> select(static_cast<size_t>(B * K)), next_token(static_cast<size_t>(B * K), kPadId);
    std::vector<double> next_scores(static_cast<size_t>(B * K), -std::numeric_limits<double>::infinity());
    std::vector<std::vector<int64_t>> next_beams(static_cast<size_t>(B * K));
    for (int64_t b = 0; b < B; ++b) {
      const auto ub = static_cast<size_t>(b);
      int64_t live = 0;
      if (!done[ub]) {
        const bool at_limit = t + 1 >= limits[ub];
        for (int64_t c = 0; c < 2 * K && live < K; ++c) {
          if (std::isinf(ts[b][c])) break;
          const int64_t beam = ti[b][c] / V, token = ti[b][c] % V;
          const auto& history = beams[static_cast<size_t>(b * K + beam)];
          if (token == kEosId) {
            finished[ub].push_back({history, ts[b][c],
                                    ts[b][c] / length_penalty(options, static_cast<int64_t>(history.size()) + 1)});
            if (static_cast<int64_t>(finished[ub].size()) >= K) break;
            continue;
          }
          const auto row = static_cast<size_t>(b * K + live);
          select[row] = b * K + beam;
          next_token[row] = token;
          next_scores[row] = ts[b][c];
          next_beams[row] = history;
          next_beams[row].push_back(token);
          if (at_limit)  // completed without EOS at the length limit
            finished[ub].push_back({next_beams[row], ts[b][c],
                                    ts[b][c] / length_penalty(options, static_cast<int64_t>(next_beams[row].size()))});
          ++live;
        }
        if (static_cast<int64_t>(finished[ub].size()) >= K || at_limit || live == 0) done[ub] = true, --remaining;
      }
      for (int64_t k = live; k < K; ++k) select[static_cast<size_t>(b * K + k)] = b * K;  // idle rows
    }
    auto index = torch::tensor(select, torch::kLong).to(device);
    prefix = torch::cat({prefix.index_select(0, index), torch::tensor(next_token, torch::kLong).to(device).unsqueeze(1)}, 1);
    if (use_cache) state.reorder(index);
    scores = std::move(next_scores);
    beams = std::move(next_beams);
  }

  std::vector<Hypothesis> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& f = finished[static_cast<size_t>(b)];
    if (f.empty()) continue;  // only when the limit is 0
    const auto best = std::max_element(f.begin(), f.end(), [](const auto& x, const auto& y) {
      return x.normalized < y.normalized;
    });
    out[static_cast<size_t>(b)] = {best->tokens, best->score};
  }
  return out;
}

Hypothesis generate(LanguageModel& model, const std::vector<int64_t>& prompt, const GenerateOptions& options) {
  torch::NoGradGuard no_grad;
  const auto device = model->embedding->weight.device();
  std::vector<int64_t> context{kEosId};
  context.insert(context.end(), prompt.begin(), prompt.end());
  auto state = model->new_state();
  auto input = torch::tensor(context, torch::kLong).unsqueeze(0).to(device);
  Hypothesis out;
  for (int64_t t = 0; t < options.max_tokens; ++t) {
    auto logits = model->forward(input, &state).select(1, -1).squeeze(0).to(torch::kDouble);  // (V)
    auto logp = torch::log_softmax(logits, -1);
    int64_t next;
    if (options.temperature <= 0) {
      next = logp.argmax().item<int64_t>();
    } else {
      auto scaled = logits / options.temperature;
      if (options.top_k > 0 && options.top_k < scaled.size(0)) {
        auto kth = std::get<0>(scaled.topk(options.top_k)).min();
        scaled = scaled.masked_fill(scaled.lt(kth), -std::numeric_limits<double>::infinity());
      }
      next = torch::multinomial(torch::softmax(scaled, -1), 1).item<int64_t>();
    }
    out.score += logp[next].item<double>();
    if (next == kEosId) break;
    out.tokens.push_back(next);
    input = torch::full({1, 1}, next, torch::TensorOptions().dtype(torch::kLong).device(device));
  }
  return out;
}

}  // namespace ropelab
