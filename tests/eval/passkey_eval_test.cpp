// Scoring a passkey grid (eval/passkey_eval.h) with a stand-in for the model: documents by
// cell, errors kept per cell, and an evaluation that goes on from the cells scored before.
#include "ropelab/eval/passkey_eval.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

namespace {

/// Answers with the document's key when its last digit is even, else with "0": which
/// documents a cell gets shows in its count. Prompts longer than `longest` are refused, as a
/// learned position table refuses them.
struct Oracle {
  int64_t longest = 1 << 20;
  int64_t calls = 0;
  std::vector<std::string> operator()(const std::vector<std::string>& prompts) {
    ++calls;
    std::vector<std::string> out;
    for (const auto& p : prompts) {
      if (static_cast<int64_t>(p.size()) > longest) throw std::runtime_error("too long for the table");
      const std::string before = "The pass key is ";
      const auto at = p.find(before) + before.size();
      const auto key = p.substr(at, p.find('.', at) - at);
      out.push_back(p + " " + ((key.back() - '0') % 2 == 0 ? key : "0") + ".");
    }
    return out;
  }
};

PasskeyGrid small_grid() {
  PasskeyGrid g;
  g.lengths = {120, 160, 200};
  g.depths = {0, 0.5, 1};
  g.documents = 8;
  return g;
}

}  // namespace

