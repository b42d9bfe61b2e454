// Text to token ids: pairs and their length limits.
#include "ropelab/data/examples.h"

#include <filesystem>
#include <fstream>

#include "../test_util.h"

using namespace ropelab;

using Examples = ropelab::testing::TempDir;  // a fresh directory per test

TEST_F(Examples, LongPairsAreSkippedOrTruncatedAndCounted) {
  ParallelText text;
  text.source = {"a b c d e f", "a"};
  text.target = {"x", "y"};
  auto tokenizer = train_tokenizer(TokenizerOptions().type(TokenizerType::word), {"a b c d e f x y"}, dir_.string());
  int64_t dropped = 0;
  EXPECT_EQ(tokenize_pairs(text, *tokenizer, 4, false, &dropped).size(), 1u);
  EXPECT_EQ(dropped, 1);
  auto truncated = tokenize_pairs(text, *tokenizer, 4, true, &dropped);
  EXPECT_EQ(truncated[0].source.size(), 3u);
  EXPECT_EQ(dropped, 2);
}
