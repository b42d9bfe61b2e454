// Retrieval scoring: one teacher-forced pass says, for every answer of a document, exactly
// what greedy decoding from the text before it says; cells count answers, and a context the
// model cannot take is a cell's error, not a score.
#include "ropelab/eval/retrieval_eval.h"

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/task/language_model_task.h"

using namespace ropelab;

using RetrievalEval = ropelab::testing::TempDir;

namespace {

Config tiny_lm(const std::string& position) {
  return load_config(
      {{},
       {"task=lm", "data.format=text", "tokenizer.type=byte", "data.context=64", "model.d_model=16", "model.heads=2",
        "model.d_ff=16", "model.decoder_layers=2", "model.position.type=" + position, "train.max_tokens=256"}});
}

/// The model's greedy continuation of `prompt` by `tokens` tokens (the search of `ropelab generate`).
std::string greedy(const LanguageModelTask& task, const TaskModel& model, const Tokenizer& tokenizer,
                   const std::string& prompt, int64_t tokens) {
  DecodeRequest request;
  request.search.decode = DecodeOptions().beam(1).max_len_a(0).max_len_b(tokens).min_len(tokens);
  return task.decode_lines(model, tokenizer, {prompt}, request, torch::kCPU).at(0).substr(prompt.size());
}

}  // namespace

TEST_F(RetrievalEval, TeacherForcedExactMatchIsGreedyDecoding) {
  const auto config = tiny_lm("rotary");
  LanguageModelTask task(config);
  const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{"x"}, dir_.string());
  torch::manual_seed(3);
  const auto model = task.build_model(tokenizer->vocab_size());
  (*model)->eval();
  const std::string first = "The special magic number for zq is", second = " and for yv it is";
  // answers the model gives (its own greedy continuations) and ones it does not (one token changed)
  const auto a = greedy(task, *model, *tokenizer, first, 4);
  const auto b = greedy(task, *model, *tokenizer, first + a + second, 3);
  RetrievalDocument given;
  given.text = first + a + second + b;
  given.answers = {{first.size(), first.size() + a.size()}, {given.text.size() - b.size(), given.text.size()}};
  EXPECT_EQ(answers_given(*model, *tokenizer, given, torch::kCPU), (std::vector<bool>{true, true}));
  for (size_t k = 0; k < a.size(); ++k) {  // any one token of an answer off: not given
    auto wrong = given;
    wrong.text[first.size() + k] = wrong.text[first.size() + k] == 'x' ? 'y' : 'x';
    const auto got = answers_given(*model, *tokenizer, wrong, torch::kCPU);
    EXPECT_FALSE(got[0]) << k;
    // the second answer is scored after the first as written: greedy decoding from that text
    EXPECT_EQ(got[1], greedy(task, *model, *tokenizer, wrong.text.substr(0, wrong.answers[1].begin), 3) == b) << k;
  }
}

TEST_F(RetrievalEval, CellsCountAnswersAndAContextTooLongIsAnError) {
  const auto hay = write("hay.txt", "The Congress met in the winter and spoke of many things, of trade and of war.\n");
  for (const std::string position : {"rotary", "learned"}) {
    SCOPED_TRACE(position);
    auto config = tiny_lm(position);
    config.model.decoder_position().max_len(400);  // a learned table of 400 positions
    LanguageModelTask task(config);
    const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{"x"}, dir_.string());
    const auto model = task.build_model(tokenizer->vocab_size());
    RetrievalGrid grid;
    grid.task.task = RetrievalTask::mqar, grid.task.queries = 3;
    grid.lengths = {140, 700}, grid.documents = 2, grid.corpus = hay;
    std::vector<size_t> progress;
    const auto cells = evaluate_retrieval(*model, *tokenizer, grid, torch::kCPU,
                                          [&](const PasskeyCell&, size_t done, size_t) { progress.push_back(done); });
    ASSERT_EQ(cells.size(), 2u);  // mqar has no depth: a cell per length
    EXPECT_EQ(progress, (std::vector<size_t>{1, 2}));
    EXPECT_EQ(cells[0].documents, 6);  // 2 documents of 3 queries
    EXPECT_TRUE(cells[0].error.empty());
    if (position == "learned") {
      EXPECT_EQ(cells[1].documents, 0);
      EXPECT_NE(cells[1].error.find("400"), std::string::npos) << cells[1].error;
    } else {
      EXPECT_EQ(cells[1].documents, 6);
    }
    grid.task.task = RetrievalTask::multikey, grid.lengths = {400}, grid.depths = {0, 1};
    EXPECT_EQ(evaluate_retrieval(*model, *tokenizer, grid, torch::kCPU).size(), 2u);  // a cell per depth
  }
}
