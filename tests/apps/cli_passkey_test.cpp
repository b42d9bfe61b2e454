// ropelab passkey: documents and evaluation.
#include "cli_util.h"

using namespace ropelab::cli_test;

namespace {

/// Passkey documents for training: the same for every test here.
std::string passkey_documents() { return run("passkey make --count 4 --length 120 --min-length 100 --seed 3").output; }

/// A tiny byte-level language model trained `steps` updates on passkey documents in ROOT/lm.
Result train_passkey_lm(const std::filesystem::path& root, int steps, const std::string& more = "") {
  const auto train = write_temp((root / "train.txt").string(), passkey_documents());
  return run("train " + std::string(ROPELAB_SOURCE_DIR) +
             "/experiments/demo_tiny.yaml --set task=lm --set data.format=text --set tokenizer.type=byte"
             " --set data.context=32 --set data.train=" +
             train + " --set data.valid= --set data.test=" + train + " --set train.steps=" + std::to_string(steps) +
             " --set model.d_model=16 --set model.heads=2 --set model.d_ff=16"
             " --set model.decoder_layers=1 --set model.position.type=rotary --threads 1 " +
             more + " -o " + (root / "lm").string());
}

/// Runs a passkey evaluation with its heat map unwritable (a link to /dev/full), so that
/// its cells stay in the partial file.
Result leave_partial(const std::string& lm, const std::string& command) {
  std::filesystem::create_symlink("/dev/full", lm + "/passkey.svg.tmp");
  auto r = run(command);
  std::filesystem::remove(lm + "/passkey.svg.tmp");
  return r;
}

/// A tiny LM trained 2 updates in ROOT/lm (removed with the object), its partial file and a
/// one-depth evaluation of it.
struct TrainedPasskeyLm {
  explicit TrainedPasskeyLm(const std::string& tag)
      : root(fresh_dir(tag)),
        lm((root / "lm").string()),
        partial(lm + "/passkey.partial.jsonl"),
        one_cell("passkey eval --run " + lm + " --checkpoint last --lengths 100,140 --depths 0 --threads 1"),
        trained(train_passkey_lm(root, 2)) {}
  ~TrainedPasskeyLm() { std::filesystem::remove_all(root); }
  std::filesystem::path root;
  std::string lm, partial, one_cell;
  Result trained;
};

}  // namespace

// passkey make writes the same documents for the same seed, and refuses a length too short
// for the key sentence.
TEST(Cli, PasskeyMakeWritesTheSameDocumentsForTheSameSeed) {
  auto a = run("passkey make --count 4 --length 120 --min-length 100 --seed 3");
  const auto b = run("passkey make --count 4 --length 120 --min-length 100 --seed 3");
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  EXPECT_EQ(std::count(a.output.begin(), a.output.end(), '\n'), 4);
  EXPECT_NE(a.output, run("passkey make --count 4 --length 120 --min-length 100 --seed 4").output);
  const auto prompts = run("passkey make --count 2 --length 100 --prompts");
  EXPECT_EQ(std::count(prompts.output.begin(), prompts.output.end(), '\t'), 2) << prompts.output;
  auto r = run("passkey make --length 50");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--length 50 is below the"), std::string::npos) << r.output;
}

