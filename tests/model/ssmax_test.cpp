// Scalable-Softmax (Nakanishi 2025; attention/ssmax.h) against a float64 reference written
// from its formula, softmax(s log n . q.k / sqrt(Dh)) over the n keys a query sees, in every
// kernel, with the gradients of s and of the projections; and cached decoding against
// recomputation.
#include "ropelab/attention/ssmax.h"

#include <cmath>

#include "../test_util.h"
#include "ropelab/model/transformer.h"

using namespace ropelab;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class Ssmax : public ropelab::testing::Seeded {};

/// The keys query i (token index) sees, counted one by one.
int64_t counted_keys(const KeyVisibility& vis, int64_t i) {
  int64_t n = 0;
  for (int64_t j = 0; j <= i; ++j) n += vis.visible(i, j) ? 1 : 0;
  return n;
}

/// Multi-head self-attention with SSMax in float64, term by term: for head h and query i,
/// logits s_h log(n_i) q_i.k_j / sqrt(Dh) over the keys j it sees, softmax, the values'
/// weighted sum, then the output projection. Every tensor is float64; s requires grad.
torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& w_in, const torch::Tensor& b_in,
                        const torch::Tensor& w_out, const torch::Tensor& b_out, const torch::Tensor& s,
                        const KeyVisibility& vis, int64_t heads) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), Dh = D / heads;
  const auto qkv = torch::linear(x, w_in, b_in);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<torch::Tensor> out_heads;
      for (int64_t h = 0; h < heads; ++h) {
        const auto q = qkv[b][i].narrow(0, h * Dh, Dh);
        const double log_n = std::log(static_cast<double>(counted_keys(vis, i)));
        std::vector<torch::Tensor> logits, values;
        for (int64_t j = 0; j <= i; ++j) {
          if (!vis.visible(i, j)) continue;
          logits.push_back(s[h] * log_n * (q * qkv[b][j].narrow(0, D + h * Dh, Dh)).sum() / std::sqrt(double(Dh)));
          values.push_back(qkv[b][j].narrow(0, 2 * D + h * Dh, Dh));
        }
        const auto p = torch::softmax(torch::stack(logits), 0);
        out_heads.push_back((p.unsqueeze(1) * torch::stack(values)).sum(0));
      }
      rows.push_back(torch::cat(out_heads));
    }
  return torch::linear(torch::stack(rows).view({B, T, D}), w_out, b_out);
}

}  // namespace

// log n in closed form against the keys counted one by one, with and without a window and
// sinks, from the first token and from a cache's offset.
TEST_F(Ssmax, KeyCountsAreTheKeysEachQuerySees) {
  for (const auto& vis : {KeyVisibility{true, 0, 0}, KeyVisibility{true, 4, 0}, KeyVisibility{true, 4, 2},
                          KeyVisibility{true, 3, 5}, KeyVisibility{true, 1, 1}})
    for (int64_t offset : {0, 7}) {
      const auto log_n = ssmax_log_key_counts(offset, 12, vis, torch::kCPU);
      for (int64_t i = 0; i < 12; ++i)
        EXPECT_EQ(std::lround(std::exp(log_n[i].item<double>())), counted_keys(vis, offset + i))
            << "window " << vis.window << " sinks " << vis.sinks << " token " << offset + i;
    }
}

