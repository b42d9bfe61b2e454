// The ropelab executable: subcommands listed, user mistakes give one line and a non-zero exit.
#include "ropelab/build_config.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>
#include <string>

namespace {

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  std::string output;
  FILE* pipe = popen((cli + " " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Cli, HelpListsSubcommands) {
  auto r = run("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"train", "translate"}) EXPECT_NE(r.output.find(sub), std::string::npos) << sub;
}

TEST(Cli, ConfigMistakesGiveOneLineAndExit2) {
  auto path = write_temp("ropelab_cli_bad.yaml", "model:\n  heads: 6\n");
  auto r = run("train " + path + " --dump-config");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output, "ropelab: config error: " + path + ": model.heads=6 does not divide model.d_model=512\n");
  r = run("train " + path + " --set model.heads=4 --set model.dmodle=3 --dump-config");
  EXPECT_EQ(r.output, "ropelab: config error: --set: unknown key model.dmodle (did you mean model.d_model?)\n");
}

TEST(Cli, DumpConfigAppliesPriorityAndFlags) {
  auto path = write_temp("ropelab_cli_ok.yaml", "model:\n  d_model: 256\n  heads: 4\n");
  auto r = run("train " + path + " --set model.d_model=128 --threads 3 --dump-config");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("d_model: 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("threads: 3"), std::string::npos) << r.output;
}

TEST(Cli, BadFlagsAndDevicesFail) {
  EXPECT_NE(run("train --no-such-flag").code, 0);
  EXPECT_NE(run("frobnicate").code, 0);
  auto path = write_temp("ropelab_cli_dev.yaml", "data:\n  train: /nonexistent.tsv\n");
  auto r = run("train " + path + " --device cuda:7 -o /tmp/ropelab_cli_run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output.rfind("ropelab: error: device cuda:7 requested but", 0), 0u) << r.output;
  r = run("translate --run /nonexistent_run_dir");
  EXPECT_NE(r.code, 0);
}

namespace {

/// A micro translator trained through the CLI once for the app tests below (~2 s).
const std::string& micro_run() {
  static const std::string dir = [] {
    const auto root = std::filesystem::temp_directory_path() / ("ropelab_cli_run_" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    const auto data = (root / "pairs.tsv").string();
    std::ofstream(data) << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n";
    const auto run_dir = (root / "run").string();
    auto r = run("train " + std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml --set data.train=" + data +
                 " --set data.valid=" + data + " --set data.test=" + data +
                 " --set model.d_model=16 --set model.heads=2 --set model.d_ff=16 --set model.encoder_layers=1"
                 " --set model.decoder_layers=1 --set train.steps=30 --set train.valid_every=10 --threads 1 -o " +
                 run_dir);
    EXPECT_EQ(r.code, 0) << r.output;
    return run_dir;
  }();
  return dir;
}

}  // namespace

TEST(Cli, TranslateIsALineFilterThatKeepsEmptyLines) {
  const auto input = write_temp("ropelab_cli_in.txt", "the cat\n\nthe dog\n");
  auto r = run("translate --run " + micro_run() + " --input " + input + " --beam 2 2>/dev/null");
  EXPECT_EQ(r.code, 0) << r.output;
  std::vector<std::string> lines;
  std::istringstream out(r.output);
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << r.output;
  EXPECT_TRUE(lines[1].empty());
  const auto bad = write_temp("ropelab_cli_bad_in.txt", "the cat\nbad \xC3\x28\n");
  r = run("translate --run " + micro_run() + " --input " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("ropelab: error: " + bad + ":2: invalid UTF-8"), std::string::npos) << r.output;
}

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
  r = run("eval --run " + micro_run() + " --checkpoint " + micro_run() + "/checkpoint_avg3.pt --beam 1");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run("average --run " + micro_run() + " --last 9");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("asked to average 9 checkpoints but 3 numbered checkpoints exist"), std::string::npos)
      << r.output;
}

TEST(Cli, ScorePrintsSacrebleuLinesAndRejectsBadFiles) {
  const auto ref = write_temp("ropelab_ref.txt", "The cat sat on the mat.\n");
  const auto hyp = write_temp("ropelab_hyp.txt", "The cat sat on the mat.\n");
  auto r = run("score --ref " + ref + " --hyp " + hyp);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.output.rfind("BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)", 0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("chrF2 = 100.00"), std::string::npos);
  const auto two = write_temp("ropelab_two.txt", "a\nb\n");
  r = run("score --ref " + two + " --hyp " + hyp);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, "ropelab: error: " + two + " has 2 lines but " + hyp + " has 1\n");
  const auto bad = write_temp("ropelab_bad_utf8.txt", "ok\n\xFF\n");
  r = run("score --ref " + bad + " --hyp " + two);
  EXPECT_EQ(r.output, "ropelab: error: " + bad + ":2: invalid UTF-8\n");
  r = run("score --ref " + ref + " --hyp " + hyp + " --json");
  EXPECT_EQ(r.output.rfind("{\"bleu\":100,", 0), 0u) << r.output;
}

TEST(Cli, SigtermDuringTrainingSavesAndExitsCleanly) {
  const auto root = std::filesystem::temp_directory_path() / ("ropelab_cli_sigterm_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const auto data = (root / "pairs.tsv").string();
  std::ofstream(data) << "the cat\tel gato\nthe dog\tel perro\n";
  const auto run_dir = (root / "run").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  // train "forever", then SIGTERM once the first steps are logged
  const std::string script = cli + " train " + ROPELAB_SOURCE_DIR + "/experiments/demo_tiny.yaml --set data.train=" +
                             data + " --set data.valid= --set train.steps=1000000 --set train.log_every=1 --threads 1 -o " +
                             run_dir + " > " + run_dir + ".log 2>&1 & pid=$!; for i in $(seq 100); do grep -q 'step 2/' " +
                             run_dir + ".log 2>/dev/null && break; sleep 0.1; done; kill -TERM $pid; wait $pid";
  const auto script_path = (root / "kill.sh").string();
  std::ofstream(script_path) << script << "\n";
  const int status = std::system(("bash " + script_path).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream log(run_dir + ".log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("stopping on SIGTERM after step"), std::string::npos) << text;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoint_last.pt"));
  auto r = run("translate --run " + run_dir + " --checkpoint last --input " + data);
  EXPECT_EQ(r.code, 0) << r.output;
  std::filesystem::remove_all(root);
}

// Issues #5 and #7: every position encoder, and Performer attention, trains a few steps and
// decodes through the apps, in the translator and in the language model.
TEST(Cli, EveryEncoderAndAttentionTrainsAndDecodesInBothTasks) {
  const auto root = std::filesystem::temp_directory_path() / ("ropelab_cli_kinds_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const auto pairs = (root / "pairs.tsv").string();
  std::ofstream(pairs) << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\n";
  const auto text = (root / "text.txt").string();
  std::ofstream(text) << "the cat sat on the mat.\n\nthe dog sat on the log.\na red house.\n";
  const std::string tiny = " --set model.d_model=16 --set model.heads=2 --set model.d_ff=16"
                           " --set model.encoder_layers=1 --set model.decoder_layers=1 --set train.steps=3"
                           " --set train.valid_every=0 --threads 1";
  const std::vector<std::string> variants = {
      "model.position.type=sinusoidal", "model.position.type=learned",   "model.position.type=t5_bias",
      "model.position.type=rotary",     "model.position.type=rotary_nd", "model.position.type=none",
      "model.attention.type=performer --set model.position.type=rotary",
      "model.attention.type=performer --set model.position.type=learned"};
  for (const auto& variant : variants) {
    SCOPED_TRACE(variant);
    const auto mt = (root / "mt").string(), lm = (root / "lm").string();
    std::filesystem::remove_all(mt), std::filesystem::remove_all(lm);
    auto r = run("train " + std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml --set data.train=" + pairs +
                 " --set data.valid=" + pairs + " --set data.test=" + pairs + " --set " + variant + tiny + " -o " + mt);
    ASSERT_EQ(r.code, 0) << r.output;
    r = run("eval --run " + mt + " --checkpoint last --beam 2");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("BLEU = ", 0), 0u) << r.output;

    r = run("train " + std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml --set task=lm"
            " --set data.format=text --set tokenizer.type=byte --set data.context=16 --set data.train=" + text +
            " --set data.valid=" + text + " --set data.test=" + text + " --set " + variant + tiny + " -o " + lm);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("1 empty lines skipped"), std::string::npos) << r.output;
    r = run("generate --run " + lm + " --checkpoint last --prompt 'the c' --max-new 5");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("the c", 0), 0u) << r.output;
    r = run("eval --run " + lm + " --checkpoint last --context 32");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("perplexity = ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("chunks of 32"), std::string::npos) << r.output;
  }
  auto r = run("translate --run " + (root / "lm").string() + " --checkpoint last --input " + text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("language model"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}
