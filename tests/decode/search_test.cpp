// Decoding: cached and uncached decoding agree, limits hold.
#include "ropelab/decode/search.h"

#include <type_traits>

#include "../test_util.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/task/language_model_task.h"
#include "ropelab/task/translation_task.h"

using namespace ropelab;
using ropelab::testing::tiny_options;

namespace {
class Decode : public ropelab::testing::Seeded {};

/// Starts decoding `inputs` with `net` as its task's model: sources (B, S) for a
/// translator, prompts (1, P) that begin with EOS for a language model.
template <class Net>
Decoding start(const Net& net, const torch::Tensor& inputs, const DecodeOptions& options, bool use_cache = true) {
  Batch batch;
  if constexpr (std::is_same_v<Net, Seq2Seq>) {
    batch.source = inputs;
    return TranslationTask::Model(net).start_decoding(batch, options, use_cache);
  } else {
    batch.target_in = inputs;
    return LanguageModelTask::Model(net).start_decoding(batch, options, use_cache);
  }
}
}  // namespace

TEST_F(Decode, GreedyWithCacheEqualsRecomputingThePrefix) {
  // every encoder that a translator's bidirectional encoder stack takes over a sequence
  for (auto type : position_types([](const PositionTraits& t) { return !t.causal_only && !t.multi_axis; })) {
    Seq2Seq model(
        tiny_options().encoder_position(PositionOptions().type(type)).decoder_position(PositionOptions().type(type)));
    model->eval();
    auto src = torch::tensor({{5, 6, 7, 8, 3, 0}, {9, 10, 11, 12, 13, 3}});  // 3 = EOS, 0 = pad
    auto options = DecodeOptions().beam(1).max_len_a(0).max_len_b(12);
    auto cached = greedy_search(start(model, src, options, true));
    auto full = greedy_search(start(model, src, options, false));
    ASSERT_EQ(cached.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(cached[i].tokens, full[i].tokens);
      EXPECT_NEAR(cached[i].score, full[i].score, 1e-4);
      EXPECT_LE(cached[i].tokens.size(), 12u);
    }
  }
}

TEST_F(Decode, MaxLengthIsLinearInTheSource) {
  auto o = DecodeOptions().max_len_a(1.5).max_len_b(10);
  EXPECT_EQ(max_output_length(o, 0), 10);
  EXPECT_EQ(max_output_length(o, 20), 40);
}

TEST_F(Decode, BeamOneEqualsGreedy) {
  Seq2Seq model(tiny_options());
  model->eval();
  auto src = torch::randint(4, 23, {5, 7});
  auto options = DecodeOptions().beam(1).max_len_a(1.0).max_len_b(3);
  auto greedy = greedy_search(start(model, src, options));
  auto beam = beam_search(start(model, src, options), options);
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(beam[i].tokens, greedy[i].tokens) << "sentence " << i;
    EXPECT_NEAR(beam[i].score, greedy[i].score, 1e-4);
  }
}

TEST_F(Decode, BeamWithCacheEqualsRecomputingThePrefix) {
  for (auto type : {PositionType::learned, PositionType::t5_bias, PositionType::rotary}) {
    Seq2Seq model(
        tiny_options().encoder_position(PositionOptions().type(type)).decoder_position(PositionOptions().type(type)));
    model->eval();
    auto src = torch::randint(4, 23, {3, 6});
    auto options = DecodeOptions().beam(4).max_len_a(1.0).max_len_b(4);
    auto cached = beam_search(start(model, src, options, true), options);
    auto full = beam_search(start(model, src, options, false), options);
    for (size_t i = 0; i < cached.size(); ++i) {
      EXPECT_EQ(cached[i].tokens, full[i].tokens);
      EXPECT_NEAR(cached[i].score, full[i].score, 1e-4);
    }
  }
}

TEST_F(Decode, LengthPenaltyFormulas) {
  auto gnmt = DecodeOptions().lenpen(0.6).lenpen_formula(LengthPenalty::gnmt);
  EXPECT_NEAR(length_penalty(gnmt, 7), std::pow(12.0 / 6.0, 0.6), 1e-12);
  auto average = DecodeOptions().lenpen(0.6).lenpen_formula(LengthPenalty::average);
  EXPECT_NEAR(length_penalty(average, 7), std::pow(7.0, 0.6), 1e-12);
  EXPECT_NEAR(length_penalty(average.lenpen(0.0), 7), 1.0, 1e-12);
}

