#include "ropelab/decode/search.h"

#include <limits>

#include "ropelab/data/tokenizer.h"

namespace ropelab {

// --- decoder state over a Transformer -------------------------------------------------

torch::Tensor TransformerDecoderState::step(const torch::Tensor& tokens) {
  if (use_cache_) return run(tokens, &cache_).select(1, -1);  // (R, T, V) -> (R, V)
  prefix_ = prefix_.defined() ? torch::cat({prefix_, tokens}, 1) : tokens;
  return run(prefix_, nullptr).select(1, -1);
}

void TransformerDecoderState::select(const torch::Tensor& index) {
  if (prefix_.defined()) prefix_ = prefix_.index_select(0, index);
  if (use_cache_) cache_.reorder(index);
  select_inputs(index);
}

// --- limits and penalties ----------------------------------------------------------------

int64_t max_output_length(const DecodeOptions& options, int64_t input_len) {
  return static_cast<int64_t>(options.max_len_a() * static_cast<double>(input_len)) + options.max_len_b();
}

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

namespace {

/// Log-probabilities (R, V) renormalised without EOS (before the minimum length).
torch::Tensor without_eos(const torch::Tensor& logp) {
  return torch::log_softmax(
      logp.index_fill(1, torch::tensor({kEosId}, logp.device()), -std::numeric_limits<float>::infinity()), -1);
}

int64_t longest(const std::vector<int64_t>& limits) {
  return limits.empty() ? 0 : *std::max_element(limits.begin(), limits.end());
}

torch::Tensor long_tensor(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kLong).to(device);
}

/// One token per row per step, chosen by `pick` from the rows' log-probabilities (R, V)
/// -> (R) token ids; finished rows keep being fed EOS and are ignored. With a sink the
/// tokens go to it instead of the hypotheses.
template <typename Pick>
std::vector<Hypothesis> token_by_token(Decoding d, const TokenSink& sink, Pick&& pick) {
  torch::NoGradGuard no_grad;
  const auto rows = static_cast<size_t>(d.start.size(0));
  TORCH_CHECK(d.limits.size() == rows, "search: ", d.limits.size(), " limits for ", rows, " rows");
  std::vector<Hypothesis> out(rows);
  std::vector<bool> done(rows, false);
  size_t remaining = rows;
  auto input = d.start;
  for (int64_t t = 0; t < longest(d.limits) && remaining > 0; ++t) {
    auto logp = torch::log_softmax(d.state->step(input).to(torch::kFloat), -1);  // (R, V)
    if (t < d.min_length) logp = without_eos(logp);
    const torch::Tensor next = pick(logp);  // (R)
    const torch::Tensor chosen = logp.gather(1, next.unsqueeze(1)).squeeze(1).cpu();
    const torch::Tensor next_cpu = next.cpu();
    auto token_of = next_cpu.accessor<int64_t, 1>();
    auto score_of = chosen.accessor<float, 1>();
    bool stop = false;  // the sink asked to
    for (size_t r = 0; r < rows; ++r) {
      if (done[r]) continue;
      const auto i = static_cast<int64_t>(r);
      auto& h = out[r];
      h.score += score_of[i];
      const bool eos = token_of[i] == kEosId;
      if (!eos && !sink) h.tokens.push_back(token_of[i]);
      if (!eos && sink && !stop) stop = !sink(i, token_of[i]);
      if (eos || t + 1 >= d.limits[r]) done[r] = true, --remaining;
    }
    if (stop) break;
    input = next.unsqueeze(1);
  }
  return out;
}

}  // namespace

std::vector<Hypothesis> greedy_search(Decoding decoding, const TokenSink& sink) {
  return token_by_token(std::move(decoding), sink, [](const torch::Tensor& logp) { return logp.argmax(-1); });
}

std::vector<Hypothesis> sample_search(Decoding decoding, const SamplingOptions& o, const TokenSink& sink) {
  TORCH_CHECK(o.temperature() > 0, "sampling: temperature must be positive, got ", o.temperature());
  TORCH_CHECK(o.top_p() > 0 && o.top_p() <= 1, "sampling: top_p must be in (0, 1], got ", o.top_p());
  const double minus_inf = -std::numeric_limits<double>::infinity();
  return token_by_token(std::move(decoding), sink, [&](const torch::Tensor& logp) {
    auto scaled = logp / o.temperature();  // (R, V)
    if (o.top_k() > 0 && o.top_k() < scaled.size(1)) {
      auto kth = std::get<0>(scaled.topk(o.top_k(), 1)).select(1, -1).unsqueeze(1);
      scaled = scaled.masked_fill(scaled < kth, minus_inf);
    }
    if (o.top_p() < 1) {
      // keep the likeliest tokens until their probability reaches top_p (the first always)
      auto [sorted, order] = scaled.sort(1, /*descending=*/true);
      auto before = torch::softmax(sorted, 1).cumsum(1) - torch::softmax(sorted, 1);  // mass ahead of each
      sorted = sorted.masked_fill(before >= o.top_p(), minus_inf);
      scaled = torch::full_like(scaled, minus_inf).scatter(1, order, sorted);
    }
    return torch::multinomial(torch::softmax(scaled, 1), 1).squeeze(1);
  });
}

