// Passkey documents: deterministic by seed, exactly as long as asked, the key where asked,
// answers read back from continuations, and the Wilson intervals of the accuracy.
#include "ropelab/eval/passkey.h"

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

TEST(Passkey, DocumentsAreDeterministicBySeedAndHoldTheirKeyWhereAsked) {
  const std::string question = " What is the pass key? The pass key is";
  std::set<std::string> keys;
  for (const int64_t length : {passkey_minimum_length(5), int64_t{128}, int64_t{333}, int64_t{2048}})
    for (const double depth : {0.0, 0.25, 0.5, 1.0})
      for (uint64_t index = 0; index < 5; ++index) {
        SCOPED_TRACE("length " + std::to_string(length) + " depth " + std::to_string(depth));
        PasskeyOptions o;
        o.length = length;
        o.depth = depth;
        const auto d = make_passkey_document(o, 7, index);
        const auto again = make_passkey_document(o, 7, index);
        EXPECT_EQ(d.prompt, again.prompt);
        EXPECT_EQ(d.key, again.key);
        EXPECT_NE(make_passkey_document(o, 8, index).prompt, d.prompt);
        EXPECT_EQ(static_cast<int64_t>(d.prompt.size()), length);
        ASSERT_TRUE(std::regex_match(d.key, std::regex("[1-9][0-9]{4}"))) << d.key;
        const auto sentence = "The pass key is " + d.key + ". Remember it. " + d.key + " is the pass key.";
        const auto at = d.prompt.find(sentence);
        ASSERT_NE(at, std::string::npos) << d.prompt;
        EXPECT_EQ(d.prompt.find(d.key, at + sentence.size()), std::string::npos);  // the key nowhere else
        EXPECT_EQ(d.prompt.find(d.key), at + 16);
        EXPECT_EQ(d.prompt.substr(d.prompt.size() - question.size()), question);
        EXPECT_EQ(d.with_answer(), d.prompt + " " + d.key + ".");
        // the key's place in the filler follows the depth (to a character or two)
        const double filler = static_cast<double>(length - passkey_minimum_length(5));
        EXPECT_NEAR(static_cast<double>(at), depth * filler, 1.0 + 1e-9);
      }
  // a document's key depends on (seed, index) alone; 100 documents' keys are drawn from 90000
  for (uint64_t index = 0; index < 100; ++index) keys.insert(make_passkey_document({}, 7, index).key);
  EXPECT_GT(keys.size(), 95u);
  PasskeyOptions too_short;
  too_short.length = passkey_minimum_length(5) - 1;
  EXPECT_EQ(error_of([&] { make_passkey_document(too_short, 1, 0); }),
            "passkey length " + std::to_string(too_short.length) + " is below the " +
                std::to_string(passkey_minimum_length(5)) + " characters of the key sentence and the question");
}

TEST(Passkey, ARetrievalIsTheKeyRightAfterTheQuestion) {
  PasskeyOptions o;
  o.length = 200;
  const auto d = make_passkey_document(o, 3, 0);
  EXPECT_TRUE(passkey_retrieved(d.with_answer(), d.key));
  EXPECT_TRUE(passkey_retrieved(d.prompt + "  " + d.key + " and more", d.key));
  EXPECT_FALSE(passkey_retrieved(d.prompt, d.key));  // the key appears earlier, not as the answer
  EXPECT_FALSE(passkey_retrieved(d.prompt + " 1" + d.key, d.key));
  EXPECT_FALSE(passkey_retrieved(d.prompt + " " + d.key.substr(0, 4), d.key));
  EXPECT_FALSE(passkey_retrieved("", d.key));
}

TEST(Passkey, AnswersAreTheLeadingDigits) {
  EXPECT_EQ(passkey_answer(" 12345."), "12345");
  EXPECT_EQ(passkey_answer("12345 is"), "12345");
  EXPECT_EQ(passkey_answer("  9"), "9");
  EXPECT_EQ(passkey_answer(" the key"), "");
  EXPECT_EQ(passkey_answer(""), "");
}

// Wilson's interval against tests/golden/wilson_golden.json, where the score test is
// inverted by bisection (not the closed form used here).
TEST(Passkey, WilsonIntervalsMatchTheInvertedScoreTest) {
  const auto& golden = ropelab::testing::golden("wilson_golden.json").at("intervals");
  ASSERT_GE(golden.size(), 25u);
  for (const auto& c : golden) {
    const auto k = c.at("successes").get<int64_t>(), n = c.at("trials").get<int64_t>();
    SCOPED_TRACE(std::to_string(k) + " of " + std::to_string(n));
    const auto ci = wilson_interval(k, n);
    EXPECT_NEAR(ci.low, c.at("low").get<double>(), 1e-12);
    EXPECT_NEAR(ci.high, c.at("high").get<double>(), 1e-12);
  }
  EXPECT_NE(error_of([] { wilson_interval(3, 2); }).find("wilson_interval: 3 of 2"), std::string::npos);
  EXPECT_NE(error_of([] { wilson_interval(0, 0); }).find("wilson_interval: 0 of 0"), std::string::npos);
}

