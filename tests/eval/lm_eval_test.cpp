// Language-model evaluation protocols: sliding-window perplexity against a direct
// computation token by token, and the per-position losses against the overall perplexity.
#include <cmath>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/eval/loss.h"
#include "ropelab/eval/protocols.h"
#include "ropelab/ops/cross_entropy/cross_entropy.h"
#include "ropelab/task/language_model_task.h"

using namespace ropelab;
using ropelab::testing::error_of;

using LmEval = ropelab::testing::TempDir;

namespace {

/// The causal model's NLL of every token of `stream` from the first on, each predicted
/// from the tokens a sliding evaluation with windows of `context` every `stride` gives it:
/// window k (the first whose scored part holds token t) starts at k * stride and scores
/// the tokens after its first context - stride predictions; the first window scores all.
double direct_nll(const TaskModel& model, const std::vector<int64_t>& stream, size_t context, size_t stride) {
  torch::NoGradGuard no_grad;
  double nll = 0;
  for (size_t t = 1; t < stream.size(); ++t) {
    const size_t window = t <= context ? 0 : (t - context + stride - 1) / stride;
    const size_t start = window * stride;
    Batch batch;
    batch.target_in = torch::tensor(std::vector<int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                                         stream.begin() + static_cast<std::ptrdiff_t>(t)),
                                    torch::kLong)
                          .unsqueeze(0);
    const auto log_p = model.logits(batch).to(torch::kDouble).log_softmax(-1)[0][-1];
    nll -= log_p[stream[t]].item<double>();
  }
  return nll;
}

}  // namespace

// Windows after the first score their last `stride` tokens alone, and the model computes
// the outputs of those positions alone in its last layer (StackInputs::outputs): two
// layers, a rotation and a logit bias.
TEST_F(LmEval, SlidingWindowPerplexityEqualsADirectPerTokenComputation) {
  const auto text = write("text.txt", "the cat sat on the mat\nand the dog sat on the log\nbirds sing\n");
  for (const std::string position : {"rotary", "alibi"}) {
    SCOPED_TRACE(position);
    const auto config =
        load_config({{},
                     {"task=lm", "data.format=text", "tokenizer.type=byte", "data.context=8", "data.test=" + text,
                      "model.d_model=16", "model.heads=2", "model.d_ff=16", "model.decoder_layers=2",
                      "model.position.type=" + position, "train.max_tokens=24"}});
    LanguageModelTask task(config);
    const auto tokenizer =
        train_tokenizer(config.tokenizer, std::vector<std::string>{"the cat sat on the mat"}, dir_.string());
    torch::manual_seed(1);
    const auto model = task.build_model(tokenizer->vocab_size());
    (*model)->eval();
    // the stream: one window as long as the text
    const auto stream = lm_windows(read_text_lines(text), *tokenizer, 1000, 1000)[0].target;
    ASSERT_EQ(stream.size(), 61u);  // three lines of 22, 26 and 10 bytes, each with its EOS
    // the first window's NLL at each of its 8 positions
    Batch first;
    first.target_in =
        torch::tensor(std::vector<int64_t>(stream.begin(), stream.begin() + 8), torch::kLong).unsqueeze(0);
    const auto targets = torch::tensor(std::vector<int64_t>(stream.begin() + 1, stream.begin() + 9), torch::kLong);
    const auto first_window = [&] {
      torch::NoGradGuard no_grad;
      return -model->logits(first).to(torch::kDouble).log_softmax(-1)[0].gather(1, targets.unsqueeze(1)).squeeze(1);
    }();
    for (const int64_t stride : {8, 5, 3, 1}) {
      SCOPED_TRACE("stride " + std::to_string(stride));
      const EvalProtocol protocol = WindowPerplexity{8, stride, true};
      const auto report = evaluate(task, *model, *tokenizer, "test", text, DecodeRequest{}, protocol, torch::kCPU);
      EXPECT_EQ(report.fields.at("tokens").get<int64_t>(), 60);  // every token after the first, once
      EXPECT_EQ(report.fields.at("stride").get<int64_t>(), stride);
      const double expected = std::exp(direct_nll(*model, stream, 8, static_cast<size_t>(stride)) / 60.0);
      // float32 logits from batches of different shapes: agreement to float32 rounding; a window
      // with the wrong history would be off by percents
      EXPECT_NEAR(report.fields.at("perplexity").get<double>(), expected, 1e-6 * expected);
      EXPECT_EQ(report.file_tag, stride == 8 ? "test.ctx8" : "test.ctx8.stride" + std::to_string(stride));
      // one loss per window position; weighted by their tokens, they give the overall NLL
      ASSERT_EQ(report.position_loss.size(), 8u);
      double nll = 0, tokens = 0;
      for (size_t j = 0; j < 8; ++j) {
        tokens += report.position_tokens[j];
        if (report.position_tokens[j] > 0) nll += report.position_loss[j] * report.position_tokens[j];
      }
      EXPECT_EQ(tokens, 60.0);
      for (size_t j = 0; j < static_cast<size_t>(8 - stride); ++j) {  // scored in the first window alone
        EXPECT_EQ(report.position_tokens[j], 1.0) << "position " << j;
        EXPECT_NEAR(report.position_loss[j], first_window[static_cast<int64_t>(j)].item<double>(), 1e-5)
            << "position " << j;
      }
      EXPECT_NEAR(std::exp(nll / tokens), report.fields.at("perplexity").get<double>(), 1e-6 * expected);
      // the windows' items: one row per window, summing to the same
      double item_nll = 0;
      for (const auto& row : report.items) item_nll += row[0];
      EXPECT_NEAR(item_nll, nll, 1e-9 * nll);
    }
    const EvalProtocol bad = WindowPerplexity{4, 5, false};
    EXPECT_EQ(error_of([&] { evaluate(task, *model, *tokenizer, "test", text, DecodeRequest{}, bad, torch::kCPU); }),
              "--stride 5 is longer than the context 4: windows would skip tokens");
  }
}