// Every kernel, with and without a window and sinks: the output and the gradients of s, the
// input projection and x against the float64 reference; s set apart per head so that a mix-up
// of heads shows.
TEST_F(Ssmax, EveryKernelComputesTheFormulaAndItsGradients) {
  const int64_t B = 2, T = 9, D = 16, H = 2;
  for (auto kernel : {AttentionKernel::materialized, AttentionKernel::streaming, AttentionKernel::chunked})
    for (const auto& vis : {KeyVisibility{true, 0, 0}, KeyVisibility{true, 4, 2}}) {
      SCOPED_TRACE(to_string(kernel) + " window " + std::to_string(vis.window));
      const auto attention = AttentionOptions().kernel(kernel).window(vis.window).sinks(vis.sinks);
      MultiHeadAttention mha(MultiHeadAttentionOptions(D, H).attention(attention).ssmax(true).ssmax_init(0.43),
                             nullptr);
      {
        torch::NoGradGuard no_grad;
        mha->ssmax_scale.copy_(torch::tensor({0.9, 2.5}));
      }
      auto x = torch::randn({B, T, D}).requires_grad_();
      AttentionCall call;
      call.causal = true;
      call.ssmax_log_n = ssmax_log_key_counts(0, T, vis, torch::kCPU);
      const auto g = torch::randn({B, T, D});
      auto out = mha(x, torch::Tensor(), call);
      (out * g).sum().backward();

      auto as_double = [](const torch::Tensor& t) { return t.detach().to(torch::kDouble).requires_grad_(); };
      auto x64 = as_double(x), s64 = as_double(mha->ssmax_scale), w64 = as_double(mha->in_proj_weight);
      const auto expected = reference(x64, w64, mha->in_proj_bias.detach().to(torch::kDouble),
                                      mha->out_proj->weight.detach().to(torch::kDouble),
                                      mha->out_proj->bias.detach().to(torch::kDouble), s64, vis, H);
      (expected * g.to(torch::kDouble)).sum().backward();
      EXPECT_LT(max_diff(out.to(torch::kDouble), expected), 1e-5);
      EXPECT_LT(max_diff(mha->ssmax_scale.grad().to(torch::kDouble), s64.grad()), 1e-4);
      EXPECT_LT(max_diff(mha->in_proj_weight.grad().to(torch::kDouble), w64.grad()), 1e-4);
      EXPECT_LT(max_diff(x.grad().to(torch::kDouble), x64.grad()), 1e-4);
      EXPECT_GT(mha->ssmax_scale.grad().abs().min().item<double>(), 1e-3);  // each head's s moves in training
    }
}

// Another s gives another output (the scaling acts), and a call without log n, or outside
// causal attention, is refused.
TEST_F(Ssmax, ChangesAttentionAndNeedsItsKeyCounts) {
  MultiHeadAttention mha(MultiHeadAttentionOptions(8, 2).ssmax(true), nullptr);
  auto x = torch::randn({1, 6, 8});
  AttentionCall call;
  call.causal = true;
  call.ssmax_log_n = ssmax_log_key_counts(0, 6, KeyVisibility{true, 0, 0}, torch::kCPU);
  const auto with = mha(x, torch::Tensor(), call);
  {
    torch::NoGradGuard no_grad;
    mha->ssmax_scale.fill_(1.0 / std::log(6.0));  // s log n = 1 at the last query only
  }
  const auto unit = mha(x, torch::Tensor(), call);
  EXPECT_GT(max_diff(with, unit), 1e-3);
  AttentionCall without_counts;
  without_counts.causal = true;
  EXPECT_NE(ropelab::testing::error_of([&] { mha(x, torch::Tensor(), without_counts); }).find("SSMax: log n of 6"),
            std::string::npos);
  EXPECT_NE(ropelab::testing::error_of([&] {
              mha(x, torch::Tensor(), AttentionCall());
            }).find("SSMax: needs causal self-attention"),
            std::string::npos);
}

// A language model with SSMax (rotary, NoPE; with a window and sinks): cached decoding, one
// token at a time, equals recomputing the prefix at every step.
TEST_F(Ssmax, CachedDecodingEqualsRecomputation) {
  for (auto type : {PositionType::rotary, PositionType::none})
    for (int64_t window : {0, 4}) {
      auto options = tiny_options().decoder_position(PositionOptions().type(type).ssmax(true));
      options.attention(AttentionOptions().window(window).sinks(window > 0 ? 1 : 0));
      LanguageModel lm(options);
      lm->eval();
      const auto tokens = torch::randint(1, 23, {2, 10});
      DecoderCache cache;
      for (int64_t i = 0; i < tokens.size(1); ++i) {
        const auto step = lm(tokens.narrow(1, i, 1), &cache).squeeze(1);
        const auto full = lm(tokens.narrow(1, 0, i + 1)).select(1, i);
        EXPECT_LT(max_diff(step, full), 1e-5) << "step " << i << " window " << window;
      }
    }
}
