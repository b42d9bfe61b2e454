#include "ropelab/model/transformer.h"
#include <gtest/gtest.h>
TEST(Smoke, Builds) {
  auto m = ropelab::Seq2Seq(ropelab::TransformerOptions().vocab_size(10).d_model(16).heads(2).d_ff(32).encoder_layers(1).decoder_layers(1));
  auto src = torch::randint(1, 10, {2, 5}); auto tgt = torch::randint(1, 10, {2, 4});
  EXPECT_EQ(m(src, tgt).sizes(), (std::vector<int64_t>{2, 4, 10}));
}