TEST_F(LmEval, WindowsScoreEveryTokenOnceWithTheirHistory) {
  const auto tokenizer =
      train_tokenizer(TokenizerOptions().type(TokenizerType::byte), std::vector<std::string>{"x"}, dir_.string());
  const std::vector<std::string> lines{"abcdefghijklmnopqrstuvwxyz", "0123456789"};
  const auto stream = lm_windows(lines, *tokenizer, 1000, 1000)[0].target;
  const auto chunks = lm_chunks(lines, *tokenizer, 6);
  const auto same = lm_windows(lines, *tokenizer, 6, 6);
  ASSERT_EQ(same.size(), chunks.size());  // stride = context: the non-overlapping chunks
  for (size_t i = 0; i < same.size(); ++i) {
    EXPECT_EQ(same[i].target, chunks[i].target);
    EXPECT_EQ(same[i].score_from, 0);
  }
  for (const int64_t stride : {6, 4, 2, 1}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    std::vector<int> scored(stream.size(), 0);
    size_t start = 0;
    for (const auto& w : lm_windows(lines, *tokenizer, 6, stride)) {
      EXPECT_LE(w.target.size(), 7u);
      // the window is the stream from `start`
      EXPECT_EQ(w.target, std::vector<int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                               stream.begin() + static_cast<std::ptrdiff_t>(start + w.target.size())));
      for (size_t j = static_cast<size_t>(w.score_from); j + 1 < w.target.size(); ++j) {
        ++scored[start + j + 1];
        if (start > 0) {  // history of at least context - stride
          EXPECT_GE(j + 1, static_cast<size_t>(6 - stride));
        }
      }
      start += static_cast<size_t>(stride);
    }
    EXPECT_EQ(scored[0], 0);
    for (size_t t = 1; t < stream.size(); ++t) EXPECT_EQ(scored[t], 1) << "token " << t;
  }
  EXPECT_EQ(error_of([&] { lm_windows(lines, *tokenizer, 4, 0); }),
            "LM windows need 0 < stride <= context, got stride 0 and context 4");
}

