// ropelab eval and average: reports, hypotheses, broken run files, RoPE scaling and precision at evaluation.
#include "cli_util.h"

using namespace ropelab::cli_test;

TEST(Cli, EvalWritesHypothesesAndScoresAndAverageCombinesCheckpoints) {
  auto r = run("eval --run " + micro_run() + " --split test --beam 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("BLEU = ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("chrF2 = "), std::string::npos);
  EXPECT_NE(r.output.find("perplexity = "), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(micro_run() + "/hyp.test.txt"));
  EXPECT_TRUE(std::filesystem::exists(micro_run() + "/eval.test.json"));
  r = run("average --run " + micro_run() + " --last 3");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(micro_run() + "/checkpoint_avg3.pt"));
  {  // every averaged parameter is the mean of the three numbered checkpoints'
    const auto numbered = ropelab::RunPaths(micro_run()).numbered_checkpoints();
    ASSERT_EQ(numbered.size(), 3u);
    auto averaged =
        ropelab::open_run(micro_run(), micro_run() + "/checkpoint_avg3.pt", torch::kCPU, ropelab::yaml_config_files());
    std::vector<ropelab::LoadedRun> inputs;
    for (const auto& path : numbered)
      inputs.push_back(ropelab::open_run(micro_run(), path, torch::kCPU, ropelab::yaml_config_files()));
    int64_t differing = 0;  // parameters that differ between the inputs: the mean is not any one of them
    for (const auto& p : averaged.model->module().named_parameters()) {
      auto sum = torch::zeros_like(p.value());
      for (const auto& in : inputs) sum += in.model->module().named_parameters()[p.key()];
      EXPECT_TRUE(torch::allclose(p.value(), sum / 3.0, 1e-6, 1e-7)) << p.key();
      differing += !torch::equal(inputs.front().model->module().named_parameters()[p.key()],
                                 inputs.back().model->module().named_parameters()[p.key()]);
    }
    EXPECT_GT(differing, 0);
  }
  r = run("eval --run " + micro_run() + " --checkpoint " + micro_run() + "/checkpoint_avg3.pt --beam 1");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run("average --run " + micro_run() + " --last 9");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("asked to average 9 checkpoints but 3 numbered checkpoints exist"), std::string::npos)
      << r.output;
}

