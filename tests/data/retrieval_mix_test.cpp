// Retrieval documents mixed into a language model's training text: their share of the
// tokens is the ratio asked, every seed trains on documents of its own, and bad settings
// stop the config in one line naming the key.
#include "ropelab/data/retrieval_mix.h"

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/data/batching.h"

using namespace ropelab;
using ropelab::testing::error_of;

using RetrievalMixTest = ropelab::testing::TempDir;

namespace {

/// The training store's text of `seed` with the mix, and its token count.
std::pair<std::string, int64_t> store_text(const std::string& text, const RetrievalMixOptions& options, uint64_t seed,
                                           const std::string& dir) {
  const auto tokenizer = train_tokenizer(TokenizerOptions().type(TokenizerType::byte), std::vector<std::string>{}, "");
  RetrievalMix mix(options, text, seed);
  const auto path = dir + "/store" + std::to_string(seed);
  write_lm_store(text, *tokenizer, 64, path, false, &mix);
  TokenStore store(path);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < store.size(); ++i) {
    const auto t = store.get(i).target;
    ids.insert(ids.end(), t.begin() + (i ? 1 : 0), t.end());  // chunks share one token
  }
  return {tokenizer->decode(ids), static_cast<int64_t>(ids.size())};
}

}  // namespace

TEST_F(RetrievalMixTest, DocumentsTakeTheirShareAndDifferBySeed) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "The Congress met in session " + std::to_string(i) + " and spoke of trade.\n";
  const auto corpus = write("text.txt", text);
  RetrievalMixOptions options;
  options.tasks("multikey,mqar").ratio(0.25).min_length(300).max_length(400);
  const auto [first, tokens] = store_text(corpus, options, 1, dir_.string());
  // mixed in: multikey's needles and mqar's pairs, about a quarter of the tokens (text lines + EOS)
  const auto needles = first.find("One of the special magic numbers for ");
  EXPECT_NE(needles, std::string::npos);
  EXPECT_NE(first.find('='), std::string::npos);
  const auto text_tokens = static_cast<int64_t>(text.size());  // a byte per character, EOS for each newline
  const double share = 1.0 - static_cast<double>(text_tokens) / static_cast<double>(tokens);
  EXPECT_NEAR(share, 0.25, 0.01) << tokens;
  EXPECT_EQ(store_text(corpus, options, 1, dir_.string()).first, first);  // the same seed: the same documents
  EXPECT_NE(store_text(corpus, options, 2, dir_.string()).first, first);  // another seed: others
}

TEST_F(RetrievalMixTest, BadSettingsNameTheirKey) {
  const auto text = write("text.txt", "a b c\n");
  auto config = [&](const std::vector<std::string>& mix) {
    std::vector<std::string> sets{"task=lm", "data.format=text", "tokenizer.type=byte", "data.train=" + text};
    sets.insert(sets.end(), mix.begin(), mix.end());
    return error_of([&] { load_config({{}, sets}); });
  };
  EXPECT_EQ(config({"data.retrieval.tasks=mqar", "data.retrieval.ratio=1.5"}),
            "--set: data.retrieval.ratio=1.5 must be in [0, 1)");
  EXPECT_EQ(config({"data.retrieval.tasks=niah", "data.retrieval.ratio=0.2"}),
            "--set: data.retrieval.tasks=niah names an unknown task 'niah' (expected multikey | multivalue | mqar | "
            "vartrack)");
  EXPECT_EQ(config({"data.retrieval.ratio=0.2"}),
            "--set: data.retrieval.tasks='' must name the tasks to mix in at data.retrieval.ratio > 0");
  EXPECT_EQ(config({"data.retrieval.tasks=multikey", "data.retrieval.ratio=0.2", "data.retrieval.min_length=100"}),
            "--set: data.retrieval.min_length=100 is below the " +
                std::to_string(retrieval_minimum_length(RetrievalOptions())) +
                " characters multikey's needles and question take");
  EXPECT_EQ(config({"data.retrieval.tasks=mqar"}),
            "--set: data.retrieval.ratio=0 must be positive with data.retrieval.tasks set");
}
