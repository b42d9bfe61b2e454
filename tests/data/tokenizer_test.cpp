// Word and SentencePiece tokenizers.
#include "ropelab/data/tokenizer.h"

#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "ropelab/data/text.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::read_text;

using Tokenizers = ropelab::testing::TempDir;  // a fresh directory per test

TEST_F(Tokenizers, WordTokenizerSplitsPunctuationAndRoundTrips) {
  EXPECT_EQ(split_words("¿Dónde está la estación?"),
            (std::vector<std::string>{"¿", "Dónde", "está", "la", "estación", "?"}));
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::word), {"¿Dónde está la estación?", "Hola, amigo."},
                             dir_.string());
  EXPECT_EQ(tok->decode(tok->encode("¿Dónde está la estación?")), "¿Dónde está la estación?");
  EXPECT_EQ(tok->decode(tok->encode("Hola, amigo.")), "Hola, amigo.");
  EXPECT_EQ(tok->encode("desconocido")[0], kUnkId);
  tok->save((dir_ / "words.txt").string());
  auto loaded = load_tokenizer(TokenizerOptions().type(TokenizerType::word), (dir_ / "words.txt").string());
  EXPECT_EQ(loaded->encode("Hola, amigo."), tok->encode("Hola, amigo."));
}

TEST_F(Tokenizers, SentencePieceTrainsEncodesAndDecodes) {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back("the quick brown fox " + std::to_string(i) + " jumps over el perro marrón número " +
                    std::to_string(i * 7));
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::sentencepiece).vocab_size(100), texts,
                             (dir_ / "pieces.model").string());
  EXPECT_LE(tok->vocab_size(), 100);
  // the model where it was asked for, its piece list beside it, no intermediate file left
  EXPECT_TRUE(std::filesystem::exists(dir_ / "pieces.model"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "pieces.vocab"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "pieces_input.txt"));
  auto ids = tok->encode("the brown perro jumps 42");
  for (auto id : ids) EXPECT_GT(id, kEosId);  // specials never come out of encode
  EXPECT_EQ(tok->decode(ids), "the brown perro jumps 42");
  auto loaded = load_tokenizer(TokenizerOptions(), (dir_ / "pieces.model").string());
  EXPECT_EQ(loaded->encode("el perro marrón"), tok->encode("el perro marrón"));
  auto message = error_of([&] { load_tokenizer(TokenizerOptions(), (dir_ / "nowhere.model").string()); });
  EXPECT_EQ(message, (dir_ / "nowhere.model").string() + ": missing SentencePiece model");
}

// Run folders are named after their settings ("model.position=_type__none,_cope__true_"):
// a comma, a space or a quote in the path trains the same model as a plain path.
TEST_F(Tokenizers, SentencePieceTrainsInAFolderWithCommasSpacesAndQuotes) {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back("a forget gate " + std::to_string(i) + " y una puerta " + std::to_string(i));
  const auto options = TokenizerOptions().type(TokenizerType::sentencepiece).vocab_size(60);
  const auto odd = dir_ / "model.position=_type__none,_forget_gate__true_.seed1 \"q\"";
  auto plain = train_tokenizer(options, texts, (dir_ / "plain" / "spm.model").string());
  auto tok = train_tokenizer(options, texts, (odd / "spm.model").string());
  ASSERT_TRUE(std::filesystem::exists(odd / "spm.model"));
  EXPECT_FALSE(std::filesystem::exists(odd / "spm_input.txt"));
  EXPECT_EQ(tok->vocab_size(), plain->vocab_size());
  EXPECT_EQ(read_text(odd / "spm.vocab"), read_text(dir_ / "plain" / "spm.vocab"));  // the same pieces and scores
  EXPECT_EQ(tok->encode("a forget gate 12 y una puerta 7"), plain->encode("a forget gate 12 y una puerta 7"));
}

// Language-model corpora keep a document per line (a whole speech, ~50 kB): SentencePiece
// skips training lines over 4192 bytes, so they are cut at spaces before training.
TEST_F(Tokenizers, SentencePieceTrainsOnDocumentsLongerThanItsSentenceLimit) {
  std::vector<std::string> documents(3);
  for (int i = 0; i < 3000; ++i)
    documents[static_cast<size_t>(i % 3)] += "the union is strong number " + std::to_string(i % 97) + " ";
  ASSERT_GT(documents[0].size(), 20000u);
  auto tok = train_tokenizer(TokenizerOptions().type(TokenizerType::sentencepiece).vocab_size(120), documents,
                             (dir_ / "spm.model").string());
  EXPECT_GT(tok->vocab_size(), 20);
  const auto ids = tok->encode(documents[1]);
  EXPECT_LT(ids.size(), documents[1].size() / 3);                                // whole words became pieces
  EXPECT_EQ(tok->decode(ids), documents[1].substr(0, documents[1].size() - 1));  // decode drops the final space
}

// Text streamed token by token (`ropelab generate`) is the whole decode: spaces that
// SentencePiece renders from a piece's neighbours, the word tokenizer's joins, and bytes of
// a character split across byte tokens, held until the character is whole, across the
// detokenizer's window restarts.
TEST_F(Tokenizers, IncrementalDetokenizerStreamsTheWholeDecode) {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back("¿Dónde está la estación " + std::to_string(i) + "? the quick brown fox, el perro marrón.");
  std::string text = "¿Dónde está la estación 12? the quick brown fox, el perro marrón. ¿Dónde está el fox?";
  text += " " + text;
  for (auto type : {TokenizerType::word, TokenizerType::sentencepiece, TokenizerType::byte}) {
    auto dir = dir_ / std::to_string(static_cast<int>(type));
    std::filesystem::create_directories(dir);
    auto tok = train_tokenizer(TokenizerOptions().type(type).vocab_size(100), texts, (dir / "tokenizer").string());
    const auto ids = tok->encode(text);
    ASSERT_GT(ids.size(), 40u);
    for (size_t prompt : {size_t{0}, size_t{3}}) {
      const std::vector<int64_t> head(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt));
      IncrementalDetokenizer stream(*tok, head);
      std::string out = tok->decode(head);
      for (size_t i = prompt; i < ids.size(); ++i) {
        const auto piece = stream.push(ids[i]);
        EXPECT_TRUE(valid_utf8(piece)) << "token " << i;
        out += piece;
      }
      EXPECT_EQ(out, tok->decode(ids)) << "tokenizer " << static_cast<int>(type) << ", prompt " << prompt;
    }
  }
}
