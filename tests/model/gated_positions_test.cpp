// The gated positions inside attention, against references written from their definitions:
// the forget gate (Lin et al. 2025) and CoPE (Golovneva et al. 2024).
#include "../test_util.h"
#include "ropelab/model/transformer.h"

using namespace ropelab;
using ropelab::testing::central_difference;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class GatedPositions : public ropelab::testing::Seeded {};

}  // namespace

// The forget gate (Lin et al. 2025) against a reference written from its definition in
// double: per head f_l = sigmoid(w . x_l + b), query i and key j <= i get the logit bias
// sum_{l = j + 1}^{i} log f_l, summed here term by term.
TEST_F(GatedPositions, ForgetGateAddsTheLogGatesBetweenKeyAndQuery) {
  const int64_t B = 2, T = 7, D = 8, H = 2, Dh = D / H;
  MultiHeadAttention mha(MultiHeadAttentionOptions(D, H).forget_gate(true), nullptr);
  mha->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;  // gates well away from 1/2 and different per head
    mha->forget_gate->weight.normal_(0, 0.7);
    mha->forget_gate->bias.copy_(torch::tensor({1.5, -0.5}, torch::kDouble));
  }
  auto x = torch::randn({B, T, D}, torch::kDouble);
  AttentionCall call;
  call.causal = true;
  const auto out = mha(x, torch::Tensor(), call);

  const auto qkv = torch::linear(x, mha->in_proj_weight, mha->in_proj_bias);
  const auto f = torch::sigmoid(torch::linear(x, mha->forget_gate->weight, mha->forget_gate->bias));  // (B, T, H)
  auto expected = torch::zeros({B, T, D}, torch::kDouble);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const auto q = qkv[b][i].narrow(0, h * Dh, Dh);
        std::vector<double> logits;
        for (int64_t j = 0; j <= i; ++j) {
          const auto k = qkv[b][j].narrow(0, D + h * Dh, Dh);
          double bias = 0;
          for (int64_t l = j + 1; l <= i; ++l) bias += std::log(f[b][l][h].item<double>());
          logits.push_back((q * k).sum().item<double>() / std::sqrt(static_cast<double>(Dh)) + bias);
        }
        const auto p = torch::softmax(torch::tensor(logits, torch::kDouble), 0);
        for (int64_t j = 0; j <= i; ++j)
          expected[b][i].narrow(0, h * Dh, Dh) += p[j] * qkv[b][j].narrow(0, 2 * D + h * Dh, Dh);
      }
  expected = torch::linear(expected, mha->out_proj->weight, mha->out_proj->bias);
  EXPECT_LT(max_diff(out, expected), 1e-12);
  // the gate changes the output
  auto without = mha->forget_gate;
  {
    torch::NoGradGuard no_grad;
    without->weight.zero_();
    without->bias.fill_(40.0);  // f = 1 - 4e-18: log f is 0 in double
  }
  EXPECT_GT(max_diff(out, mha(x, torch::Tensor(), call)), 1e-3);
  EXPECT_NE(
      ropelab::testing::error_of([&] { mha(x, torch::Tensor(), AttentionCall()); }).find("needs causal self-attention"),
      std::string::npos);
}