// One search serves the language model: beams with the cache equal beams recomputing the
// prefix, for every kind of position encoder, every RoPE scaling and both attention
// backends (dynamic NTK, whose base changes past original_max = 4 tokens, recomputes).
TEST_F(Decode, LanguageModelBeamWithCacheEqualsRecomputingThePrefix) {
  const auto prompt = torch::tensor({{3, 5, 6, 7}});
  const auto options = DecodeOptions().beam(3).max_len_a(0).max_len_b(6);
  std::vector<PositionOptions> encoders;
  for (auto type : position_types([](const PositionTraits& t) { return !t.multi_axis; }))
    encoders.push_back(PositionOptions().type(type));
  for (auto scaling :
       {RopeScalingType::linear, RopeScalingType::ntk, RopeScalingType::dynamic_ntk, RopeScalingType::yarn})
    encoders.push_back(PositionOptions()
                           .type(PositionType::rotary)
                           .scaling(RopeScalingOptions().type(scaling).factor(4).original_max(4)));
  for (auto attention : {AttentionType::softmax, AttentionType::performer})
    for (const auto& position : encoders) {
      auto model_options = tiny_options().decoder_position(position).attention(
          AttentionOptions().type(attention).num_features(16).chunk_size(2));
      const auto name = to_string(position.type()) + "/" + to_string(position.scaling().type());
      if (attention == AttentionType::performer &&
          make_position_encoder(position, PositionGeometry{16, 2, true})->has_logit_bias())
        continue;  // rejected by config
      SCOPED_TRACE(name + " / " + to_string(attention));
      LanguageModel model(model_options);
      model->eval();
      auto cached = beam_search(start(model, prompt, options, true), options);
      auto full = beam_search(start(model, prompt, options, false), options);
      ASSERT_EQ(cached.size(), 1u);
      EXPECT_EQ(cached[0].tokens, full[0].tokens);
      EXPECT_NEAR(cached[0].score, full[0].score, 1e-3);
      EXPECT_LE(cached[0].tokens.size(), 6u);
      // beam 1 is greedy
      auto greedy = greedy_search(start(model, prompt, options));
      auto beam1 = beam_search(start(model, prompt, DecodeOptions(options).beam(1)), DecodeOptions(options).beam(1));
      EXPECT_EQ(greedy[0].tokens, beam1[0].tokens);
    }
}

// Sampling restricted to the likeliest token (top-k 1, or a nucleus of nearly nothing) is
// greedy decoding; a fixed seed gives the same sample.
TEST_F(Decode, SamplingNarrowedToOneTokenIsGreedyAndSeedsRepeat) {
  Seq2Seq model(tiny_options());
  model->eval();
  auto src = torch::randint(4, 23, {3, 6});
  const auto options = DecodeOptions().max_len_a(1.0).max_len_b(4);
  const auto greedy = greedy_search(start(model, src, options));
  for (const auto& narrow : {SamplingOptions().top_k(1), SamplingOptions().top_p(1e-6).temperature(2.0)}) {
    const auto sampled = sample_search(start(model, src, options), narrow);
    for (size_t i = 0; i < greedy.size(); ++i) {
      EXPECT_EQ(sampled[i].tokens, greedy[i].tokens) << "sentence " << i;
      EXPECT_NEAR(sampled[i].score, greedy[i].score, 1e-6);
    }
  }
  torch::manual_seed(7);
  const auto a = sample_search(start(model, src, options), SamplingOptions().temperature(1.5));
  torch::manual_seed(7);
  const auto b = sample_search(start(model, src, options), SamplingOptions().temperature(1.5));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens);
}

// A sink takes every row's tokens as greedy search and sampling choose them (the
// hypotheses then keep none) and stops the search when it returns false; beam search
// hands it the best hypothesis at the end.
TEST_F(Decode, SinkTakesTheTokensAndStopsTheSearch) {
  Seq2Seq model(tiny_options());
  model->eval();
  auto src = torch::randint(4, 23, {3, 6});
  const auto options = DecodeOptions().beam(1).max_len_a(1.0).max_len_b(4);
  for (int beam : {1, 3}) {
    SearchOptions how;
    how.decode = DecodeOptions(options).beam(beam);
    const auto reference = search(start(model, src, how.decode), how);
    std::vector<std::vector<int64_t>> taken(3);
    const auto sunk = search(start(model, src, how.decode), how, [&](int64_t row, int64_t token) {
      taken.at(static_cast<size_t>(row)).push_back(token);
      return true;
    });
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(taken[i], reference[i].tokens) << "beam " << beam << ", sentence " << i;
      EXPECT_TRUE(sunk[i].tokens.empty());
      EXPECT_NEAR(sunk[i].score, reference[i].score, 1e-6);
    }
  }
  int64_t calls = 0;
  greedy_search(start(model, src, DecodeOptions(options).max_len_b(50)), [&](int64_t, int64_t) { return ++calls < 2; });
  EXPECT_EQ(calls, 2);  // the second call said stop: no third
}

// A minimum length keeps EOS out until that many tokens are out, in every search: a state
// whose next token is always EOS by far ends each row at once without it.
TEST_F(Decode, MinimumLengthHoldsEosBack) {
  struct EosFirst : DecoderState {
    torch::Tensor step(const torch::Tensor& tokens) override {
      auto logits = torch::randn({tokens.size(0), 30});
      logits.select(1, kEosId).fill_(20.0);
      return logits;
    }
    void select(const torch::Tensor&) override {}
  };
  auto decoding = [](int64_t min_length) {
    Decoding d;
    d.state = std::make_unique<EosFirst>();
    d.start = torch::full({2, 1}, kBosId, torch::kLong);
    d.limits = {12, 12};
    d.min_length = min_length;
    return d;
  };
  for (int sample = 0; sample < 2; ++sample)
    for (int beam : {1, 3}) {
      SearchOptions how;
      how.sample = sample == 1;
      how.decode = DecodeOptions().beam(beam);
      for (int64_t min_length : {0, 7})
        for (const auto& h : search(decoding(min_length), how))
          EXPECT_EQ(static_cast<int64_t>(h.tokens.size()), min_length) << "beam " << beam << ", sample " << sample;
    }
}
