// Corpus reading, batching and tokenizers.
#include "ropelab/data/corpus.h"

#include "../test_util.h"

#include <filesystem>
#include <fstream>

using namespace ropelab;
using ropelab::testing::error_of;

namespace {

class Corpus : public ropelab::testing::TempDir {};

}  // namespace

TEST_F(Corpus, TsvStripsBomAndCrAndCountsEmptyPairs) {
  auto path = write("a.tsv", "\xEF\xBB\xBFhello\thola\r\n\nworld\t\ncat\tgato\n");
  auto text = read_parallel(DataOptions(), path);
  ASSERT_EQ(text.source.size(), 2u);
  EXPECT_EQ(text.source[0], "hello");
  EXPECT_EQ(text.target[0], "hola");
  EXPECT_EQ(text.line[1], 4);
  EXPECT_EQ(text.skipped_empty, 2);
  // found by fuzz/corpus_fuzz.cpp: a CR before the CRLF used to stay in the line
  EXPECT_EQ(read_text_lines(write("cr.txt", "a\r\r\nb\r")), (std::vector<std::string>{"a", "b"}));
}

TEST_F(Corpus, ErrorsNameFileAndLine) {
  auto bad_utf8 = write("b.tsv", "ok\tok\nbad \xC3\x28\tx\n");
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions(), bad_utf8); }), bad_utf8 + ":2: invalid UTF-8");
  auto no_tab = write("c.tsv", "ok\tok\nno tab here\n");
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions(), no_tab); }),
            no_tab + ":2: expected exactly one tab between source and target");
  write("d.en", "a\nb\nc\n");
  write("d.es", "a\nb\n");
  auto prefix = (dir_ / "d").string();
  EXPECT_EQ(error_of([&] { read_parallel(DataOptions().format(CorpusFormat::parallel), prefix); }),
            prefix + ".en has 3 lines but " + prefix + ".es has 2");
}

TEST_F(Corpus, Utf8Validation) {
  EXPECT_TRUE(valid_utf8("¿Dónde está? — “sí”"));
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(valid_utf8("abc\xE2\x82"));       // truncated
}

TEST_F(Corpus, BatchesRespectTheTokenBudgetAndCoverEveryExample) {
  std::vector<Example> examples;
  for (int i = 0; i < 200; ++i)
    examples.push_back({std::vector<int64_t>(static_cast<size_t>(1 + i % 17), 5),
                        std::vector<int64_t>(static_cast<size_t>(1 + i % 13), 6), {}});
  for (bool bucketing : {true, false}) {
    auto plan = plan_batches(examples, 64, bucketing, 7);
    std::vector<int> seen(examples.size(), 0);
    for (const auto& batch : plan) {
      auto b = collate(examples, batch, torch::kCPU);
      EXPECT_LE(b.source.numel(), 64);
      EXPECT_LE(b.target_in.numel(), 64);
      for (auto i : batch) ++seen[i];
    }
    for (int s : seen) EXPECT_EQ(s, 1);
    EXPECT_EQ(plan, plan_batches(examples, 64, bucketing, 7));  // seeded
    EXPECT_NE(plan, plan_batches(examples, 64, bucketing, 8));
  }
  // bucketing wastes less on padding
  auto padding = [&](bool bucketing) {
    int64_t pads = 0;
    for (const auto& batch : plan_batches(examples, 64, bucketing, 7))
      pads += collate(examples, batch, torch::kCPU).source.eq(kPadId).sum().item<int64_t>();
    return pads;
  };
  EXPECT_LT(padding(true), padding(false) / 2);
}