// A language model with forget gates: its gates' gradients match finite differences, and
// windowed cached decoding (bounded caches, which keep the cumulative gate values of the
// kept keys) equals the windowed teacher-forced pass, also after a beam reorder.
TEST_F(GatedPositions, ForgetGateTrainsAndDecodesWithBoundedCaches) {
  auto options = tiny_options().decoder_position(PositionOptions().type(PositionType::none).forget_gate(true));
  {
    LanguageModel lm(
        tiny_options(11).d_model(8).d_ff(8).decoder_layers(1).decoder_position(options.decoder_position()));
    lm->to(torch::kDouble);
    const auto tokens = torch::tensor({{3, 4, 5, 6, 2}});
    const auto weights = torch::randn({1, 5, 11}, torch::kDouble);
    auto loss = [&] { return (lm(tokens) * weights).sum(); };
    loss().backward();
    auto& gate = lm->decoder->layers->at<TransformerLayerImpl>(0).self_attn->forget_gate;
    for (auto* p : {&gate->weight, &gate->bias}) {
      const double numeric = central_difference(*p, 1, loss);
      EXPECT_GT(std::abs(numeric), 1e-6);
      EXPECT_NEAR(p->grad().view(-1)[1].item<double>(), numeric, 1e-7 + 1e-6 * std::abs(numeric));
    }
  }
  options.attention(AttentionOptions().window(4).sinks(2));
  LanguageModel lm(options);
  lm->eval();
  auto tokens = torch::randint(1, options.vocab_size(), {2, 20});
  const auto full = lm(tokens);
  DecoderCache state;
  for (int64_t t = 0; t < 12; ++t) {
    EXPECT_LT(max_diff(lm(tokens.narrow(1, t, 1), &state), full.narrow(1, t, 1)), 1e-5) << "step " << t;
    for (const auto& cache : state.self)
      EXPECT_EQ(dynamic_cast<KeyValueCache&>(*cache).forget.size(2), std::min<int64_t>(t + 1, 2 + 4 - 1));
  }
  const auto swap = torch::tensor({1, 0});
  state.reorder(swap);
  const auto swapped = tokens.index_select(0, swap), swapped_full = lm(swapped);
  for (int64_t t = 12; t < 20; ++t)
    EXPECT_LT(max_diff(lm(swapped.narrow(1, t, 1), &state), swapped_full.narrow(1, t, 1)), 1e-5) << "step " << t;
}

// The forget gate's bias starts at forget_gate_bias in every layer (0 by default, as the
// authors' code), its weights at N(0, 0.02^2) whatever the bias.
TEST_F(GatedPositions, ForgetGateBiasStartsWhereAsked) {
  for (double bias : {0.0, 4.0}) {
    auto position = PositionOptions().type(PositionType::none).forget_gate(true);
    if (bias != 0) position.forget_gate_bias(bias);
    LanguageModel lm(tiny_options().d_model(64).heads(4).decoder_position(position));
    for (const auto& layer : *lm->decoder->layers) {
      const auto& gate = layer->as<TransformerLayerImpl>()->self_attn->forget_gate;
      EXPECT_TRUE(torch::equal(gate->bias, torch::full({4}, bias))) << bias;
      EXPECT_NEAR(gate->weight.std().item<double>(), 0.02, 0.004) << bias;
    }
  }
}

