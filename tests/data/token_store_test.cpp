// The memory-mapped token store against in-memory examples.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "ropelab/data/batching.h"

using namespace ropelab;
using ropelab::testing::error_of;

using Store = ropelab::testing::TempDir;  // a fresh directory per test

// The training split is streamed into a memory-mapped token store: it must hold exactly
// the examples the in-memory path builds, for pairs (with grid coordinates) and LM chunks.
TEST_F(Store, TokenStoreMatchesInMemoryExamples) {
  auto pairs = write("p.tsv", "a b / c d /\tx y\n\nb a /\ty\nlong long long long long long long long long\tz\n");
  auto options = DataOptions().max_len(8).source_layout(SourceLayout::grid);
  auto tokenizer = train_tokenizer(TokenizerOptions().type(TokenizerType::word),
                                   std::vector<std::string>{"a b / c d", "x y", "long"}, dir_.string());
  const auto separator = row_separator_id(options, *tokenizer);
  ASSERT_GE(separator, 0);
  int64_t dropped = 0, empty = 0;
  auto expected = tokenize_pairs(read_parallel(options, pairs), *tokenizer, 8, false, &dropped, separator);
  const auto store_path = (dir_ / "train").string();
  EXPECT_EQ(write_pair_store(options, pairs, *tokenizer, store_path, &empty), dropped);
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(empty, 1);
  TokenStore store(store_path, separator);
  ASSERT_EQ(store.size(), expected.size());
  for (size_t i = 0; i < store.size(); ++i) {
    auto got = store.get(i);
    EXPECT_EQ(got.source, expected[i].source);
    EXPECT_EQ(got.target, expected[i].target);
    EXPECT_EQ(got.source_positions, expected[i].source_positions);
    EXPECT_EQ(store.padded_length(i), ExampleView(expected).padded_length(i));
  }
  EXPECT_EQ(store.get(0).source_positions, (std::vector<int64_t>{0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0}));
  EXPECT_TRUE(torch::equal(collate(store, {0, 1}, torch::kCPU).source_positions,
                           collate(expected, {0, 1}, torch::kCPU).source_positions));

  auto text = write("t.txt", "one two\n\nthree four five\n");
  auto lines = read_text_lines(text);
  auto chunks = lm_chunks(lines, *tokenizer, 2);
  EXPECT_EQ(write_lm_store(text, *tokenizer, 2, store_path), 1);
  TokenStore lm(store_path);
  ASSERT_EQ(lm.size(), chunks.size());
  for (size_t i = 0; i < lm.size(); ++i) EXPECT_EQ(lm.get(i).target, chunks[i].target);
  // 7 tokens (two lines + EOS each): 6 predicted, 3 chunks of 2 (+1 overlapping input)
  EXPECT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks.back().target.size(), 3u);
  EXPECT_EQ(lm_chunks(lines, *tokenizer, 4).back().target.size(), 3u);  // a shorter last chunk
  // data.eval_tokens: the first 3 predicted tokens only, the same prefix of the stream
  auto first3 = lm_chunks(lines, *tokenizer, 2, nullptr, 3);
  ASSERT_EQ(first3.size(), 2u);
  EXPECT_EQ(first3[0].target, chunks[0].target);
  EXPECT_EQ(first3[1].target, std::vector<int64_t>(chunks[1].target.begin(), chunks[1].target.begin() + 2));
  EXPECT_EQ(lm_chunks(lines, *tokenizer, 2, nullptr, 100).size(), chunks.size());

  std::filesystem::resize_file(store_path + ".index", 10);
  EXPECT_EQ(error_of([&] { TokenStore broken(store_path); }), store_path + ".index: truncated token store");
}

// A store is written under temporary names: unfinished, nothing is left under the final
// names (a reader never maps a partial store) and the temporary files are removed.
TEST_F(Store, AStoreAppearsOnlyWhenFinished) {
  const auto path = (dir_ / "train").string();
  Example example;
  example.source = {4, 5}, example.target = {6};
  {
    TokenStore::Writer writer(path);
    writer.add(example);
    EXPECT_TRUE(std::filesystem::exists(path + ".tokens.tmp"));
    EXPECT_FALSE(std::filesystem::exists(path + ".tokens"));
  }  // destroyed unfinished (an exception on the way)
  EXPECT_FALSE(std::filesystem::exists(path + ".tokens.tmp"));
  EXPECT_FALSE(std::filesystem::exists(path + ".index.tmp"));
  TokenStore::Writer writer(path);
  writer.add(example);
  writer.finish();
  EXPECT_FALSE(std::filesystem::exists(path + ".tokens.tmp"));
  EXPECT_EQ(TokenStore(path).size(), 1u);
}

// The space check's estimate, from the first MiB, holds the store that is then written.
TEST_F(Store, TheSizeEstimateHoldsTheStore) {
  std::string text;
  for (int i = 0; text.size() < (3u << 20); ++i) text += "line " + std::to_string(i * 7919 % 100003) + " of text\n";
  const auto corpus = write("corpus.txt", text);
  const auto tokenizer = train_tokenizer(TokenizerOptions().type(TokenizerType::byte), std::vector<std::string>{}, "");
  const auto path = (dir_ / "train").string();
  write_lm_store(corpus, *tokenizer, 64, path);
  const auto written = std::filesystem::file_size(path + ".tokens") + std::filesystem::file_size(path + ".index");
  const auto estimate = estimate_store_bytes({corpus}, *tokenizer);
  EXPECT_GE(estimate, written);
  EXPECT_LE(estimate, 2 * written);  // LM chunks hold many lines: the index is over-counted
  // a pipe has no size and can be read once: no estimate
  const auto fifo = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(estimate_store_bytes({corpus, fifo}, *tokenizer), 0u);
}