// A partial file's key changes with every part of what is evaluated, the depths beyond the
// flags' 6 digits included, and --set values cannot run into one another.
TEST(Passkey, AnEvaluationsKeyNamesEveryPartOfIt) {
  PasskeyEvaluation base;
  base.grid.lengths = {100, 140};
  base.grid.depths = {0, 0.5, 1};
  base.version = "1.0.0";
  base.precision = Precision::fp32;
  base.device = "cpu";
  base.overrides = {"model.attention.kernel=materialized"};
  base.config_fingerprint = "0123";
  base.checkpoint_fingerprint = "4567";
  const auto key = passkey_evaluation_key(base);
  EXPECT_EQ(passkey_evaluation_key(base), key);  // nothing of the moment in it (a time, a process id)
  const std::vector<std::pair<const char*, std::function<void(PasskeyEvaluation&)>>> changes{
      {"lengths",
       [](PasskeyEvaluation& e) {
         e.grid.lengths = {100, 141};
       }},
      {"depths",
       [](PasskeyEvaluation& e) {
         e.grid.depths = {0, 0.5000001, 1};
       }},
      {"documents", [](PasskeyEvaluation& e) { e.grid.documents = 21; }},
      {"digits", [](PasskeyEvaluation& e) { e.grid.digits = 6; }},
      {"seed", [](PasskeyEvaluation& e) { e.grid.seed = 2; }},
      {"version", [](PasskeyEvaluation& e) { e.version = "1.0.1"; }},
      {"precision", [](PasskeyEvaluation& e) { e.precision = Precision::bf16; }},
      {"device", [](PasskeyEvaluation& e) { e.device = "cuda:0"; }},
      {"overrides", [](PasskeyEvaluation& e) { e.overrides.clear(); }},
      {"config", [](PasskeyEvaluation& e) { e.config_fingerprint = "0124"; }},
      {"checkpoint", [](PasskeyEvaluation& e) { e.checkpoint_fingerprint = "4568"; }},
  };
  for (const auto& [part, change] : changes) {
    auto other = base;
    change(other);
    EXPECT_NE(passkey_evaluation_key(other), key) << part;
  }
  auto joined = base, split = base;
  joined.overrides = {"a=1 --set b=2"};
  split.overrides = {"a=1", "b=2"};
  EXPECT_NE(passkey_evaluation_key(joined), passkey_evaluation_key(split));
}

using PasskeyPartial = ropelab::testing::TempDir;

