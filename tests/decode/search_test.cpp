// Decoding: cached and uncached decoding agree, limits hold.
#include "ropelab/decode/search.h"

#include "ropelab/data/tokenizer.h"

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::tiny_options;

namespace {
class Decode : public ropelab::testing::Seeded {};
}  // namespace

TEST_F(Decode, GreedyWithCacheEqualsRecomputingThePrefix) {
  for (auto type : {PositionType::sinusoidal, PositionType::t5_bias, PositionType::rotary}) {
    Seq2Seq model(tiny_options().encoder_position(PositionOptions().type(type)).decoder_position(PositionOptions().type(type)));
    model->eval();
    auto src = torch::tensor({{5, 6, 7, 8, 3, 0}, {9, 10, 11, 12, 13, 3}});  // 3 = EOS, 0 = pad
    auto options = DecodeOptions().beam(1).max_len_a(0).max_len_b(12);
    auto cached = greedy_search(model, src, options, true);
    auto full = greedy_search(model, src, options, false);
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
  auto greedy = greedy_search(model, src, options);
  auto beam = beam_search(model, src, options);
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(beam[i].tokens, greedy[i].tokens) << "sentence " << i;
    EXPECT_NEAR(beam[i].score, greedy[i].score, 1e-4);
  }
}

TEST_F(Decode, BeamWithCacheEqualsRecomputingThePrefix) {
  for (auto type : {PositionType::learned, PositionType::t5_bias, PositionType::rotary}) {
    Seq2Seq model(tiny_options().encoder_position(PositionOptions().type(type)).decoder_position(PositionOptions().type(type)));
    model->eval();
    auto src = torch::randint(4, 23, {3, 6});
    auto options = DecodeOptions().beam(4).max_len_a(1.0).max_len_b(4);
    auto cached = beam_search(model, src, options, true);
    auto full = beam_search(model, src, options, false);
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