TEST_F(Corpus, CollateAddsBosAndEosAndShiftsTarget) {
  std::vector<Example> examples = {{{10, 11}, {20, 21, 22}, {}}, {{12}, {23}, {}}};
  auto b = collate(examples, {0, 1}, torch::kCPU);
  ASSERT_EQ(kPadId, 0);
  ASSERT_EQ(kBosId, 2);
  ASSERT_EQ(kEosId, 3);
  EXPECT_TRUE(torch::equal(b.source, torch::tensor({{10, 11, 3}, {12, 3, 0}}).to(torch::kLong)));
  EXPECT_TRUE(torch::equal(b.target_in, torch::tensor({{2, 20, 21, 22}, {2, 23, 0, 0}}).to(torch::kLong)));
  EXPECT_TRUE(torch::equal(b.target_out, torch::tensor({{20, 21, 22, 3}, {23, 3, 0, 0}}).to(torch::kLong)));
  EXPECT_EQ(b.target_tokens, 6);
}

TEST_F(Corpus, LongPairsAreSkippedOrTruncatedAndCounted) {
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

TEST_F(Corpus, WordTokenizerSplitsPunctuationAndRoundTrips) {
  EXPECT_EQ(split_words("¿Dónde está la estación?"),
            (std::vector<std::string>{"¿", "Dónde", "está", "la", "estación", "?"}));
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::word), {"¿Dónde está la estación?", "Hola, amigo."},
                             dir_.string());
  EXPECT_EQ(tok->decode(tok->encode("¿Dónde está la estación?")), "¿Dónde está la estación?");
  EXPECT_EQ(tok->decode(tok->encode("Hola, amigo.")), "Hola, amigo.");
  EXPECT_EQ(tok->encode("desconocido")[0], kUnkId);
  tok->save(dir_.string());
  auto loaded = load_tokenizer(TokenizerOptions().type(TokenizerType::word), dir_.string());
  EXPECT_EQ(loaded->encode("Hola, amigo."), tok->encode("Hola, amigo."));
}

TEST_F(Corpus, SentencePieceTrainsEncodesAndDecodes) {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back("the quick brown fox " + std::to_string(i) + " jumps over el perro marrón número " +
                    std::to_string(i * 7));
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::sentencepiece).vocab_size(100), texts,
                             dir_.string());
  EXPECT_LE(tok->vocab_size(), 100);
  auto ids = tok->encode("the brown perro jumps 42");
  for (auto id : ids) EXPECT_GT(id, kEosId);  // specials never come out of encode
  EXPECT_EQ(tok->decode(ids), "the brown perro jumps 42");
  auto loaded = load_tokenizer(TokenizerOptions(), dir_.string());
  EXPECT_EQ(loaded->encode("el perro marrón"), tok->encode("el perro marrón"));
  auto message = error_of([&] { load_tokenizer(TokenizerOptions(), (dir_ / "nowhere").string()); });
  EXPECT_EQ(message, (dir_ / "nowhere" / "spm.model").string() + ": missing SentencePiece model");
}

// Language-model corpora keep a document per line (a whole speech, ~50 kB): SentencePiece
// skips training lines over 4192 bytes, so they are cut at spaces before training.
TEST_F(Corpus, SentencePieceTrainsOnDocumentsLongerThanItsSentenceLimit) {
  std::vector<std::string> documents(3);
  for (int i = 0; i < 3000; ++i)
    documents[static_cast<size_t>(i % 3)] += "the union is strong number " + std::to_string(i % 97) + " ";
  ASSERT_GT(documents[0].size(), 20000u);
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::sentencepiece).vocab_size(120), documents,
                             dir_.string());
  EXPECT_GT(tok->vocab_size(), 20);
  const auto ids = tok->encode(documents[1]);
  EXPECT_LT(ids.size(), documents[1].size() / 3);  // whole words became pieces
  EXPECT_EQ(tok->decode(ids), documents[1].substr(0, documents[1].size() - 1));  // decode drops the final space
}

// The training split is streamed into a memory-mapped token store: it must hold exactly
// the examples the in-memory path builds, for pairs (with grid coordinates) and LM chunks.
TEST_F(Corpus, TokenStoreMatchesInMemoryExamples) {
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