// Evaluation projects the decoder output a few thousand target tokens at a time: a window
// longer than one piece gives the loss, the per-window and the per-position sums of the
// whole (B, T, V) logits at once, the positions across the pieces' seams included.
TEST_F(LmEval, LongWindowsAreProjectedInPiecesWithTheSameLosses) {
  std::string line;
  for (int i = 0; line.size() < 5000; ++i) line += "the cat " + std::to_string(i * 7919 % 1000) + " sat. ";
  const auto text = write("long.txt", line + "\n" + line.substr(0, 700) + "\n");
  const auto config = load_config({{},
                                   {"task=lm", "data.format=text", "tokenizer.type=byte", "data.context=4500",
                                    "data.test=" + text, "model.d_model=16", "model.heads=2", "model.d_ff=16",
                                    "model.decoder_layers=1", "model.position.type=alibi", "train.max_tokens=9000"}});
  LanguageModelTask task(config);
  const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{"x"}, dir_.string());
  torch::manual_seed(1);
  const auto model = task.build_model(tokenizer->vocab_size());
  const auto windows = lm_windows(read_text_lines(text), *tokenizer, 4500, 4500);
  ASSERT_EQ(windows.size(), 2u);  // one batch (B = 2, T = 4500): pieces of 2048 positions
  std::vector<ExampleLoss> per_window, per_position;
  const auto totals =
      evaluate_loss(task, *model, ExampleView(windows), 9000, 0.1, torch::kCPU, &per_window, &per_position);
  torch::NoGradGuard no_grad;
  (*model)->eval();
  const auto batch = task.collate(ExampleView(windows), {0, 1}, torch::kCPU);
  const auto logits = model->logits(batch).to(torch::kDouble);
  const auto [loss, nll] = smoothed_loss(logits, batch.target_out, 0.1, kPadId);
  EXPECT_NEAR(totals.loss, loss.item<double>(), 1e-6 * loss.item<double>());
  EXPECT_NEAR(totals.nll, nll.item<double>(), 1e-6 * nll.item<double>());
  const auto mask = batch.target_out.ne(kPadId);
  const auto token_nll =
      (logits.logsumexp(-1) - logits.gather(-1, batch.target_out.clamp_min(0).unsqueeze(-1)).squeeze(-1)) * mask;
  ASSERT_EQ(per_position.size(), 4500u);
  for (int64_t j : {0, 2047, 2048, 2049, 4095, 4096, 4499}) {
    EXPECT_NEAR(per_position[static_cast<size_t>(j)].nll, token_nll.select(1, j).sum().item<double>(), 1e-5) << j;
    EXPECT_EQ(per_position[static_cast<size_t>(j)].tokens, mask.select(1, j).sum().item<double>()) << j;
  }
  for (int64_t b = 0; b < 2; ++b)
    EXPECT_NEAR(per_window[static_cast<size_t>(b)].nll, token_nll[b].sum().item<double>(), 1e-6 * per_window[0].nll);
}

// data.documents: every window lies inside one line, which it reads after an EOS; every token
// of every document (and its closing EOS) is predicted exactly once, the token store holds
// the same windows, and the windows name their document. Without it, each window is its own
// block of the stream.
TEST_F(LmEval, DocumentWindowsStayInsideTheirDocument) {
  const auto tokenizer =
      train_tokenizer(TokenizerOptions().type(TokenizerType::byte), std::vector<std::string>{"x"}, dir_.string());
  const std::vector<std::string> lines{"abcdefghijklm", "", "0123456789", "xyz"};
  for (const int64_t stride : {5, 3}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    int64_t empty = 0;
    const auto windows = lm_windows(lines, *tokenizer, 5, stride, &empty, 0, true);
    EXPECT_EQ(empty, 1);
    std::map<int64_t, std::vector<int>> scored;  // per line, how often each of its tokens is predicted
    std::map<int64_t, size_t> start;
    for (const auto& w : windows) {
      const auto document = tokenizer->encode(lines[static_cast<size_t>(w.document)]);
      std::vector<int64_t> expected{kEosId};
      expected.insert(expected.end(), document.begin(), document.end());
      expected.push_back(kEosId);
      auto& at = start[w.document];
      ASSERT_LE(at + w.target.size(), expected.size());
      EXPECT_EQ(w.target, std::vector<int64_t>(expected.begin() + static_cast<std::ptrdiff_t>(at),
                                               expected.begin() + static_cast<std::ptrdiff_t>(at + w.target.size())));
      auto& count = scored[w.document];
      count.resize(expected.size());
      for (size_t j = static_cast<size_t>(w.score_from); j + 1 < w.target.size(); ++j) ++count[at + j + 1];
      at += static_cast<size_t>(stride);
    }
    EXPECT_EQ(scored.size(), 3u);  // lines 0, 2 and 3
    for (const auto& [document, count] : scored)
      for (size_t t = 0; t < count.size(); ++t) EXPECT_EQ(count[t], t == 0 ? 0 : 1) << document << " " << t;
  }
  // the first 12 predictions: the first document's 14 (its 13 bytes and EOS) cut at 12
  const auto first = lm_windows(lines, *tokenizer, 5, 5, nullptr, 12, true);
  size_t predicted = 0;
  for (const auto& w : first) {
    predicted += w.target.size() - 1;
    EXPECT_EQ(w.document, 0);
  }
  EXPECT_EQ(predicted, 12u);
  const auto text = write("docs.txt", "abcdefghijklm\n\n0123456789\nxyz\n");
  const auto store_path = (dir_ / "train").string();
  EXPECT_EQ(write_lm_store(text, *tokenizer, 5, store_path, true), 1);
  TokenStore store(store_path);
  const auto chunks = lm_chunks(read_text_lines(text), *tokenizer, 5, nullptr, 0, true);
  ASSERT_EQ(store.size(), chunks.size());
  for (size_t i = 0; i < store.size(); ++i) EXPECT_EQ(store.get(i).target, chunks[i].target);
  const auto blocks = lm_windows(lines, *tokenizer, 5, 5);
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(blocks[i].document, static_cast<int64_t>(i));
}