namespace {

/// A live hypothesis of beam search.
struct Beam {
  std::vector<int64_t> tokens;
  double score = -std::numeric_limits<double>::infinity();  // -inf: an idle row
};

/// A completed hypothesis with its length-normalised score.
struct Finished {
  std::vector<int64_t> tokens;
  double score, normalized;
};

/// One input row's search: its K live beams (rows b*K .. b*K+K-1 of the state) and what
/// has finished.
struct RowSearch {
  int64_t limit = 0;
  std::vector<Finished> finished;
  bool done = false;
};

}  // namespace

std::vector<Hypothesis> beam_search(Decoding d, const DecodeOptions& options) {
  torch::NoGradGuard no_grad;
  const int64_t B = d.start.size(0), K = options.beam();
  const auto device = d.start.device();
  TORCH_CHECK(static_cast<int64_t>(d.limits.size()) == B, "beam search: ", d.limits.size(), " limits for ", B, " rows");
  std::vector<RowSearch> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) rows[static_cast<size_t>(b)].limit = d.limits[static_cast<size_t>(b)];
  // Row b's beams are state rows b*K .. b*K+K-1. Only beam 0 is live at the start, so the
  // first expansion does not repeat itself.
  auto expand = torch::arange(B, torch::TensorOptions().dtype(torch::kLong).device(device)).repeat_interleave(K);
  d.state->select(expand);
  auto input = d.start.index_select(0, expand);
  std::vector<Beam> beams(static_cast<size_t>(B * K));
  for (int64_t b = 0; b < B; ++b) beams[static_cast<size_t>(b * K)].score = 0.0;
  int64_t remaining = B;
  auto finish = [&](RowSearch& row, std::vector<int64_t> tokens, double score, int64_t length) {
    row.finished.push_back({std::move(tokens), score, score / length_penalty(options, length)});
  };

  for (int64_t t = 0; t < longest(d.limits) && remaining > 0; ++t) {
    auto logp = torch::log_softmax(d.state->step(input).to(torch::kFloat), -1);  // (B*K, V)
    if (t < d.min_length) logp = without_eos(logp);
    const int64_t V = logp.size(1);
    std::vector<double> scores;
    for (const auto& beam : beams) scores.push_back(beam.score);
    auto total = logp + torch::tensor(scores, torch::kDouble).to(device, torch::kFloat).unsqueeze(1);
    auto [top_scores, top_index] = total.view({B, K * V}).topk(2 * K, 1);  // (B, 2K)
    top_scores = top_scores.to(torch::kDouble).cpu();
    top_index = top_index.cpu();
    auto ts = top_scores.accessor<double, 2>();
    auto ti = top_index.accessor<int64_t, 2>();

    std::vector<int64_t> select(static_cast<size_t>(B * K)), next_token(static_cast<size_t>(B * K), kPadId);
    std::vector<Beam> next(static_cast<size_t>(B * K));
    for (int64_t b = 0; b < B; ++b) {
      auto& row = rows[static_cast<size_t>(b)];
      int64_t live = 0;
      if (!row.done) {
        const bool at_limit = t + 1 >= row.limit;
        for (int64_t c = 0; c < 2 * K && live < K; ++c) {
          if (std::isinf(ts[b][c])) break;
          const int64_t beam = ti[b][c] / V, token = ti[b][c] % V;
          const auto& history = beams[static_cast<size_t>(b * K + beam)].tokens;
          if (token == kEosId) {
            finish(row, history, ts[b][c], static_cast<int64_t>(history.size()) + 1);
            if (static_cast<int64_t>(row.finished.size()) >= K) break;
            continue;
          }
          const auto r = static_cast<size_t>(b * K + live);
          select[r] = b * K + beam;
          next_token[r] = token;
          next[r] = {history, ts[b][c]};
          next[r].tokens.push_back(token);
          // completed without EOS at the length limit
          if (at_limit) finish(row, next[r].tokens, ts[b][c], static_cast<int64_t>(next[r].tokens.size()));
          ++live;
        }
        if (static_cast<int64_t>(row.finished.size()) >= K || at_limit || live == 0) row.done = true, --remaining;
      }
      for (int64_t k = live; k < K; ++k) select[static_cast<size_t>(b * K + k)] = b * K;  // idle rows
    }
    d.state->select(long_tensor(select, device));
    input = long_tensor(next_token, device).unsqueeze(1);
    beams = std::move(next);
  }

  std::vector<Hypothesis> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& f = rows[static_cast<size_t>(b)].finished;
    if (f.empty()) continue;  // only when the limit is 0
    const auto best =
        std::max_element(f.begin(), f.end(), [](const auto& x, const auto& y) { return x.normalized < y.normalized; });
    out[static_cast<size_t>(b)] = {best->tokens, best->score};
  }
  return out;
}

std::vector<Hypothesis> search(Decoding decoding, const SearchOptions& options, const TokenSink& sink) {
  if (options.sample) return sample_search(std::move(decoding), options.sampling, sink);
  if (options.decode.beam() == 1) return greedy_search(std::move(decoding), sink);
  auto out = beam_search(std::move(decoding), options.decode);
  if (sink) {
    bool more = true;
    for (size_t r = 0; r < out.size(); ++r) {
      for (size_t t = 0; more && t < out[r].tokens.size(); ++t) more = sink(static_cast<int64_t>(r), out[r].tokens[t]);
      out[r].tokens.clear();
    }
  }
  return out;
}

}  // namespace ropelab