// CoPE (Golovneva et al. 2024) against a reference written from its definition in double:
// gates g_it = sigmoid(q_i . k_t / sqrt(Dh)), the position of key j for query i is
// p_ij = min(g_ij + ... + g_ii, P - 1), summed term by term, and E interpolated between the
// columns floor(p) and ceil(p) adds q_i . e(p_ij) / sqrt(Dh) to the logit. P = 3, so that
// rows of 7 tokens reach the cap.
TEST_F(GatedPositions, CopeCountsGatedKeysBetweenKeyAndQuery) {
  const int64_t B = 2, T = 7, D = 8, H = 2, Dh = D / H, P = 3;
  MultiHeadAttention mha(MultiHeadAttentionOptions(D, H).cope_positions(P), nullptr);
  mha->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    mha->cope_embedding.normal_(0, 1.0);
    mha->in_proj_weight.mul_(3.0);  // gates spread over (0, 1)
  }
  auto x = torch::randn({B, T, D}, torch::kDouble);
  AttentionCall call;
  call.causal = true;
  const auto out = mha(x, torch::Tensor(), call);

  const auto qkv = torch::linear(x, mha->in_proj_weight, mha->in_proj_bias);
  const auto E = mha->cope_embedding;
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  auto expected = torch::zeros({B, T, D}, torch::kDouble);
  bool capped = false;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const auto q = qkv[b][i].narrow(0, h * Dh, Dh);
        auto key = [&](int64_t j) { return qkv[b][j].narrow(0, D + h * Dh, Dh); };
        std::vector<double> logits;
        for (int64_t j = 0; j <= i; ++j) {
          double p = 0;
          for (int64_t t = j; t <= i; ++t) p += 1.0 / (1.0 + std::exp(-(q * key(t)).sum().item<double>() * scale));
          capped = capped || p > P - 1;
          p = std::min(p, static_cast<double>(P - 1));
          const int64_t lo = static_cast<int64_t>(std::floor(p)), hi = static_cast<int64_t>(std::ceil(p));
          const auto e = E.select(1, hi) * (p - lo) + E.select(1, lo) * (1 - p + lo);  // the paper's e[p]
          logits.push_back(((q * key(j)).sum().item<double>() + (q * e).sum().item<double>()) * scale);
        }
        const auto probs = torch::softmax(torch::tensor(logits, torch::kDouble), 0);
        for (int64_t j = 0; j <= i; ++j)
          expected[b][i].narrow(0, h * Dh, Dh) += probs[j] * qkv[b][j].narrow(0, 2 * D + h * Dh, Dh);
      }
  expected = torch::linear(expected, mha->out_proj->weight, mha->out_proj->bias);
  EXPECT_TRUE(capped);
  EXPECT_LT(max_diff(out, expected), 1e-12);
  {
    torch::NoGradGuard no_grad;
    mha->cope_embedding.zero_();
  }
  EXPECT_GT(max_diff(out, mha(x, torch::Tensor(), call)), 1e-3);  // the positions change the output
  EXPECT_NE(ropelab::testing::error_of([&] { mha(x, torch::Tensor(), AttentionCall()); }).find("needs causal"),
            std::string::npos);
}

// A language model with CoPE: the embeddings' and projections' gradients match finite
// differences, and windowed cached decoding (each new query counts over the kept keys)
// equals the windowed teacher-forced pass.
TEST_F(GatedPositions, CopeTrainsAndDecodes) {
  const auto position = PositionOptions().type(PositionType::none).cope(true).cope_positions(4);
  auto randomise = [](torch::nn::Module& model) {
    torch::NoGradGuard no_grad;
    for (auto& item : model.named_parameters())
      if (item.key().find("cope_embedding") != std::string::npos) item.value().normal_(0, 1.0);
  };
  {
    LanguageModel lm(tiny_options(11).d_model(8).d_ff(8).decoder_layers(1).decoder_position(position));
    lm->to(torch::kDouble);
    randomise(*lm);
    const auto tokens = torch::tensor({{3, 4, 5, 6, 2, 7}});
    const auto weights = torch::randn({1, 6, 11}, torch::kDouble);
    auto loss = [&] { return (lm(tokens) * weights).sum(); };
    loss().backward();
    auto& attention = *lm->decoder->layers->at<TransformerLayerImpl>(0).self_attn;
    for (auto* p : {&attention.cope_embedding, &attention.in_proj_weight})
      for (int64_t index : {int64_t{1}, int64_t{5}}) {
        const double numeric = central_difference(*p, index, loss);
        EXPECT_GT(std::abs(numeric), 1e-6);
        EXPECT_NEAR(p->grad().view(-1)[index].item<double>(), numeric, 1e-7 + 1e-6 * std::abs(numeric));
      }
  }
  auto options = tiny_options().decoder_position(position);
  options.attention(AttentionOptions().window(4).sinks(2));
  LanguageModel lm(options);
  randomise(*lm);
  lm->eval();
  auto tokens = torch::randint(1, options.vocab_size(), {2, 14});
  const auto full = lm(tokens);
  DecoderCache state;
  for (int64_t t = 0; t < 14; ++t)
    EXPECT_LT(max_diff(lm(tokens.narrow(1, t, 1), &state), full.narrow(1, t, 1)), 1e-5) << "step " << t;
}