// The partial file of an evaluation under way gives back its cells, errors and all, to the
// evaluation that wrote it, and none to another; a file that is not one stops with its line.
TEST_F(PasskeyPartial, CellsComeBackToTheEvaluationThatWroteThem) {
  PasskeyGrid grid;
  grid.lengths = {100, 140};
  grid.depths = {0, 0.25, 1};
  grid.documents = 3;
  const auto path = (dir_ / "passkey.partial.jsonl").string();
  bool other = true;
  EXPECT_TRUE(read_passkey_partial(path, "k", grid, &other).empty());  // no file: nothing scored
  EXPECT_FALSE(other);
  std::vector<PasskeyCell> cells(4);
  for (size_t c = 0; c < cells.size(); ++c) {
    cells[c].length = grid.lengths[c / 3], cells[c].depth = grid.depths[c % 3];
    cells[c].documents = 3, cells[c].correct = static_cast<int64_t>(c % 4);
  }
  cells[3].documents = 0, cells[3].correct = 0;
  cells[3].error = "position 140 is \"beyond\" the table,\nof 128";
  write_passkey_partial(path, "eval --lengths 100,140 fnv1a 0123", cells);
  const auto back = read_passkey_partial(path, "eval --lengths 100,140 fnv1a 0123", grid, &other);
  EXPECT_FALSE(other);
  ASSERT_EQ(back.size(), 4u);
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(back[c].length, cells[c].length);
    EXPECT_EQ(back[c].depth, cells[c].depth);
    EXPECT_EQ(back[c].documents, cells[c].documents);
    EXPECT_EQ(back[c].correct, cells[c].correct);
    EXPECT_EQ(back[c].error, cells[c].error);
  }
  EXPECT_TRUE(read_passkey_partial(path, "eval --lengths 100,140 fnv1a 4567", grid, &other).empty());
  EXPECT_TRUE(other);

  const auto text = ropelab::testing::read_text(path);
  const auto second = text.find('\n') + 1, third = text.find('\n', second) + 1;
  write("broken.jsonl", text.substr(0, third) + "{\"length\": 100, \"depth\": 0.25}\n");
  EXPECT_EQ(
      error_of(
          [&] { read_passkey_partial((dir_ / "broken.jsonl").string(), "eval --lengths 100,140 fnv1a 0123", grid); }),
      (dir_ / "broken.jsonl").string() +
          " line 3: not a passkey cell {\"length\", \"depth\", \"documents\", \"correct\", \"error\"} (remove the "
          "file to score every cell again)");
  write("skipped.jsonl", text.substr(0, second) + text.substr(third));  // cell 1 left out
  EXPECT_EQ(error_of([&] {
              read_passkey_partial((dir_ / "skipped.jsonl").string(), "eval --lengths 100,140 fnv1a 0123", grid);
            }),
            (dir_ / "skipped.jsonl").string() +
                " line 2: length 100 depth 0.25 with 3 documents, where the grid's cell 1 is length 100 depth 0 with 3 "
                "(remove the file to score every cell again)");
  const auto bad_cell = [&](const std::string& cell) {
    write("cell.jsonl", text.substr(0, second) + cell + "\n");
    return error_of(
        [&] { read_passkey_partial((dir_ / "cell.jsonl").string(), "eval --lengths 100,140 fnv1a 0123", grid); });
  };
  const auto line2 = (dir_ / "cell.jsonl").string() + " line 2: ";
  EXPECT_EQ(bad_cell("{\"length\":100,\"depth\":0,\"documents\":3,\"correct\":4,\"error\":\"\"}"),
            line2 + "4 correct of 3 documents (remove the file to score every cell again)");
  EXPECT_EQ(bad_cell("{\"length\":100,\"depth\":0,\"documents\":3,\"correct\":0,\"error\":\"failed\"}"),
            line2 + "a cell with an error and 3 documents (remove the file to score every cell again)");
  write("long.jsonl", text + text.substr(second) + text.substr(second));  // 4 + 8 cells of a grid of 6
  EXPECT_EQ(error_of([&] {
              read_passkey_partial((dir_ / "long.jsonl").string(), "eval --lengths 100,140 fnv1a 0123", grid);
            }),
            (dir_ / "long.jsonl").string() +
                " line 6: length 100 depth 0 with 3 documents, where the grid's cell 5 is length 140 depth 0.25 with 3 "
                "(remove the file to score every cell again)");
  std::vector<PasskeyCell> seven(7);  // the grid's six cells, then one more
  for (size_t c = 0; c < 7; ++c)
    seven[c].length = grid.lengths[c / 3 % 2], seven[c].depth = grid.depths[c % 3], seven[c].documents = 3;
  write_passkey_partial((dir_ / "seven.jsonl").string(), "k", seven);
  EXPECT_EQ(error_of([&] { read_passkey_partial((dir_ / "seven.jsonl").string(), "k", grid); }),
            (dir_ / "seven.jsonl").string() +
                " line 8: a cell beyond the grid's 6 (remove the file to score every cell again)");
  write("head.jsonl", "{\"grid\": 1}\n");
  EXPECT_EQ(error_of([&] { read_passkey_partial((dir_ / "head.jsonl").string(), "k", grid); }),
            (dir_ / "head.jsonl").string() +
                " line 1: not {\"evaluation\": ...} (remove the file to score every cell again)");
}

// passkey.json: a length with a depth that could not be evaluated has no accuracy (it would
// be over the other depths alone); its counts keep what was scored.
TEST_F(PasskeyPartial, ALengthWithAFailedDepthHasNoAccuracy) {
  auto cell = [](int64_t length, double depth, int64_t correct, const std::string& error) {
    PasskeyCell c;
    c.length = length, c.depth = depth, c.error = error;
    c.documents = error.empty() ? 10 : 0;
    c.correct = correct;
    return c;
  };
  const auto path = (dir_ / "passkey.json").string();
  write_passkey_summary(
      path,
      {cell(100, 0, 3, ""), cell(100, 1, 5, ""), cell(200, 0, 7, ""), cell(200, 1, 0, "out of memory"),
       cell(300, 0, 0, "beyond the table"), cell(300, 1, 0, "beyond the table")},
      7);
  std::ifstream in(path);
  const auto json = nlohmann::json::parse(in);
  EXPECT_DOUBLE_EQ(json.at("accuracy@100").get<double>(), 0.4);
  EXPECT_TRUE(json.at("ci95@100").is_array());
  EXPECT_TRUE(json.at("accuracy@200").is_null()) << json;
  EXPECT_TRUE(json.at("ci95@200").is_null()) << json;
  EXPECT_EQ(json.at("correct@200").get<int64_t>(), 7);
  EXPECT_EQ(json.at("documents@200").get<int64_t>(), 10);
  EXPECT_EQ(json.at("passkey_seed").get<uint64_t>(), 7u);
  EXPECT_TRUE(json.at("accuracy@300").is_null());
  EXPECT_DOUBLE_EQ(json.at("accuracy").get<double>(), 15.0 / 30.0);  // over every evaluated cell
}
