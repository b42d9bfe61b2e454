// ropelab retrieval make | eval, and the retrieval columns of an ablation, with its tests.
#include "cli_util.h"

using namespace ropelab::cli_test;

TEST(Cli, RetrievalDocumentsEvaluationAndAblationColumns) {
  const auto root = fresh_dir("retrieval");
  const auto hay = write_temp((root / "hay.txt").string(),
                              "The Congress met in the winter and spoke of many things, of trade and of war. The "
                              "treaties held and the commerce of the nation grew in every port.\n");
  // make: the same seed, the same documents; each line a document, --answers adds a TAB and each answer
  auto a = run("retrieval make --task multikey --count 3 --length 400 --seed 2 --corpus " + hay);
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_EQ(a.output, run("retrieval make --task multikey --count 3 --length 400 --seed 2 --corpus " + hay).output);
  EXPECT_EQ(std::count(a.output.begin(), a.output.end(), '\n'), 3);
  EXPECT_NE(a.output.find("One of the special magic numbers for "), std::string::npos) << a.output;
  const auto answered = run("retrieval make --task mqar --count 2 --length 100 --queries 3 --answers");
  EXPECT_EQ(std::count(answered.output.begin(), answered.output.end(), '\t'), 6) << answered.output;
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"make --task multikey --length 100 --corpus " + hay,
            "ropelab: error: --length: 100 is below the 261 characters multikey's needles and question take\n"},
           {"make --task vartrack --corpus /nonexistent/hay.txt",
            "ropelab: error: /nonexistent/hay.txt: cannot read the haystack corpus\n"},
           {"eval --run " + root.string() + " --task mqar --depths 0.5",
            "ropelab: error: --depths: mqar places no needle at a depth\n"}}) {
    const auto r = run("retrieval " + args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(r.output, message) << args;
  }
  EXPECT_EQ(run("retrieval make --task niah").code, 2);

  // an ablation: two variants, two seeds, mqar and multikey at two lengths, tests against rotary
  const auto text = write_temp((root / "text.txt").string(), a.output);
  const auto exp = (root / "exp.yaml").string();
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                     << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=32, data.train=" << text
                     << ", data.valid=" << text << ", data.test=" << text
                     << ", train.steps=2, train.valid_every=2, model.d_model=16, model.heads=2, model.d_ff=16,"
                        " model.encoder_layers=1, model.decoder_layers=1, data.retrieval.tasks=mqar,"
                        " data.retrieval.ratio=0.5, data.retrieval.min_length=40, data.retrieval.max_length=60]\n"
                        "grid:\n  model.position.type: [rotary, alibi]\nseeds: [1, 2]\n"
                        "retrieval:\n  tasks: [mqar, multikey]\n  lengths: [300, 400]\n  depths: [0, 1]\n"
                        "  documents: 2\n  corpus: "
                     << hay << "\n";
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --jobs 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto run_dir = out + "/runs/model.position.type=rotary.seed1";
  EXPECT_NE(read_text(run_dir + ".log").find("retrieval documents, "), std::string::npos);  // the training mix
  const auto summary = nlohmann::json::parse(read_text(run_dir + "/retrieval.mqar.json"));
  EXPECT_TRUE(summary.contains("accuracy@300"));
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/retrieval.multikey.svg"));
  // a new document set per seed: the cells of seed 1 and 2 were drawn from other streams
  EXPECT_NE(read_text(run_dir + ".log").find("--retrieval-seed 1001"), std::string::npos)
      << read_text(run_dir + ".log");
  EXPECT_NE(read_text(out + "/runs/model.position.type=rotary.seed2.log").find("--retrieval-seed 1002"),
            std::string::npos);
  const auto md = read_text(out + "/results.md");
  EXPECT_NE(md.find("| mqar@300 | mqar@400 | multikey@300 | multikey@400 |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Retrieval pooled over seeds"), std::string::npos) << md;
  EXPECT_NE(md.find("; seeds "), std::string::npos) << md;
  const auto csv = read_text(out + "/significance.csv");
  EXPECT_NE(csv.find("\n\"model.position.type=alibi\",\"model.position.type=rotary\",multikey@400,two_stage_bootstrap,"
                     "\"1 2\","),
            std::string::npos)
      << csv;
  std::filesystem::remove_all(root);
}
