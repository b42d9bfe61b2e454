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
