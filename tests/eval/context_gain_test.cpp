// Context gain: the protocol reads exactly 0 where the window hides nothing, sees the keys a
// window removes and nothing else, buckets positions as documented, and refuses what it
// cannot measure in one line.
#include "ropelab/eval/context_gain.h"

#include <cmath>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/eval/loss.h"
#include "ropelab/task/language_model_task.h"

using namespace ropelab;
using ropelab::testing::error_of;

using ContextGainTest = ropelab::testing::TempDir;

namespace {

Config gain_config(const std::string& text, const std::string& position) {
  return load_config({{},
                      {"task=lm", "data.format=text", "tokenizer.type=byte", "data.context=64", "data.test=" + text,
                       "data.documents=true", "model.d_model=16", "model.heads=2", "model.d_ff=16",
                       "model.decoder_layers=2", "model.position=" + position, "train.max_tokens=256"}});
}

}  // namespace

TEST(ContextGainBuckets, DoubleFromTheWindowAndStopAtTheContext) {
  const auto b = context_gain_buckets(512, 2048);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].label(), "[512, 1024)");
  EXPECT_EQ(b[1].name(), "1024-2048");
  const auto c = context_gain_buckets(100, 500);  // the last bucket cut at the context
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].begin, 400);
  EXPECT_EQ(c[2].end, 500);
  EXPECT_EQ(context_gain_tag("test", 2048, 512), "test.ctx2048.gain512");
}

// The control of the protocol itself: a "windowed" pass whose window covers the whole
// evaluation window sees every key, so every bucket gains exactly 0 (and has tokens); with
// positions drawn at evaluation too, since both passes draw the same ones.
TEST_F(ContextGainTest, AWindowCoveringTheContextGainsExactlyZero) {
  const auto text = write("docs.txt", ropelab::testing::named_documents(5, 12));
  for (const std::string position :
       {"{type: rotary}", "{type: alibi}", "{type: fire}", "{type: none, forget_gate: true}",
        "{type: rotary, train_positions: {type: randomized, drawn_at_eval: true}}"}) {
    SCOPED_TRACE(position);
    const auto config = gain_config(text, position);
    ASSERT_EQ(config.model.decoder_position().train_positions().drawn_at_eval(),
              position.find("drawn_at_eval") != std::string::npos);
    LanguageModelTask task(config);
    const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{"x"}, dir_.string());
    torch::manual_seed(1);
    const auto model = task.build_model(tokenizer->vocab_size());
    (*model)->eval();
    const auto windows = lm_windows(read_text_lines(text), *tokenizer, 64, 64, nullptr, 0, true);
    const auto covering = windowed_model(task, *model, tokenizer->vocab_size(), 64, torch::kCPU);
    const auto report =
        context_gain_report(task, *model, *covering, windows, {64, 16}, "test", "documents", torch::kCPU);
    for (const auto* bucket : {"16-32", "32-64", "16-64"}) {
      SCOPED_TRACE(bucket);
      EXPECT_EQ(report.fields.at(std::string("gain@") + bucket).get<double>(), 0.0);
      EXPECT_GT(report.fields.at(std::string("tokens@") + bucket).get<int64_t>(), 0);
    }
    EXPECT_EQ(report.fields.at("unit_count").get<int64_t>(), 5);
    EXPECT_EQ(report.fields.at("perplexity").get<double>(), report.fields.at("windowed_perplexity").get<double>());
  }
}

// A window of W removes the keys farther than W and nothing else: every token at a
// position below W has exactly the loss it has with every key, and the tokens past it do not.
TEST_F(ContextGainTest, AWindowChangesOnlyTheTokensPastIt) {
  const auto text = write("docs.txt", ropelab::testing::named_documents(5, 12));
  const auto config = gain_config(text, "{type: rotary}");
  LanguageModelTask task(config);
  const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{"x"}, dir_.string());
  torch::manual_seed(1);
  const auto model = task.build_model(tokenizer->vocab_size());
  const auto windows = lm_windows(read_text_lines(text), *tokenizer, 64, 64, nullptr, 0, true);
  const auto narrow = windowed_model(task, *model, tokenizer->vocab_size(), 16, torch::kCPU);
  std::vector<std::vector<double>> full, windowed;
  evaluate_loss(task, *model, ExampleView(windows), 256, 0.0, torch::kCPU, nullptr, nullptr, &full);
  evaluate_loss(task, *narrow, ExampleView(windows), 256, 0.0, torch::kCPU, nullptr, nullptr, &windowed);
  ASSERT_EQ(full.size(), windows.size());
  size_t past = 0, changed = 0;
  for (size_t i = 0; i < windows.size(); ++i)
    for (size_t j = 0; j + 1 < windows[i].target.size(); ++j) {
      ASSERT_FALSE(std::isnan(full[i][j]));
      if (j < 16) {
        EXPECT_EQ(full[i][j], windowed[i][j]) << "window " << i << " position " << j;
      } else {
        ++past;
        changed += std::abs(full[i][j] - windowed[i][j]) > 1e-6;
      }
    }
  EXPECT_GT(past, 100u);
  EXPECT_GT(changed, past * 9 / 10);
  // the items: per unit and bucket, the sum of windowed - full over the bucket's positions
  const auto buckets = context_gain_buckets(16, 64);
  const auto items = gain_items(windows, full, windowed, buckets);
  ASSERT_EQ(items.size(), 2u);
  ASSERT_EQ(items[0].size(), 5u);  // the documents
  double expected = 0, tokens = 0;
  for (size_t i = 0; i < windows.size(); ++i)
    if (windows[i].document == windows.back().document)
      for (size_t j = 32; j + 1 < windows[i].target.size() && j < 64; ++j)
        expected += windowed[i][j] - full[i][j], tokens += 1;
  EXPECT_NEAR(items[1][4].numerator, expected, 1e-9);
  EXPECT_EQ(items[1][4].denominator, tokens);
}

TEST_F(ContextGainTest, RefusesWhatItCannotMeasureInOneLine) {
  const auto text = write("docs.txt", ropelab::testing::named_documents(5, 12));
  LanguageModelTask task(gain_config(text, "{type: rotary}"));
  EXPECT_EQ(context_gain_error(task, 64, 64),
            "--context-gain 64 is not below the context 64: a window of that many keys sees the whole evaluation "
            "window, so there is nothing to gain");
  EXPECT_EQ(context_gain_error(task, 0, 64), "--context-gain 0: the window must be positive");
  EXPECT_EQ(context_gain_error(task, 16, 64), "");
  auto own = gain_config(text, "{type: rotary}");
  own.model.attention().window(8);
  EXPECT_EQ(context_gain_error(LanguageModelTask(own), 16, 64),
            "--context-gain 16: the run's own model.attention.window=8 already hides every key farther than that");
  auto performer = gain_config(text, "{type: rotary}");
  performer.model.attention().type(AttentionType::performer);
  EXPECT_EQ(context_gain_error(LanguageModelTask(performer), 16, 64),
            "--context-gain needs softmax attention (a sliding window); the run's model.attention.type is performer");
}
