// Dynamic NTK per call (Peng et al. 2023, 3.3) in decoding: keys are cached before rotation
// and every step rotates them all at its own length. Checked against recomputation without
// a cache: for one layer the whole prefix's forward pass at every step; for two, the
// autoregressive form written out layer by layer (each token's outputs computed from its
// own prefix, every key of that prefix rotated at the prefix's length). A full window at
// factor 1 is static NTK at s = length / original_max.
#include "../test_util.h"
#include "ropelab/model/transformer.h"

using namespace ropelab;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class DynamicNtkDecoding : public ropelab::testing::Seeded {};

constexpr int64_t kOriginal = 4;  // original_max: the scale changes at every step past it

PositionOptions dynamic_ntk(DynamicLength length = DynamicLength::call) {
  return PositionOptions()
      .type(PositionType::rotary)
      .scaling(RopeScalingOptions().type(RopeScalingType::dynamic_ntk).original_max(kOriginal).dynamic(length));
}

/// The autoregressive form without a cache: layer by layer, token t's output is the layer's
/// output at t for the prefix 0 .. t alone (a call of t + 1 tokens: every query and key at
/// s = max(1, (t + 1) / original_max)), over the previous layer's outputs so computed.
torch::Tensor autoregressive_logits(LanguageModel& lm, const torch::Tensor& tokens) {
  auto h = lm->embedding(tokens);
  const int64_t length = tokens.size(1);
  for (const auto& module : *lm->decoder->layers) {
    auto layer = module->as<TransformerLayerImpl>();
    std::vector<torch::Tensor> rows;
    for (int64_t t = 0; t < length; ++t) {
      StackInputs in;
      in.positions = Positions::range(0, t + 1, 1, tokens.device());
      rows.push_back(layer->forward(h.narrow(1, 0, t + 1), in).narrow(1, t, 1));
    }
    h = torch::cat(rows, 1);
  }
  return lm->embedding->logits(h);
}

/// Logits of `tokens` decoded with a cache: the first `prompt` in one call, then one a step.
torch::Tensor cached_logits(LanguageModel& lm, const torch::Tensor& tokens, int64_t prompt) {
  DecoderCache state;
  std::vector<torch::Tensor> steps{lm(tokens.narrow(1, 0, prompt), &state)};
  for (int64_t t = prompt; t < tokens.size(1); ++t) steps.push_back(lm(tokens.narrow(1, t, 1), &state));
  return torch::cat(steps, 1);
}

}  // namespace

TEST_F(DynamicNtkDecoding, OneLayerDecodingEqualsTheWholePrefixAtEveryStep) {
  LanguageModel lm(tiny_options().decoder_layers(1).decoder_position(dynamic_ntk()));
  lm->eval();
  ASSERT_TRUE(lm->decoder->decodes_incrementally());
  auto tokens = torch::randint(1, 23, {2, 12});
  DecoderCache state;
  lm(tokens.narrow(1, 0, 2), &state);
  for (int64_t t = 2; t < 12; ++t)
    EXPECT_LT(max_diff(lm(tokens.narrow(1, t, 1), &state), lm(tokens.narrow(1, 0, t + 1)).narrow(1, t, 1)), 1e-5)
        << "step " << t;
  // the cache holds the keys as projected, before any rotation (post-LN: the layer's input is
  // the embedding itself; d_model 16, 2 heads of 8)
  const auto& cache = dynamic_cast<KeyValueCache&>(*state.self[0]);
  const auto& attention = lm->decoder->layers[0]->as<TransformerLayerImpl>()->self_attn;
  const auto projected = torch::linear(lm->embedding(tokens), attention->in_proj_weight.narrow(0, 16, 16),
                                       attention->in_proj_bias.narrow(0, 16, 16));
  EXPECT_LT(max_diff(cache.k, projected.unflatten(-1, {2, 8}).transpose(1, 2)), 1e-5);
}

TEST_F(DynamicNtkDecoding, DecodingEqualsTheAutoregressiveFormInEveryLayer) {
  LanguageModel lm(tiny_options().decoder_layers(2).decoder_position(dynamic_ntk()));
  lm->eval();
  auto tokens = torch::randint(1, 23, {2, 12});
  torch::NoGradGuard no_grad;
  const auto reference = autoregressive_logits(lm, tokens);
  EXPECT_LT(max_diff(cached_logits(lm, tokens, 2), reference), 1e-5);
  // within original_max every form is plain rotary; past it one call of the whole sequence
  // (every token at its length) differs, at its last token too: the second layer's keys
  // come from the first layer's outputs at another length
  EXPECT_LT(max_diff(lm(tokens.narrow(1, 0, kOriginal)), reference.narrow(1, 0, kOriginal)), 1e-5);
  EXPECT_GT(max_diff(lm(tokens).narrow(1, 11, 1), reference.narrow(1, 11, 1)), 1e-4);
  // and rotating the cached keys at their own step's length (per token) is another model
  LanguageModel per_token(tiny_options().decoder_layers(2).decoder_position(dynamic_ntk(DynamicLength::token)));
  per_token->eval();
  torch::nn::Module& target = *per_token;
  for (auto& p : target.named_parameters()) p.value().copy_(lm->named_parameters()[p.key()]);
  EXPECT_GT(max_diff(cached_logits(per_token, tokens, 2), reference), 1e-4);
}

// Factor 1 over a whole window of T tokens is static NTK at s = T / original_max.
TEST_F(DynamicNtkDecoding, AFullWindowIsStaticNtkAtTheWindowsRatio) {
  LanguageModel dynamic(tiny_options().decoder_position(dynamic_ntk()));
  auto fixed =
      PositionOptions()
          .type(PositionType::rotary)
          .scaling(RopeScalingOptions().type(RopeScalingType::ntk).factor(12.0 / kOriginal).original_max(kOriginal));
  LanguageModel ntk(tiny_options().decoder_position(fixed));
  dynamic->eval(), ntk->eval();
  torch::nn::Module& target = *ntk;
  torch::NoGradGuard no_grad;
  for (auto& p : target.named_parameters()) p.value().copy_(dynamic->named_parameters()[p.key()]);
  auto tokens = torch::randint(1, 23, {2, 12});
  EXPECT_LT(max_diff(dynamic(tokens), ntk(tokens)), 1e-5);
  EXPECT_GT(max_diff(dynamic(tokens.narrow(1, 0, 8)), ntk(tokens.narrow(1, 0, 8))), 1e-4);  // its own length
}

// Keys rotated at each step need every key kept: a window or the Performer decodes by
// recomputing the prefix, and a stack given a cache says so.
TEST_F(DynamicNtkDecoding, AWindowOrThePerformerRecomputesThePrefix) {
  auto windowed = tiny_options().decoder_position(dynamic_ntk());
  windowed.attention().window(3);
  auto performer = tiny_options().decoder_position(dynamic_ntk());
  performer.attention().type(AttentionType::performer);
  for (const auto& options : {windowed, performer}) {
    LanguageModel lm(options);
    lm->eval();
    EXPECT_FALSE(lm->decoder->decodes_incrementally());
    DecoderCache state;
    auto message = ropelab::testing::error_of([&] { lm(torch::tensor({{3, 4}}), &state); });
    EXPECT_NE(message.find("decode it by recomputing the prefix"), std::string::npos) << message;
  }
  LanguageModel plain(tiny_options().decoder_position(dynamic_ntk()));
  EXPECT_TRUE(plain->decoder->decodes_incrementally());
}