// Cell c holds documents c * documents ... c * documents + documents - 1 of the grid's
// stream, and every cell is asked once, in order, lengths outer.
TEST(PasskeyGrid, EachCellScoresItsOwnDocuments) {
  const auto grid = small_grid();
  Oracle oracle;
  std::vector<size_t> told;
  const auto cells = score_passkey_grid(grid, std::ref(oracle), [&](const PasskeyCell&, size_t done, size_t total) {
    told.push_back(done);
    EXPECT_EQ(total, 9u);
  });
  ASSERT_EQ(cells.size(), 9u);
  EXPECT_EQ(oracle.calls, 9);
  EXPECT_EQ(told, (std::vector<size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  int64_t all = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    EXPECT_EQ(cells[c].length, grid.lengths[c / 3]);
    EXPECT_EQ(cells[c].depth, grid.depths[c % 3]);
    EXPECT_EQ(cells[c].documents, 8);
    int64_t even = 0;
    for (int64_t k = 0; k < 8; ++k) {
      PasskeyOptions o;
      o.length = cells[c].length, o.depth = cells[c].depth;
      const auto key = make_passkey_document(o, grid.seed, c * 8 + static_cast<uint64_t>(k)).key;
      even += (key.back() - '0') % 2 == 0;
    }
    EXPECT_EQ(cells[c].correct, even) << "cell " << c;
    all += cells[c].correct;
  }
  EXPECT_GT(all, 0);
  EXPECT_LT(all, 72);
}

// An evaluation that goes on from its first cells scores only the rest, with the documents
// they would have had: the same cells as one evaluation straight through. A cell that
// failed is scored again (here it fails again, with the same reason).
TEST(PasskeyGrid, GoingOnFromScoredCellsGivesTheSameCells) {
  const auto grid = small_grid();
  Oracle straight;
  straight.longest = 180;  // the 200-character cells (7 to 9) are refused
  const auto whole = score_passkey_grid(grid, std::ref(straight));
  ASSERT_EQ(whole.size(), 9u);
  for (size_t c = 6; c < 9; ++c) {
    EXPECT_EQ(whole[c].error, "too long for the table");
    EXPECT_EQ(whole[c].documents, 0);
  }
  for (size_t first : {1u, 4u, 7u, 8u, 9u}) {
    Oracle rest;
    rest.longest = 180;
    std::vector<PasskeyCell> scored(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(first));
    const size_t again = first > 6 ? first - 6 : 0;  // the failed cells among them
    std::vector<size_t> told;
    const auto cells = score_passkey_grid(
        grid, std::ref(rest), [&](const PasskeyCell&, size_t done, size_t) { told.push_back(done); }, scored);
    EXPECT_EQ(rest.calls, static_cast<int64_t>(9 - first + again)) << first;
    ASSERT_EQ(told.size(), 9 - first + again) << first;
    EXPECT_EQ(told.front(), first + 1 - again) << first;
    ASSERT_EQ(cells.size(), 9u);
    for (size_t c = first - again; c < 9; ++c) {  // the cells scored now
      EXPECT_EQ(cells[c].correct, whole[c].correct) << "from " << first << ", cell " << c;
      EXPECT_EQ(cells[c].documents, whole[c].documents) << "from " << first << ", cell " << c;
      EXPECT_EQ(cells[c].error, whole[c].error) << "from " << first << ", cell " << c;
    }
  }
  // a failed cell whose error has passed is scored this time
  Oracle roomy;
  const auto cells = score_passkey_grid(grid, std::ref(roomy), {}, whole);
  EXPECT_EQ(roomy.calls, 3);
  for (size_t c = 6; c < 9; ++c) {
    EXPECT_TRUE(cells[c].error.empty()) << c;
    EXPECT_EQ(cells[c].documents, 8) << c;
  }
}

// Scored cells that are not the grid's first are refused before anything is scored.
TEST(PasskeyGrid, ScoredCellsMustStartTheGrid) {
  const auto grid = small_grid();
  Oracle oracle;
  auto cells = score_passkey_grid(grid, std::ref(oracle));
  std::vector<PasskeyCell> wrong{cells[1]};
  Oracle none;
  EXPECT_EQ(
      error_of([&] { score_passkey_grid(grid, std::ref(none), {}, wrong); }),
      "scored cell 1: length 120 depth 0.5 with 8 documents, where the grid's cell 1 is length 120 depth 0 with 8");
  auto fewer = std::vector<PasskeyCell>{cells[0]};
  fewer[0].documents = 4;
  EXPECT_EQ(error_of([&] { score_passkey_grid(grid, std::ref(none), {}, fewer); }),
            "scored cell 1: length 120 depth 0 with 4 documents, where the grid's cell 1 is length 120 depth 0 with 8");
  cells.push_back(cells[0]);
  EXPECT_EQ(error_of([&] { score_passkey_grid(grid, std::ref(none), {}, cells); }),
            "10 cells scored already, but the grid has 9");
  EXPECT_EQ(none.calls, 0);
}

// A cell whose continuations fail carries an error even when the exception says nothing,
// and a callback that answers fewer prompts than it was asked stops the grid.
TEST(PasskeyGrid, FailedOrShortContinuationsAreNotScores) {
  const auto grid = small_grid();
  const auto silent = [](const std::vector<std::string>&) -> std::vector<std::string> { throw std::runtime_error(""); };
  const auto cells = score_passkey_grid(grid, silent);
  ASSERT_EQ(cells.size(), 9u);
  for (const auto& c : cells) {
    EXPECT_EQ(c.error, "an exception without a message");
    EXPECT_EQ(c.documents, 0);
  }
  const auto short_by_one = [](const std::vector<std::string>& prompts) {
    return std::vector<std::string>(prompts.begin(), prompts.end() - 1);
  };
  EXPECT_NE(error_of([&] { score_passkey_grid(grid, short_by_one); }).find("passkey: 7 continuations of 8 prompts"),
            std::string::npos);
}

namespace {

struct Stopped {};  // what a stop signal is to these tests: the evaluation ends at a cell

/// score_passkey_grid with `oracle`, stopped (Stopped) once cell `stop_after` is told, 0 for never.
PasskeyScorer scorer(const PasskeyGrid& grid, Oracle& oracle, size_t stop_after) {
  return [&grid, &oracle, stop_after](const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored) {
    return score_passkey_grid(
        grid, std::ref(oracle),
        [&](const PasskeyCell& cell, size_t done, size_t total) {
          progress(cell, done, total);
          if (done == stop_after) throw Stopped{};
        },
        scored);
  };
}

}  // namespace

using PasskeyResuming = ropelab::testing::TempDir;

// An evaluation stopped part-way goes on from its partial file, which holds the grid's first
// cells in order at every moment: a failed cell scored again takes its own place, so that an
// evaluation stopped a second time goes on again. Its log says what it took back and gives a
// line per cell; a partial file of another evaluation is replaced.
TEST_F(PasskeyResuming, AStoppedEvaluationGoesOnFromItsCells) {
  auto grid = small_grid();
  grid.lengths = {120, 200, 160};  // cells 4 to 6 refused by a table of 180
  const auto partial = (dir_ / "passkey.partial.jsonl").string();
  Oracle roomy;
  const auto whole = score_passkey_grid(grid, std::ref(roomy));

  Oracle table;
  table.longest = 180;
  std::ostringstream first;
  EXPECT_THROW(score_passkey_resuming(grid, partial, "k", scorer(grid, table, 7), first), Stopped);
  auto cells = read_passkey_partial(partial, "k", grid);
  ASSERT_EQ(cells.size(), 7u);
  EXPECT_EQ(cells[3].error, "too long for the table");
  EXPECT_NE(first.str().find("passkey: cell 7/9, length 160 depth 0: "), std::string::npos) << first.str();

  // the memory is there now: cells 4 and 5 are scored again, then it stops again
  Oracle more;
  std::ostringstream second;
  EXPECT_THROW(score_passkey_resuming(grid, partial, "k", scorer(grid, more, 5), second), Stopped);
  EXPECT_NE(
      second.str().find("passkey: 4 of 9 cells scored before, from " + partial + " (3 that failed are scored again)"),
      std::string::npos)
      << second.str();
  cells = read_passkey_partial(partial, "k", grid);
  ASSERT_EQ(cells.size(), 7u);
  for (size_t c : {3u, 4u}) EXPECT_EQ(cells[c].documents, whole[c].documents) << c;
  EXPECT_EQ(cells[5].error, "too long for the table");
  EXPECT_EQ(cells[6].correct, whole[6].correct);

  Oracle last;
  std::ostringstream third;
  cells = score_passkey_resuming(grid, partial, "k", scorer(grid, last, 0), third);
  EXPECT_EQ(last.calls, 3);  // cells 6, 8 and 9
  EXPECT_NE(third.str().find("passkey: 6 of 9 cells scored before"), std::string::npos) << third.str();
  ASSERT_EQ(cells.size(), whole.size());
  for (size_t c = 0; c < cells.size(); ++c) {
    EXPECT_EQ(cells[c].correct, whole[c].correct) << c;
    EXPECT_EQ(cells[c].error, whole[c].error) << c;
  }
  EXPECT_EQ(read_passkey_partial(partial, "k", grid).size(), 9u);

  // another evaluation's file: every cell scored, the file replaced
  Oracle other;
  std::ostringstream fourth;
  score_passkey_resuming(grid, partial, "another", scorer(grid, other, 0), fourth);
  EXPECT_EQ(other.calls, 9);
  EXPECT_NE(fourth.str().find("passkey: " + partial + " holds the cells of another grid, checkpoint or setting"),
            std::string::npos)
      << fourth.str();
  EXPECT_EQ(read_passkey_partial(partial, "another", grid).size(), 9u);
  remove_passkey_partial(partial, fourth);
  EXPECT_FALSE(std::filesystem::exists(partial));
}