// Every broken file of a run directory: exit 1 and one line naming the file.
TEST(Cli, BrokenRunFilesGiveOneLineNamingTheFile) {
  const auto root = fresh_dir("broken");
  const auto good = (root / "good").string();
  std::filesystem::copy(micro_run(), good, std::filesystem::copy_options::recursive);
  struct Case {
    std::string what, file, contents, expected;
    int code = 1;  // config errors: 2
  };
  const std::string vocab = read_text(good + "/vocab.txt");
  const std::string specials = vocab.substr(0, vocab.find("gato"));  // specials and a few words
  const std::vector<Case> cases = {
      {"vocabulary of another size", "vocab.txt", specials, "/checkpoint_last.pt: embedding.weight has shape"},
      {"missing vocabulary", "vocab.txt", "", "/vocab.txt: missing word vocabulary"},
      {"foreign vocabulary", "vocab.txt", "a\nb\n", "/vocab.txt: not a ropelab vocabulary"},
      {"missing SentencePiece model", "config.yaml", "", "/spm.model: missing SentencePiece model"},
      {"corrupt SentencePiece model", "spm.model", "not a model",
       "/spm.model: cannot load SentencePiece model: not a SentencePiece model (corrupt or foreign)"},
      {"foreign checkpoint", "checkpoint_last.pt", "PK\x03\x04 not a zip", "/checkpoint_last.pt: not a readable"},
      {"truncated checkpoint", "checkpoint_last.pt", "", "/checkpoint_last.pt: not a readable"},
      {"unknown config key", "config.yaml", "", "/config.yaml: unknown key model.d_modle (did you mean model.d_model?)",
       2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto dir = (root / "broken").string();
    std::filesystem::remove_all(dir);
    std::filesystem::copy(good, dir, std::filesystem::copy_options::recursive);
    const auto file = dir + "/" + c.file;
    if (c.what == "missing vocabulary") {
      std::filesystem::remove(file);
    } else if (c.what == "truncated checkpoint") {
      std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
    } else if (c.file == "config.yaml") {
      auto config = read_text(file);
      if (c.what == "unknown config key") {
        config.replace(config.find("d_model"), 7, "d_modle");
      } else {
        config.replace(config.find("type: word"), 10, "type: sentencepiece");
      }
      std::ofstream(file) << config;
    } else {
      std::ofstream(file) << c.contents;
    }
    if (c.file == "spm.model") {
      auto config = read_text(dir + "/config.yaml");
      config.replace(config.find("type: word"), 10, "type: sentencepiece");
      std::ofstream(dir + "/config.yaml") << config;
    }
    auto r = run("eval --run " + dir + " --checkpoint last");
    EXPECT_EQ(r.code, c.code) << r.output;
    EXPECT_NE(r.output.find(dir + c.expected), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  std::filesystem::remove_all(root);
}

// RoPE scaling at evaluation time, without retraining: each method changes the perplexity
// past the training context; the report records what was set; so do the positions a
// window's sinks take; keys that would not match the trained parameters are refused.
TEST(Cli, EvalScalesRotaryWithoutRetraining) {
  const auto root = fresh_dir("scaling");
  const auto lm = (root / "lm").string();
  auto r = train_tiny_rotary_lm(root, lm, " --set model.d_model=16 --set model.d_ff=16");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("eval --run " + lm + " --checkpoint last --context 64");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto plain = r.output.substr(0, r.output.find('\n'));
  for (const char* type : {"linear", "ntk", "dynamic_ntk", "yarn"}) {
    SCOPED_TRACE(type);
    r = run("eval --run " + lm + " --checkpoint last --context 64 --set model.position.scaling.type=" + type +
            " --set model.position.scaling.factor=4");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("perplexity = ", 0), 0u) << r.output;
    EXPECT_NE(r.output.substr(0, r.output.find('\n')), plain);
    const auto report = read_text(lm + "/eval.test.ctx64.set_" + type + "_4.json");
    EXPECT_NE(report.find(std::string("model.position.scaling.type=") + type), std::string::npos) << report;
  }
  // a window with sinks, at StreamingLLM's cache positions (the default) and at sequence positions
  const std::string windowed =
      " --checkpoint last --context 64 --set model.attention.window=8 --set "
      "model.attention.sinks=2";
  r = run("eval --run " + lm + windowed);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto cache = r.output.substr(0, r.output.find('\n'));
  r = run("eval --run " + lm + windowed + " --set model.attention.window_positions=sequence");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.substr(0, r.output.find('\n')), cache);
  // a loss-by-position plot that cannot be written (its temporary file a link to /dev/full)
  // leaves no report, so that `ablate` evaluates again
  std::filesystem::create_symlink("/dev/full", lm + "/eval.test.ctx32.positions.svg.tmp");
  r = run("eval --run " + lm + " --checkpoint last --context 32 --per-position");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(lm + "/eval.test.ctx32.positions.svg: cannot write"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(lm + "/eval.test.ctx32.json"));
  r = run("eval --run " + lm + " --checkpoint last --set model.d_model=8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--set model.d_model=8: a trained run takes only data.{eval_tokens,documents}, "
                          "model.position.rotary_impl, model.position.scaling.*"),
            std::string::npos)
      << r.output;
  std::filesystem::remove_all(root);
}

// A run trained in bf16 keeps an fp32 checkpoint: eval reads it in either precision, and the
// two perplexities are close without being equal.
TEST(Cli, Bfloat16RunEvaluatesInEitherPrecision) {
  const auto root = fresh_dir("precision");
  const auto lm = (root / "lm").string();
  auto r = train_tiny_rotary_lm(root, lm, " --set model.d_model=32 --set model.d_ff=32 --set train.precision=bf16");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(read_text(lm + "/config.yaml").find("precision: bf16"), std::string::npos);
  auto perplexity = [&](const std::string& flags) {
    const auto out = run("eval --run " + lm + " --checkpoint last --threads 1" + flags);
    EXPECT_EQ(out.code, 0) << out.output;
    const auto at = out.output.find("perplexity = ");
    return at == std::string::npos ? -1.0 : std::stod(out.output.substr(at + 13));
  };
  const double fp32 = perplexity(""), bf16 = perplexity(" --precision bf16");
  EXPECT_GT(fp32, 1.0);
  EXPECT_NE(bf16, fp32);
  EXPECT_NEAR(bf16, fp32, 0.02 * fp32);
  // each precision's report has its own file
  EXPECT_NE(read_text(lm + "/eval.test.ctx16.json").find("\"precision\":\"fp32\""), std::string::npos);
  EXPECT_NE(read_text(lm + "/eval.test.ctx16.bf16.json").find("\"precision\":\"bf16\""), std::string::npos);
  r = run("eval --run " + lm + " --checkpoint last --precision fp16");  // CUDA only
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fp16 runs on CUDA only"), std::string::npos) << r.output;
  r = run("eval --run " + lm + " --checkpoint last --precision fp8");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--precision"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}