// passkey eval scores a language model at each (length, depth) into a table, a summary and a
// heat map.
TEST(Cli, PasskeyEvalWritesItsTableSummaryAndHeatMap) {
  const auto root = fresh_dir("passkey_eval");
  const auto lm = (root / "lm").string();
  auto r = train_passkey_lm(root, 2);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("passkey eval --run " + lm + " --checkpoint last --lengths 100,140 --depths 0,1 --documents 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("   140   1.00  "), std::string::npos) << r.output;
  // a progress line per cell as it is scored, the last naming the last cell
  EXPECT_NE(r.output.find("passkey: cell 1/4, length 100 depth 0: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("passkey: cell 4/4, length 140 depth 1: "), std::string::npos) << r.output;
  const auto table = read_text(lm + "/passkey.csv");
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5) << table;  // header + 2 lengths x 2 depths
  EXPECT_EQ(table.rfind("length,depth,documents,correct,accuracy,ci95_low,ci95_high,error\n100,0,2,", 0), 0u) << table;
  {  // each cell's Wilson interval (tests/eval/passkey_test.cpp) brackets its accuracy
    std::istringstream rows(table.substr(table.find('\n') + 1));
    for (std::string row; std::getline(rows, row);) {
      double length, depth, documents, correct, accuracy, low, high;
      ASSERT_EQ(std::sscanf(row.c_str(), "%lf,%lf,%lf,%lf,%lf,%lf,%lf,", &length, &depth, &documents, &correct,
                            &accuracy, &low, &high),
                7)
          << row;
      EXPECT_LE(low, accuracy) << row;
      EXPECT_GE(high, accuracy) << row;
      EXPECT_LT(low, high) << row;
    }
  }
  // stdout gives each cell's count and interval: of 2 documents, 0, 1 or 2 found
  const auto printed = [&](const char* cell) { return r.output.find(cell) != std::string::npos; };
  EXPECT_TRUE(printed("(0/2; 95% CI 0.00-0.66)") || printed("(1/2; 95% CI 0.09-0.91)") ||
              printed("(2/2; 95% CI 0.34-1.00)"))
      << r.output;
  const auto summary = nlohmann::json::parse(read_text(lm + "/passkey.json"));
  EXPECT_EQ(summary.at("ci95@140").size(), 2u) << summary;
  // the counts over the length's depths: 2 depths x 2 documents, as many right as the accuracy says
  EXPECT_EQ(summary.at("documents@140").get<int>(), 4) << summary;
  EXPECT_DOUBLE_EQ(summary.at("correct@140").get<double>() / 4.0, summary.at("accuracy@140").get<double>());
  EXPECT_TRUE(std::filesystem::exists(lm + "/passkey.svg"));
  const auto partial = lm + "/passkey.partial.jsonl";  // the cells so far, gone once the summary is written
  EXPECT_FALSE(std::filesystem::exists(partial));
  std::filesystem::remove_all(root);
}

// A passkey evaluation stopped part-way goes on from the cells of its partial file.
TEST(Cli, PasskeyEvalGoesOnFromItsPartialFile) {
  const TrainedPasskeyLm run_dir("passkey_partial");
  ASSERT_EQ(run_dir.trained.code, 0) << run_dir.trained.output;
  const auto &lm = run_dir.lm, &partial = run_dir.partial, &one_cell = run_dir.one_cell;
  // a heat map that cannot be written (its temporary file a link to /dev/full) leaves no
  // summary, so that `ablate` evaluates again, and the cells scored, so that it goes on from them
  std::filesystem::create_symlink("/dev/full", lm + "/passkey.svg.tmp");
  auto r = run(one_cell + " --documents 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(lm + "/passkey.svg: cannot write"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(lm + "/passkey.json"));
  EXPECT_TRUE(std::filesystem::exists(partial));
  std::filesystem::remove(lm + "/passkey.svg.tmp");
  const auto first_table = read_text(lm + "/passkey.csv");
  // the same evaluation again takes both cells from the partial file and scores none
  r = run(one_cell + " --documents 1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("passkey: 2 of 2 cells scored before, from " + partial), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("passkey: cell "), std::string::npos) << r.output;
  EXPECT_EQ(read_text(lm + "/passkey.csv"), first_table);
  EXPECT_TRUE(std::filesystem::exists(lm + "/passkey.json"));
  EXPECT_FALSE(std::filesystem::exists(partial));
  // a partial file of one cell goes on from the second; one of another grid is not taken
  r = leave_partial(lm, one_cell + " --documents 1");
  ASSERT_TRUE(std::filesystem::exists(partial)) << r.output;
  const auto cells = read_text(partial);
  write_temp(partial, cells.substr(0, cells.rfind('\n', cells.size() - 2) + 1));  // the last cell taken off
  r = run(one_cell + " --documents 1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("passkey: 1 of 2 cells scored before"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("passkey: cell 1/2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("passkey: cell 2/2, length 140 depth 0: "), std::string::npos) << r.output;
  EXPECT_EQ(read_text(lm + "/passkey.csv"), first_table);
}

// A partial file of another grid, checkpoint, config or flag is not taken, nor one that is
// not a partial file; and too short a length is refused.
TEST(Cli, PasskeyEvalScoresAgainWhatAnotherEvaluationLeft) {
  const TrainedPasskeyLm run_dir("passkey_other");
  ASSERT_EQ(run_dir.trained.code, 0) << run_dir.trained.output;
  const auto& root = run_dir.root;
  const auto &lm = run_dir.lm, &partial = run_dir.partial, &one_cell = run_dir.one_cell;
  auto r = leave_partial(lm, one_cell + " --documents 1");
  r = run(one_cell + " --documents 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("passkey: " + partial +
                          " holds the cells of another grid, checkpoint or setting: scoring every cell"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("passkey: cell 1/2, length 100 depth 0: "), std::string::npos) << r.output;
  // nor one of the same grid on a checkpoint saved since (the run trained on)
  r = leave_partial(lm, one_cell + " --documents 2");
  ASSERT_TRUE(std::filesystem::exists(partial)) << r.output;
  r = train_passkey_lm(root, 4, "--resume");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run(one_cell + " --documents 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("holds the cells of another grid, checkpoint or setting"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("passkey: cell 1/2, length 100 depth 0: "), std::string::npos) << r.output;
  // nor one of a run whose config.yaml was edited since (here: a comment added)
  r = leave_partial(lm, one_cell + " --documents 2");
  ASSERT_TRUE(std::filesystem::exists(partial)) << r.output;
  write_temp(lm + "/config.yaml", read_text(lm + "/config.yaml") + "# edited by hand\n");
  r = run(one_cell + " --documents 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("holds the cells of another grid, checkpoint or setting"), std::string::npos) << r.output;
  // nor one of other flags: the key's digits, documents' seed
  for (const std::string flag : {"--digits 4", "--passkey-seed 7"}) {
    r = leave_partial(lm, one_cell + " --documents 2");
    ASSERT_TRUE(std::filesystem::exists(partial)) << r.output;
    r = run(one_cell + " --documents 2 " + flag);
    EXPECT_EQ(r.code, 0) << flag << "\n" << r.output;
    EXPECT_NE(r.output.find("holds the cells of another grid, checkpoint or setting"), std::string::npos)
        << flag << "\n"
        << r.output;
  }
  // an evaluation under --set has files of its own beside the plain ones, partial file included
  r = leave_partial(lm, one_cell + " --documents 2");
  ASSERT_TRUE(std::filesystem::exists(partial)) << r.output;
  r = run(one_cell + " --documents 2 --set model.attention.kernel=materialized");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("holds the cells of another grid"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(lm + "/passkey.set_materialized.json")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(partial)) << r.output;  // the plain evaluation's, left to go on from
  EXPECT_NE(read_text(lm + "/passkey.set_materialized.svg").find("--set model.attention.kernel=materialized"),
            std::string::npos);
  write_temp(partial, "not json\n");
  r = run(one_cell + " --documents 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(partial + " line 1: not {\"evaluation\": ...} (remove the file to score every cell again)"),
            std::string::npos)
      << r.output;
  std::filesystem::remove(partial);
  r = run("passkey eval --run " + lm + " --checkpoint last --lengths 60 --threads 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--lengths: 60 is below the"), std::string::npos) << r.output;
}
