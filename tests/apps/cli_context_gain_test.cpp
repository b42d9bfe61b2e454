// Context gain from the command line and in ablations: `eval --context-gain W` prints a line
// per bucket and refuses what it cannot measure; an experiment's eval_context_gain gives gain
// columns, and its baseline and pairs give the two-stage tests of significance.csv.
#include "cli_util.h"

using namespace ropelab::cli_test;

namespace {

/// `eval --context-gain W` on a run trained at 8: the perplexity at the context from its
/// full pass, equal to `--per-position`'s; a line per bucket with its interval and tokens; a
/// window that covers the context, or a gain with sliding windows, refused in one line.
void context_gain_command_line(const std::string& run_dir) {
  // its full pass writes the perplexity at 32 as well: the files `--context 32 --per-position` writes
  const auto ppl = run_dir + "/eval.test.ctx32";
  for (const auto* file : {".json", ".items.tsv", ".positions.csv", ".positions.svg"})
    std::filesystem::remove(ppl + file);
  auto r = run("eval --run " + run_dir + " --context 32 --context-gain 8");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("perplexity = ", 0), 0u) << r.output;  // the companion first
  const auto items = read_text(ppl + ".items.tsv"), positions = read_text(ppl + ".positions.csv");
  EXPECT_EQ(nlohmann::json::parse(read_text(ppl + ".json")).at("perplexity").get<double>(),
            nlohmann::json::parse(read_text(ppl + ".gain8.json")).at("perplexity").get<double>());
  ASSERT_TRUE(std::filesystem::exists(ppl + ".positions.svg"));
  r = run("eval --run " + run_dir + " --context 32 --per-position");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_text(ppl + ".items.tsv"), items);
  EXPECT_EQ(read_text(ppl + ".positions.csv"), positions);
  r = run("eval --run " + run_dir + " --context 32 --context-gain 8");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\ncontext gain [8, 16): "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" nats/token (95% CI "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\ncontext gain all [8, 32): "), std::string::npos) << r.output;
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--context 32 --context-gain 32",
            "ropelab: error: --context-gain 32 is not below the context 32: a window of that many keys sees the whole "
            "evaluation window, so there is nothing to gain\n"},
           {"--context-gain 8",  // the run's own context, 8
            "ropelab: error: --context-gain 8 is not below the context 8: a window of that many keys sees the whole "
            "evaluation window, so there is nothing to gain\n"},
           {"--context 32 --context-gain 8 --stride 4",
            "ropelab: error: --context-gain compares non-overlapping windows and reports by bucket of positions: drop "
            "--stride and --per-position\n"}}) {
    r = run("eval --run " + run_dir + " " + flags);
    EXPECT_EQ(r.code, 1) << flags;
    EXPECT_EQ(r.output, message) << flags;
  }
  r = run("eval --run " + run_dir + " --context 32 --context-gain 0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--context-gain"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

}  // namespace

TEST(Cli, ContextGainAblationGivesGainColumnsAndTwoStageTests) {
  const auto root = fresh_dir("context_gain");
  const auto text = write_temp((root / "docs.txt").string(), ropelab::testing::named_documents(6, 8));
  const auto exp = (root / "exp.yaml").string();
  auto write_experiment = [&](const std::string& more) {
    std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                       << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=8, data.documents=true, "
                          "data.train="
                       << text << ", data.valid=" << text << ", data.test=" << text
                       << ", train.steps=2, train.valid_every=2, model.d_model=16, model.heads=2, model.d_ff=16,"
                          " model.encoder_layers=1, model.decoder_layers=1]\n"
                          "grid:\n  model.position.type: [rotary, alibi]\nseeds: [1, 2]\n"
                          "eval_contexts: [8, 32]\neval_context_gain: [8]\n"
                       << more;
  };
  write_experiment(
      "baseline: model.position.type=alibi\npairs: [[model.position.type=alibi, "
      "model.position.type=rotary]]\n");
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --jobs 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto run_dir = out + "/runs/model.position.type=rotary.seed1";
  // one evaluation: context 32 over a window of 8 (at 8 there is nothing beyond the window)
  const auto report = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx32.gain8.json"));
  EXPECT_EQ(report.at("units").get<std::string>(), "documents");
  EXPECT_EQ(report.at("unit_count").get<int>(), 6);
  EXPECT_GT(report.at("tokens@8-16").get<int>(), 0);
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/eval.test.ctx8.gain8.json"));
  const auto md = read_text(out + "/results.md");
  EXPECT_NE(md.find("| gain@32#w8:8-16 | gain@32#w8:8-32 | gain@32#w8:16-32 |"), std::string::npos) << md;
  const auto csv = read_text(out + "/significance.csv");
  // rotary against alibi and the pair alibi against rotary, per column; every variant's gains against 0
  for (const std::string row :
       {"\"model.position.type=rotary\",\"model.position.type=alibi\",test_ppl@32,two_stage_bootstrap,\"1 2\",",
        "\"model.position.type=rotary\",\"model.position.type=alibi\",gain@32#w8:8-16,two_stage_bootstrap,\"1 2\",",
        "\"model.position.type=alibi\",\"model.position.type=rotary\",test_ppl@8,two_stage_bootstrap,\"1 2\",",
        "\"model.position.type=alibi\",\"0\",gain@32#w8:16-32,two_stage_bootstrap,\"1 2\","})
    EXPECT_NE(csv.find("\n" + row), std::string::npos) << row << "\n" << csv;
  EXPECT_EQ(csv.find("\"model.position.type=alibi\",\"model.position.type=alibi\""), std::string::npos) << csv;
  EXPECT_NE(md.find("## Tests against model.position.type=alibi"), std::string::npos) << md;
  EXPECT_NE(md.find("## Tests against model.position.type=rotary"), std::string::npos) << md;
  EXPECT_NE(md.find("## Context gain against 0"), std::string::npos) << md;

  ASSERT_NO_FATAL_FAILURE(context_gain_command_line(run_dir));

  // experiment files that stop before any run, with one line naming the file and key
  for (const auto& [more, message] : std::vector<std::pair<std::string, std::string>>{
           {"baseline: model.position.type=xpos\n",
            "baseline: model.position.type=xpos is not a variant of the experiment (model.position.type=rotary, "
            "model.position.type=alibi)"},
           {"pairs: [[model.position.type=rotary]]\n", "pairs: each entry must be [VARIANT, BASELINE]"},
           {"eval_context_gain: [64]\n",
            "eval_context_gain: 64 is not below any evaluation context (the longest is 32)"},
       }) {
    write_experiment(more);
    if (more.rfind("eval_context_gain", 0) == 0) {  // replace the key rather than repeat it
      auto contents = read_text(exp);
      contents.replace(contents.find("eval_context_gain: [8]\n"), 23, "");
      std::ofstream(exp) << contents;
    }
    r = run("ablate " + exp + " -o " + out);
    EXPECT_EQ(r.code, 2) << more;
    EXPECT_EQ(r.output, "ropelab: config error: " + exp + ": " + message + "\n") << more;
  }
  std::filesystem::remove_all(root);
}
