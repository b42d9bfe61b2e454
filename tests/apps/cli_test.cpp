// The ropelab executable: subcommands listed, user mistakes give one line and a non-zero exit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "ropelab/build_config.h"
#include "ropelab/run/run.h"

namespace {

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

/// Runs a shell command line, capturing stdout and stderr.
Result run_shell(const std::string& command) {
  std::string output;
  FILE* pipe = popen(("{ " + command + " ; } 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

/// Runs the ropelab executable with `args`.
Result run(const std::string& args) { return run_shell(std::string(ROPELAB_BINARY_DIR) + "/ropelab " + args); }

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

/// An empty directory of the system temp dir, per process: ropelab_cli_TAG_PID.
std::filesystem::path fresh_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("ropelab_cli_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A whole file as a string ("" when missing).
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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

TEST(Cli, ExtraConfigFilesApplyAfterThePositionalOne) {
  auto base = write_temp("ropelab_cli_base.yaml", "model:\n  d_model: 256\n  heads: 4\n  d_ff: 64\n");
  auto more = write_temp("ropelab_cli_more.yaml", "model:\n  d_model: 128\n");
  auto r = run("train " + base + " -c " + more + " --dump-config");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("d_model: 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("d_ff: 64"), std::string::npos) << r.output;  // the positional file still applies
}

TEST(Cli, BadFlagsAndDevicesFail) {
  // flag mistakes: one line naming the flag, exit 2
  const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
  const std::pair<std::string, std::string> flag_cases[] = {
      {"train " + demo + " --no-such-flag",
       "ropelab: usage error: The following argument was not expected: --no-such-flag"},
      {"frobnicate", "ropelab: usage error: unknown command 'frobnicate' (expected train | translate | eval"},
      {"train /nonexistent/config.yaml", "ropelab: usage error: config: File does not exist: /nonexistent/config.yaml"},
      {"train " + demo + " --threads -1", "ropelab: usage error: --threads: must be >= 0, got -1"},
      {"eval --run /tmp --beam 0", "ropelab: usage error: --beam: must be > 0, got 0"},
      {"eval --run /tmp --beam two", "ropelab: usage error: --beam: 'two' is not a number"},
      {"bench attention --tiles 64x0",
       "ropelab: usage error: --tiles: expected QxK with positive Q and K (e.g. 64x256), got '64x0'"},
      {"generate --run /tmp --min-new -1", "ropelab: usage error: --min-new: must be >= 0, got -1"},
  };
  for (const auto& [args, line] : flag_cases) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind(line, 0), 0u) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
  }
  EXPECT_EQ(run("--help").code, 0);
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
    const auto root = fresh_dir("run");
    const auto data = (root / "pairs.tsv").string();
    std::ofstream(data)
        << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n";
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
  {  // every averaged parameter is the mean of the three numbered checkpoints'
    const auto numbered = ropelab::RunPaths(micro_run()).numbered_checkpoints();
    ASSERT_EQ(numbered.size(), 3u);
    auto averaged = ropelab::open_run(micro_run(), micro_run() + "/checkpoint_avg3.pt", torch::kCPU);
    std::vector<ropelab::LoadedRun> inputs;
    for (const auto& path : numbered) inputs.push_back(ropelab::open_run(micro_run(), path, torch::kCPU));
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

TEST(Cli, ScorePrintsSacrebleuLinesAndRejectsBadFiles) {
  const auto ref = write_temp("ropelab_ref.txt", "The cat sat on the mat.\n");
  const auto hyp = write_temp("ropelab_hyp.txt", "The cat sat on the mat.\n");
  auto r = run("score --ref " + ref + " --hyp " + hyp);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(
      r.output.rfind("BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)", 0), 0u)
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
  // one JSON object; doubles in their shortest exact form (100.00000000000004 here)
  EXPECT_EQ(r.output.rfind("{\"bleu\":100", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\"chrf\":100"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(Cli, ScoreSelectsMetricsAndRunsPairedTests) {
  const auto ref = write_temp("ropelab_paired_ref.txt", "the cat sat on the mat\na dog barks\nit rains today\n");
  const auto base = write_temp("ropelab_paired_base.txt", "the cat sat on a mat\na dog barks\nit rained today\n");
  const auto other = write_temp("ropelab_paired_other.txt", "a cat on the mat\ndog\nrain today\n");
  auto r = run("score --ref " + ref + " --hyp " + base + " -m ter bleu");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("TER = ", 0), 0u) << r.output;  // in the order asked for
  EXPECT_NE(r.output.find("\nBLEU = "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("chrF2"), std::string::npos) << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other + " -m chrf ter --paired-bs --paired-bs-n 50");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* expected : {"chrF2 (μ ± 95% CI)", "TER (μ ± 95% CI)",
                               "Baseline: ", "(p = ", "Paired bootstrap resampling test with 50 resampling trials",
                               "nrefs:1|bs:50|seed:12345|case:lc|tok:tercom|norm:no|punct:yes|asian:no|"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other +
          " -m bleu --paired-ar --paired-ar-n 100 --json --seed 3");
  EXPECT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("test"), "paired-ar");
  EXPECT_EQ(j.at("seed"), 3);
  EXPECT_EQ(j.at("signatures").at("bleu").get<std::string>().rfind("nrefs:1|bs:1000|ar:100|seed:3|", 0), 0u);
  ASSERT_EQ(j.at("systems").size(), 2u);
  EXPECT_FALSE(j.at("systems")[0].at("bleu").contains("p_value"));
  const double p = j.at("systems")[1].at("bleu").at("p_value").get<double>();
  EXPECT_GT(p, 0.0);
  EXPECT_LE(p, 1.0);
  // bad requests: one line each, exit 1 (CLI11's own checks exit 105 or 109)
  r = run("score --ref " + ref + " --hyp " + base + " --paired-bs");
  EXPECT_EQ(r.output, "ropelab: error: --paired-bs compares systems with the first: give --hyp at least twice\n");
  EXPECT_EQ(r.code, 1);
  r = run("score --ref " + ref + " --hyp " + base + " -m meteor");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("meteor not in {bleu,chrf,chrf++,ter}"), std::string::npos) << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other + " --paired-bs --paired-ar");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
}

TEST(Cli, SigtermDuringTrainingSavesAndExitsCleanly) {
  const auto root = fresh_dir("sigterm");
  const auto data = (root / "pairs.tsv").string();
  std::ofstream(data) << "the cat\tel gato\nthe dog\tel perro\n";
  const auto run_dir = (root / "run").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  // train "forever", then SIGTERM once the first steps are logged
  const std::string script =
      cli + " train " + ROPELAB_SOURCE_DIR + "/experiments/demo_tiny.yaml --set data.train=" + data +
      " --set data.valid= --set train.steps=1000000 --set train.log_every=1 --threads 1 -o " + run_dir + " > " +
      run_dir + ".log 2>&1 & pid=$!; for i in $(seq 100); do grep -q 'step 2/' " + run_dir +
      ".log 2>/dev/null && break; sleep 0.1; done; kill -TERM $pid; wait $pid";
  const auto script_path = (root / "kill.sh").string();
  std::ofstream(script_path) << script << "\n";
  const int status = std::system(("bash " + script_path).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string text = read_text(run_dir + ".log");
  EXPECT_NE(text.find("stopping on SIGTERM after step"), std::string::npos) << text;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoint_last.pt"));
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/trained"));  // stopped, not finished
  auto r = run("translate --run " + run_dir + " --checkpoint last --input " + data);
  EXPECT_EQ(r.code, 0) << r.output;
  std::filesystem::remove_all(root);
}

// Every position encoder, and Performer attention, trains a few steps and
// decodes through the apps, in the translator and in the language model.
TEST(Cli, EveryEncoderAndAttentionTrainsAndDecodesInBothTasks) {
  const auto root = fresh_dir("kinds");
  const auto pairs = (root / "pairs.tsv").string();
  std::ofstream(pairs) << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\n";
  const auto pairs_src = (root / "sources.txt").string();
  std::ofstream(pairs_src) << "the cat\nthe dog\n";
  const auto text = (root / "text.txt").string();
  std::ofstream(text) << "the cat sat on the mat.\n\nthe dog sat on the log.\na red house.\n";
  const std::string tiny =
      " --set model.d_model=16 --set model.heads=2 --set model.d_ff=16"
      " --set model.encoder_layers=1 --set model.decoder_layers=1 --set train.steps=3"
      " --set train.valid_every=0 --threads 1";
  const std::vector<std::string> variants = {
      "model.position.type=sinusoidal", "model.position.type=learned", "model.position.type=t5_bias",
      "model.position.type=rotary", "model.position.type=rotary_nd", "model.position.type=none",
      "model.position.type=alibi", "model.position.type=kerple", "model.position.type=fire",
      // xPos is causal: the translator's encoder takes rotary
      "model.position.type=xpos --set model.encoder_position.type=rotary",
      "model.position.type=rotary --set model.position.scaling.type=yarn"
      " --set model.position.scaling.factor=2"
      " --set model.position.scaling.original_max=8",
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
    // the translator samples: one output line per input line
    r = run("translate --run " + mt + " --checkpoint last --input " + pairs_src +
            " --sample --temperature 0.8 --top-k 5 --top-p 0.9 --seed 3 2>/dev/null");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 2) << r.output;

    r = run("train " + std::string(ROPELAB_SOURCE_DIR) +
            "/experiments/demo_tiny.yaml --set task=lm"
            " --set data.format=text --set tokenizer.type=byte --set data.context=16 --set data.train=" +
            text + " --set data.valid=" + text + " --set data.test=" + text + " --set " + variant + tiny + " -o " + lm);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("1 empty lines skipped"), std::string::npos) << r.output;
    r = run("generate --run " + lm + " --checkpoint last --prompt 'the c' --max-new 5");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("the c", 0), 0u) << r.output;
    // the language model searches with beams, cached or recomputing the prefix alike
    r = run("generate --run " + lm + " --checkpoint last --prompt 'the c' --max-new 5 --beam 3");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("the c", 0), 0u) << r.output;
    EXPECT_EQ(
        run("generate --run " + lm + " --checkpoint last --prompt 'the c' --max-new 5 --beam 3 --no-cache").output,
        r.output);
    r = run("eval --run " + lm + " --checkpoint last --context 32");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("perplexity = ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("windows of 32"), std::string::npos) << r.output;
  }
  auto r = run("translate --run " + (root / "lm").string() + " --checkpoint last --input " + text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("language model"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}

namespace {

// A byte-level rotary LM of one layer trained for 5 updates on one line of text (written
// into `root`) into `lm`, with `sets` added to the command line.
Result train_tiny_rotary_lm(const std::filesystem::path& root, const std::string& lm, const std::string& sets) {
  const auto text = (root / "text.txt").string();
  std::ofstream(text) << "the cat sat on the mat. the dog sat on the log. a red house stood by the road.\n";
  return run("train " + std::string(ROPELAB_SOURCE_DIR) +
             "/experiments/demo_tiny.yaml --set task=lm --set data.format=text --set tokenizer.type=byte"
             " --set data.context=16 --set model.position.type=rotary --set model.heads=2"
             " --set model.decoder_layers=1 --set train.steps=5 --set train.valid_every=0 --threads 1" +
             sets + " --set data.train=" + text + " --set data.valid=" + text + " --set data.test=" + text + " -o " +
             lm);
}

}  // namespace

// generate writes its text as it comes: a windowed model asked for 10^11 tokens (and no end
// of text before them) has put
// out text long before it could finish, and Ctrl-C ends it with that text and its line
// end on stdout, one line on stderr and the shell's exit status 130.
TEST(Cli, GenerateStreamsAndStopsCleanlyOnCtrlC) {
  const auto root = fresh_dir("generate");
  const auto lm = (root / "lm").string();
  auto r = train_tiny_rotary_lm(root, lm, " --set model.position.type=alibi");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto out = (root / "out.txt").string(), err = (root / "err.txt").string();
  const std::string script =
      "set -m\n" + std::string(ROPELAB_BINARY_DIR) + "/ropelab generate --run " + lm +
      " --checkpoint last --prompt 'the c' --max-new 100000000000 --min-new 100000000000 --sample --seed 3"
      " --threads 1"
      " --set model.attention.window=8 --set model.attention.sinks=2 > " +
      out + " 2> " + err + " & pid=$!\nfor i in $(seq 600); do [ $(wc -c < " + out +
      ") -gt 300 ] && break; sleep 0.1; done\nkill -INT $pid; wait $pid; exit $?\n";
  const auto script_path = (root / "interrupt.sh").string();
  std::ofstream(script_path) << script;
  const int status = std::system(("bash " + script_path).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(err);
  const auto text = read_text(out);
  EXPECT_GT(text.size(), 300u);
  EXPECT_EQ(text.rfind("the c", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(read_text(err), "ropelab: generate: interrupted (Ctrl-C); the text produced so far is above\n");
  std::filesystem::remove_all(root);
}

// RoPE scaling at evaluation time, without retraining: each method changes the perplexity
// past the training context; the report records what was set; keys that would not match
// the trained parameters are refused.
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
  r = run("eval --run " + lm + " --checkpoint last --set model.d_model=8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--set model.d_model=8: a trained run takes only model.position.scaling.*"),
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

// Data-parallel training on c10d/Gloo over loopback.
namespace {

/// demo_tiny for 12 steps without dropout, data named absolutely (ctest runs in build/).
const std::string kTinyDp = std::string(ROPELAB_SOURCE_DIR) +
                            "/experiments/demo_tiny.yaml --set data.train=" + ROPELAB_SOURCE_DIR +
                            "/data/demo/pairs.tsv --set data.valid=" + ROPELAB_SOURCE_DIR +
                            "/data/demo/pairs.tsv --set model.dropout=0 --set train.adam_eps=1e-6"
                            " --set train.steps=12 --set train.valid_every=6 --threads 1";

/// Trains demo_tiny for 12 steps without dropout into RUN; `launch` prefixes the command
/// (environment variables) and `extra` is appended (--nproc 2). Adam's eps is 1e-6: with
/// 1e-9, gradients that vanish up to rounding (~1e-12) still move parameters by about lr,
/// so summation order alone would separate the runs by ~4e-4.
void train_tiny(const std::string& run_dir, const std::string& launch, const std::string& extra) {
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  const std::string command = launch + " " + cli + " train " + kTinyDp + " -o " + run_dir + " " + extra;
  auto r = run_shell(command);
  ASSERT_EQ(r.code, 0) << command << "\n" << r.output;
}

double max_parameter_difference(const std::string& a, const std::string& b) {
  auto one = ropelab::open_run(a, "last", torch::kCPU), two = ropelab::open_run(b, "last", torch::kCPU);
  auto p = one.model->module().parameters(), q = two.model->module().parameters();
  EXPECT_EQ(p.size(), q.size());
  double worst = 0;
  for (size_t i = 0; i < p.size(); ++i) worst = std::max(worst, (p[i] - q[i]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST(Cli, TwoWorkersTrainLikeOneProcessOnTheCombinedBatches) {
  if (!ROPELAB_WITH_GLOO) GTEST_SKIP() << "built without Gloo (ROPELAB_WITH_GLOO=OFF)";
  const auto root = fresh_dir("dp");
  const auto single = (root / "single").string(), nproc = (root / "nproc").string(),
             torchrun = (root / "torchrun").string();
  train_tiny(single, "", "");
  train_tiny(nproc, "", "--nproc 2");
  // torchrun-style: the launcher's job done by hand, two processes with the variables set
  const std::string env = "MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000)) WORLD_SIZE=2";
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  const std::string both = "(" + env + " RANK=1 " + cli + " train " + kTinyDp + " -o " + torchrun + " > " + torchrun +
                           ".rank1.log 2>&1 &); " + env + " RANK=0";
  train_tiny(torchrun, both, "");
  for (const auto& dir : {nproc, torchrun}) {
    SCOPED_TRACE(dir);
    EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint_last.pt"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.jsonl"));
    EXPECT_LT(max_parameter_difference(single, dir), 1e-5);
  }
  // the group resumes from rank 0's checkpoint
  auto resumed = run("train --resume --set train.steps=14 --nproc 2 -o " + nproc);
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resume: " + nproc + "/checkpoint_last.pt at step 12"), std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("done: step 14"), std::string::npos) << resumed.output;
  // the check has teeth: a run on half the data ends elsewhere
  train_tiny((root / "other").string(), "", "--set train.max_tokens=200");
  EXPECT_GT(max_parameter_difference(single, (root / "other").string()), 1e-3);
  std::filesystem::remove_all(root);
}

TEST(Cli, TwoGpusTrainLikeOneGpuOnTheCombinedBatches) {
  if (!ROPELAB_WITH_NCCL || torch::cuda::device_count() < 2)
    GTEST_SKIP() << "needs two CUDA devices and a LibTorch with NCCL";
  const auto root = fresh_dir("dp_cuda");
  const auto single = (root / "single").string(), nccl = (root / "nccl").string();
  train_tiny(single, "", "--device cuda");
  train_tiny(nccl, "", "--device cuda --nproc 2");
  EXPECT_LT(max_parameter_difference(single, nccl), 1e-4);
  // the check has teeth: a run on half the data ends elsewhere
  train_tiny((root / "other").string(), "", "--device cuda --set train.max_tokens=200");
  EXPECT_GT(max_parameter_difference(single, (root / "other").string()), 1e-3);
  std::filesystem::remove_all(root);
}

TEST(Cli, KillingOneWorkerStopsTheOtherWithAnErrorWithinTheTimeout) {
  if (!ROPELAB_WITH_GLOO) GTEST_SKIP() << "built without Gloo (ROPELAB_WITH_GLOO=OFF)";
  const auto root = fresh_dir("dpkill");
  const auto run_dir = (root / "run").string(), log = (root / "log").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  // train "forever"; once steps are logged, SIGKILL worker rank 1 and time the launcher's exit
  const std::string script =
      cli + " train " + ROPELAB_SOURCE_DIR + "/experiments/demo_tiny.yaml --set data.train=" + ROPELAB_SOURCE_DIR +
      "/data/demo/pairs.tsv --set data.valid= --set train.steps=1000000" +
      " --set train.log_every=1 --set train.valid_every=0 --set train.dist_timeout=20 --nproc 2 -o " + run_dir + " > " +
      log +
      " 2>&1 & launcher=$!\n"
      "for i in $(seq 300); do grep -q 'step 3/' " +
      log +
      " 2>/dev/null && break; sleep 0.1; done\n"
      "victim=$(sed -n 's/^launched 2 workers (MASTER_PORT [0-9]*): [0-9]* \\([0-9]*\\)$/\\1/p' " +
      log +
      ")\n"
      "kill -KILL $victim; start=$(date +%s); wait $launcher; code=$?; end=$(date +%s)\n"
      "echo \"exit $code after $((end - start)) s\" >> " +
      log + "\n";
  std::ofstream(root / "kill.sh") << script;
  std::system(("bash " + (root / "kill.sh").string()).c_str());
  const std::string text = read_text(log);
  EXPECT_NE(text.find("step 3/"), std::string::npos) << text;  // training ran before the kill
  EXPECT_NE(text.find("ropelab[rank 0]: error:"), std::string::npos) << text;
  EXPECT_NE(text.find("a worker exited with status"), std::string::npos) << text;
  const auto at = text.find("exit ");
  ASSERT_NE(at, std::string::npos) << text;
  int code = -1, seconds = -1;
  std::sscanf(text.c_str() + at, "exit %d after %d s", &code, &seconds);
  EXPECT_NE(code, 0) << text;
  EXPECT_LE(seconds, 25) << text;  // train.dist_timeout=20, plus exit
  std::filesystem::remove_all(root);
}

// ablate runs grid x seeds, writes results, skips finished runs, rejects bad files.
TEST(Cli, AblateRunsTheGridWritesResultsAndSkipsFinishedRuns) {
  const auto root = fresh_dir("ablate");
  const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  const auto exp = (root / "exp.yaml").string();
  std::ofstream(exp) << "base: " << demo << "\nset: [data.train=" << pairs << ", data.valid=" << pairs
                     << ", data.test=" << pairs
                     << ", train.steps=4, train.valid_every=2, model.d_model=16, model.heads=2, model.d_ff=16,"
                        " model.encoder_layers=1, model.decoder_layers=1]\n"
                        "grid:\n  model.position.type: [sinusoidal, rotary]\nseeds: [1, 2]\n";
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --jobs 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 variants x 2 seeds = 4 runs"), std::string::npos) << r.output;
  const std::string table = read_text(out + "/results.md");
  EXPECT_NE(table.find("| model.position.type=sinusoidal | 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("±", table.find("|---")), std::string::npos) << table;  // two seeds: mean ± sd
  EXPECT_NE(table.find("| model.position.type=rotary | 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("test_bleu"), std::string::npos) << table;
  EXPECT_TRUE(std::filesystem::exists(out + "/valid_curves.svg"));
  std::ifstream csv(out + "/results.csv");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 5);  // header + 4 runs
  // paired bootstrap tests of rotary against sinusoidal: per seed and pooled, for BLEU, chrF and TER
  EXPECT_NE(table.find("## Paired tests against model.position.type=sinusoidal"), std::string::npos) << table;
  EXPECT_NE(table.find("| variant | column | seed 1 | seed 2 | pooled |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_bleu |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_chrf |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_ter |"), std::string::npos) << table;
  EXPECT_NE(table.find(" (p = ", table.find("## Paired")), std::string::npos) << table;
  std::ifstream significance(out + "/significance.csv");
  std::vector<std::string> tests;
  for (std::string line; std::getline(significance, line);) tests.push_back(line);
  ASSERT_EQ(tests.size(), 10u);  // header + 3 columns (BLEU, chrF, TER) x (2 seeds + pooled)
  EXPECT_EQ(tests[0], "variant,baseline_variant,column,seed,baseline,score,p_value,note");
  EXPECT_EQ(tests[3].rfind("\"model.position.type=rotary\",\"model.position.type=sinusoidal\",test_bleu,pooled,", 0),
            0u)
      << tests[3];
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("4 finished already, 0 to run"), std::string::npos) << r.output;
  // a report without a column this version reads (here TER) is evaluated again, without training
  const auto run_dir = out + "/runs/model.position.type=rotary.seed2";
  auto report = nlohmann::json::parse(read_text(run_dir + "/eval.test.json"));
  report.erase("ter");
  std::ofstream(run_dir + "/eval.test.json") << report.dump() << "\n";
  const auto trained = std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("3 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(nlohmann::json::parse(read_text(run_dir + "/eval.test.json")).contains("ter"));
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  r = run("eval --run " + run_dir + " --stride 4");  // a language-model protocol on a translator
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, "ropelab: error: --context, --stride and --per-position measure language models; " + run_dir +
                          " is a translator\n");

  // experiment files that stop before any run, exit 2, with one line naming the file and key
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"grid:\n  model.position.type: [sinusoidal, rotray]\n", "variant model.position.type=rotray"},
      {"eval_strides: [4]\n", "eval_strides applies to language models (task lm)"},
      {"eval_strides: [0]\n", "eval_strides: 0 must be positive"},
      {"eval_scaling: [yarm]\n", "eval_scaling: yarm is not a RoPE scaling (linear, ntk, dynamic_ntk, yarn)"},
      {"eval_context: [128]\n",
       "unknown key eval_context (expected base, set, grid, seeds, eval_contexts, eval_strides, eval_scaling, "
       "eval_tokens, passkey, finetune)"},
      {"grid:\n  model.position.type: [sinusoidal, rotary]\nfinetune:\n  from: model.position.type=rotary\n  steps: "
       "3\n",
       "finetune: unknown key steps (expected from, set, grid)"},
      {"eval_tokens: 4096\n", "eval_tokens applies to language models (task lm)"},
      {"eval_tokens: [1, 2]\n", "eval_tokens must be one number"},
      {"eval_tokens: 0\n", "eval_tokens: 0 must be positive"},
      {"passkey:\n  lengths: [120]\n", "passkey applies to language models (task lm)"},
      {"passkey:\n  lengths: [50]\n", "passkey.lengths: 50 is below the "},
      {"passkey:\n  lengths: [120]\n  depths: [0, 1.5]\n", "passkey.depths: 1.5 is not between 0 and 1"},
      {"passkey:\n  lengths: [120]\n  documents: [2, 3]\n", "passkey.documents must be one number"},
      {"passkey:\n  depths: [0]\n", "passkey.lengths (the prompts' characters) is required"},
      {"passkey:\n  lengths: [120]\n  size: 3\n", "passkey: unknown key size (expected lengths, depths, documents)"},
      {"grid:\n  model.position.type: [sinusoidal, rotary]\nfinetune:\n  from: rotray\n",
       "finetune.from: rotray is not a variant of the grid (model.position.type=sinusoidal, "
       "model.position.type=rotary)"}};
  for (const auto& [tail, message] : bad) {
    std::ofstream(exp) << "base: " << demo << "\nset: [data.test=" << pairs << "]\n" << tail;
    r = run("ablate " + exp + " -o " + out);
    EXPECT_EQ(r.code, 2) << tail;
    EXPECT_NE(r.output.find(exp + ": " + message), std::string::npos) << r.output;
  }
  std::filesystem::remove_all(root);
}

// Fine-tuning at a longer context starts a new run from another run's parameters and
// tokenizer, with the other run's config as the base; the optimizer starts afresh.
TEST(Cli, InitFromStartsANewRunFromAnotherRunsParameters) {
  const auto root = fresh_dir("init_from");
  const auto text = write_temp((root / "text.txt").string(), "the cat sat on the mat\nthe dog sat on the log\n");
  const auto first = (root / "first").string(), second = (root / "second").string();
  auto r = run("train " + std::string(ROPELAB_SOURCE_DIR) +
               "/experiments/demo_tiny.yaml --set task=lm --set data.format=text --set tokenizer.type=byte"
               " --set data.context=8 --set data.train=" +
               text + " --set data.valid=" + text + " --set data.test=" + text +
               " --set train.steps=3 --set train.valid_every=3 --set model.d_model=16 --set model.heads=2"
               " --set model.d_ff=16 --set model.decoder_layers=1 --set model.position.type=rotary --threads 1 -o " +
               first);
  ASSERT_EQ(r.code, 0) << r.output;
  // an update too small to change a float parameter: the new run holds the first run's parameters
  r = run("train --init-from " + first +
          " --set data.context=16 --set train.steps=1 --set train.lr=1e-30 --set train.lr_schedule=constant"
          " --threads 1 -o " +
          second);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("init: parameters from " + first + "/checkpoint_best.pt"), std::string::npos) << r.output;
  const auto config = read_text(second + "/config.yaml");
  EXPECT_NE(config.find("init_from: " + first), std::string::npos) << config;
  EXPECT_NE(config.find("context: 16"), std::string::npos) << config;
  const auto a = run("eval --run " + first + " --context 16 --threads 1");
  const auto b = run("eval --run " + second + " --threads 1");
  ASSERT_EQ(a.code, 0) << a.output;
  ASSERT_EQ(b.code, 0) << b.output;
  const auto ppl = [](const std::string& run_dir) {
    return nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.json")).at("perplexity").get<double>();
  };
  EXPECT_NEAR(ppl(second), ppl(first), 1e-9 * ppl(first));
  // refused: a missing source, and --resume with it
  r = run("train " + first + "/config.yaml --set train.init_from=" + (root / "nothing").string() + " -o " +
          (root / "third").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("train.init_from: " + (root / "nothing").string() + " not found"), std::string::npos)
      << r.output;
  r = run("train --resume --init-from " + first + " -o " + second);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("--resume continues a run; --init-from starts a new one from another"), std::string::npos)
      << r.output;
  std::filesystem::remove_all(root);
}

// passkey make writes the same documents for the same seed; passkey eval scores a language
// model at each (length, depth) into a table and a heat map.
TEST(Cli, PasskeyDocumentsAndEvaluation) {
  const auto root = fresh_dir("passkey");
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

  const auto train = write_temp((root / "train.txt").string(), a.output);
  const auto lm = (root / "lm").string();
  r = run("train " + std::string(ROPELAB_SOURCE_DIR) +
          "/experiments/demo_tiny.yaml --set task=lm --set data.format=text --set tokenizer.type=byte"
          " --set data.context=32 --set data.train=" +
          train + " --set data.valid= --set data.test=" + train +
          " --set train.steps=2 --set model.d_model=16 --set model.heads=2 --set model.d_ff=16"
          " --set model.decoder_layers=1 --set model.position.type=rotary --threads 1 -o " +
          lm);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("passkey eval --run " + lm + " --checkpoint last --lengths 100,140 --depths 0,1 --documents 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("   140   1.00  "), std::string::npos) << r.output;
  const auto table = read_text(lm + "/passkey.csv");
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5) << table;  // header + 2 lengths x 2 depths
  EXPECT_EQ(table.rfind("length,depth,documents,correct,accuracy,error\n100,0,2,", 0), 0u) << table;
  EXPECT_TRUE(std::filesystem::exists(lm + "/passkey.svg"));
  r = run("passkey eval --run " + lm + " --checkpoint last --lengths 60 --threads 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--lengths: 60 is below the"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}

TEST(Cli, AblateAddsMissingEvaluationsAndRerunsChangedConfigs) {
  const auto root = fresh_dir("ablate_lm");
  const auto text = write_temp((root / "text.txt").string(), "the cat sat on the mat\nthe dog sat on the log\n");
  const auto exp = (root / "exp.yaml").string();
  auto write_experiment = [&](const std::string& steps, const std::string& contexts,
                              const std::string& grid = "  model.position.type: [rotary]\n",
                              const std::string& strides = "", const std::string& scaling = "") {
    std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                       << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=8, data.train=" << text
                       << ", data.valid=" << text << ", data.test=" << text << ", train.steps=" << steps
                       << ", train.valid_every=2, model.d_model=16, model.heads=2, model.d_ff=16,"
                          " model.encoder_layers=1, model.decoder_layers=1]\n"
                          "grid:\n"
                       << grid << "eval_contexts: [" << contexts << "]\n"
                       << (strides.empty() ? "" : "eval_strides: [" + strides + "]\n")
                       << (scaling.empty() ? "" : "eval_scaling: [" + scaling + "]\n");
  };
  const auto out = (root / "out").string(), run_dir = out + "/runs/model.position.type=rotary.seed1";
  write_experiment("3", "8");
  auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx8.json"));
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx8.positions.csv"));
  EXPECT_NE(read_text(out + "/positions.svg").find("test loss by position in windows of 8"), std::string::npos);
  {  // each window's NLL and tokens, for paired tests between runs: together, the reported perplexity
    std::ifstream items(run_dir + "/eval.test.ctx8.items.tsv");
    std::string line;
    std::getline(items, line);
    EXPECT_EQ(line, "nll\ttokens");
    double nll = 0, tokens = 0;
    int windows = 0;
    for (double n, t; items >> n >> t; ++windows) nll += n, tokens += t;
    const auto report = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx8.json"));
    EXPECT_EQ(windows, report.at("chunks").get<int>());
    EXPECT_EQ(tokens, report.at("tokens").get<double>());
    EXPECT_NEAR(std::exp(nll / tokens), report.at("perplexity").get<double>(),
                1e-5 * report.at("perplexity").get<double>());
  }
  {  // an unreadable items file: the run's paired tests are named as missing, not dropped silently
    const auto items_path = run_dir + "/eval.test.ctx8.items.tsv";
    const auto kept = read_text(items_path);
    std::ofstream(items_path) << "nll\ttokens\n1.5\tx\n";
    r = run("ablate " + exp + " -o " + out + " --threads 1");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("ablate: warning: no paired test uses model.position.type=rotary seed 1: " + items_path +
                            ":2: 'x' is not a finite number"),
              std::string::npos)
        << r.output;
    EXPECT_NE(read_text(out + "/results.md").find("No paired test uses model.position.type=rotary seed 1: "),
              std::string::npos);
    std::ofstream(items_path) << kept;
  }
  const auto trained = std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt");

  write_experiment("3", "8, 16");  // the same runs, one more evaluation: no training
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("0 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx16.json"));
  EXPECT_NE(read_text(out + "/results.md").find("test_ppl@8 | test_ppl@16 |"), std::string::npos)
      << read_text(out + "/results.md");  // contexts in numeric order
  const auto one_seed = read_text(out + "/results.md");
  EXPECT_EQ(one_seed.find("±", one_seed.find("|---")), std::string::npos) << one_seed;  // one seed: no spread shown
  EXPECT_TRUE(std::filesystem::exists(out + "/extrapolation.svg"));  // two contexts: perplexity against length

  // sliding windows at both contexts: evaluations only, a column per (context, stride)
  write_experiment("3", "8, 16", "  model.position.type: [rotary]\n", "4, 16");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("0 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  EXPECT_NE(read_text(out + "/results.md").find("| test_ppl@8 | test_ppl@8/4 | test_ppl@16 | test_ppl@16/4 |"),
            std::string::npos)
      << read_text(out + "/results.md");  // stride 16 is no sliding window at 8 or 16
  const auto sliding = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.stride4.json"));
  EXPECT_EQ(sliding.at("stride").get<int>(), 4);
  EXPECT_EQ(sliding.at("tokens"), nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.json")).at("tokens"));
  EXPECT_NE(read_text(out + "/extrapolation.stride4.svg").find("windows sliding by 4"), std::string::npos);
  EXPECT_EQ(read_text(out + "/extrapolation.svg").find("sliding"), std::string::npos);

  // RoPE scaling at evaluation: the rotary run evaluated again (not retrained) past its
  // training context, at factor 16 / 8 = 2; an ALiBi variant has no such columns
  write_experiment("3", "8, 16", "  model.position.type: [rotary, alibi]\n", "", "yarn, linear");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx16.set_yarn_2.json"));
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/eval.test.ctx8.set_yarn_1.json"));  // no scaling at 8 itself
  const auto scaled = read_text(out + "/results.md");
  EXPECT_NE(scaled.find("| test_ppl@16 | test_ppl@16+linear | test_ppl@16+yarn |"), std::string::npos) << scaled;
  EXPECT_NE(scaled.find("| model.position.type=alibi | 1 |"), std::string::npos) << scaled;
  EXPECT_NE(scaled.find(" - | - |"), std::string::npos) << scaled;  // alibi: no scaled columns
  EXPECT_EQ(scaled.find("n/a"), std::string::npos) << scaled;       // and no paired test that cannot apply
  const auto extrapolation = read_text(out + "/extrapolation.svg");
  EXPECT_NE(extrapolation.find(">rotary, yarn<"), std::string::npos) << extrapolation;  // a line per scaling
  EXPECT_EQ(extrapolation.find(">alibi, yarn<"), std::string::npos) << extrapolation;   // only where it applies
  EXPECT_NE(extrapolation.find("<circle"), std::string::npos);                          // its points marked

  // fine-tunes of the rotary run at a longer context, with and without YaRN, from its best checkpoint
  std::ofstream(exp, std::ios::app) << "finetune:\n  from: model.position.type=rotary\n"
                                       "  set: [data.context=16, train.steps=2, model.position.scaling.factor=2]\n"
                                       "  grid:\n    model.position.scaling.type: [none, yarn]\n";
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 fine-tunes of model.position.type=rotary x 1 seeds = 2 runs; 0 finished already"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);  // the source untouched
  const auto yarn_dir = out + "/runs/finetune_model.position.scaling.type=yarn.seed1";
  EXPECT_NE(read_text(yarn_dir + "/config.yaml").find("init_from: " + run_dir), std::string::npos);
  EXPECT_NE(read_text(yarn_dir + ".log").find("init: parameters from " + run_dir + "/checkpoint_best.pt"),
            std::string::npos);
  const auto tuned = read_text(out + "/results.md");
  EXPECT_NE(tuned.find("| finetune:model.position.scaling.type=yarn | 1 |"), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("| finetune:model.position.scaling.type=none | 1 |"), std::string::npos) << tuned;
  r = run("ablate " + exp + " -o " + out + " --threads 1");  // all done: nothing runs again
  EXPECT_NE(r.output.find("= 2 runs; 2 finished already, 0 to run"), std::string::npos) << r.output;

  // another experiment in the same directory: its variant with this config reuses the run
  write_experiment("3", "8", "  model.attention.type: [softmax]\n  model.position.type: [rotary]\n");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 finished already, 0 to run"), std::string::npos) << r.output;
  EXPECT_NE(read_text(out + "/results.md").find("| model.attention.type=softmax,model.position.type=rotary | 1 |"),
            std::string::npos)
      << read_text(out + "/results.md");

  write_experiment("4", "8");  // another config in the same directory: trained again
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(read_text(run_dir + "/metrics.jsonl").find("\"step\":4"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/eval.test.ctx16.json"));
  int kept = 0;  // the run of the old config was moved aside, not deleted
  for (const auto& entry : std::filesystem::directory_iterator(out + "/runs"))
    if (entry.path().filename().string().rfind("model.position.type=rotary.seed1.old-", 0) == 0)
      kept += std::filesystem::exists(entry.path() / "eval.test.ctx16.json");
  EXPECT_EQ(kept, 1);
  std::filesystem::remove_all(root);
}

// An experiment's evaluations on fewer test tokens (eval_tokens) and its passkey retrieval:
// a column per length, a plot, and no context beyond a learned table asked for.
TEST(Cli, AblateEvaluatesPasskeyRetrievalAndLimitsTestTokens) {
  const auto root = fresh_dir("ablate_passkey");
  const auto documents = run("passkey make --count 8 --length 100 --seed 5");
  ASSERT_EQ(documents.code, 0) << documents.output;
  const auto text = write_temp((root / "passkey.txt").string(), documents.output);
  const auto exp = (root / "exp.yaml").string();
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                     << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=32, data.train=" << text
                     << ", data.valid=" << text << ", data.test=" << text
                     << ", train.steps=2, model.d_model=16, model.heads=2, model.d_ff=16, model.encoder_layers=1,"
                        " model.decoder_layers=1, model.position.max_len=112]\n"
                        "grid:\n  model.position.type: [rotary, learned]\n"
                        "eval_contexts: [32, 128]\neval_strides: [16]\neval_tokens: 256\n"
                        "passkey:\n  lengths: [100, 140]\n  depths: [0, 1]\n  documents: 2\n";
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rotary = out + "/runs/model.position.type=rotary.seed1",
             learned = out + "/runs/model.position.type=learned.seed1";
  for (const auto* file : {"eval.test.ctx32.set_256.json", "eval.test.ctx32.set_256.positions.csv",
                           "eval.test.ctx128.set_256.json", "eval.test.ctx128.stride16.set_256.json", "passkey.json"})
    EXPECT_TRUE(std::filesystem::exists(rotary + "/" + file)) << file;
  // 256 of the 864 test tokens scored: the first window's 32, then 16 at a time
  const auto sliding = nlohmann::json::parse(read_text(rotary + "/eval.test.ctx32.stride16.set_256.json"));
  EXPECT_EQ(sliding.at("tokens").get<int>(), 256) << sliding;
  EXPECT_EQ(sliding.at("set"), nlohmann::json::array({"data.eval_tokens=256"}));
  const auto passkey = nlohmann::json::parse(read_text(rotary + "/passkey.json"));
  EXPECT_TRUE(passkey.at("accuracy@100").is_number()) << passkey;
  EXPECT_TRUE(passkey.at("accuracy@140").is_number()) << passkey;
  // the learned table (112 positions): no window of 128, no passkey prompt of 140 asked for
  EXPECT_FALSE(std::filesystem::exists(learned + "/eval.test.ctx128.set_256.json"));
  EXPECT_TRUE(nlohmann::json::parse(read_text(learned + "/passkey.json")).at("accuracy@140").is_null());
  {  // a cell that cannot run names why in one line, without LibTorch's backtrace
    const auto cells = read_text(learned + "/passkey.csv");
    EXPECT_NE(cells.find("\n140,0,0,0,0.0000,\"LearnedEncoder: position 140 is beyond the learned table of 112 "
                         "positions (raise position.max_len)\"\n"),
              std::string::npos)
        << cells;
  }
  const auto table = read_text(out + "/results.md");
  EXPECT_NE(table.find("| passkey@100 | passkey@140 | test_ppl@32 | test_ppl@32/16 | test_ppl@128 | test_ppl@128/16 |"),
            std::string::npos)
      << table;
  std::vector<std::string> learned_cells;  // "", variant, n, then the columns above
  {
    std::istringstream row(table.substr(table.find("| model.position.type=learned | 1 |")));
    std::string line;
    std::getline(row, line);
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '|');) learned_cells.push_back(cell);
  }
  ASSERT_GE(learned_cells.size(), 9u) << table;
  EXPECT_NE(learned_cells[3], " - ") << table;  // passkey@100
  EXPECT_EQ(learned_cells[4], " - ") << table;  // passkey@140
  EXPECT_NE(learned_cells[5], " - ") << table;  // test_ppl@32
  EXPECT_EQ(learned_cells[7], " - ") << table;  // test_ppl@128
  EXPECT_EQ(learned_cells[8], " - ") << table;  // test_ppl@128/16
  EXPECT_NE(read_text(out + "/passkey.svg").find("passkey retrieval by document length"), std::string::npos);
  {  // the loss by position in windows of 128 (rotary's only): 128 positions in 24 quarter-octave bins
    const auto svg = read_text(out + "/positions.svg");
    const auto line = svg.find("<polyline");
    ASSERT_NE(line, std::string::npos) << svg;
    EXPECT_EQ(svg.find("<polyline", line + 1), std::string::npos) << svg;
    const auto begin = svg.find("points=\"", line) + 8;
    const auto points = svg.substr(begin, svg.find('"', begin) - begin);
    EXPECT_EQ(std::count(points.begin(), points.end(), ','), 24) << points;
  }
  r = run("ablate " + exp + " -o " + out + " --threads 1");  // nothing missing: nothing runs again
  EXPECT_NE(r.output.find("2 finished already, 0 to run"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}

// --- run directories: a trained model is never overwritten ----------------------------------

namespace {

/// demo_tiny on the demo pairs, one thread: `train_args` are appended to `train CONFIG`.
std::string demo_train(const std::string& train_args) {
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  return std::string(ROPELAB_BINARY_DIR) + "/ropelab train " + ROPELAB_SOURCE_DIR +
         "/experiments/demo_tiny.yaml --set data.train=" + pairs + " --set data.valid=" + pairs + " --threads 1 " +
         train_args;
}

/// Runs a bash script (placeholders already filled) from DIR/NAME.sh, capturing its output.
Result run_script(const std::filesystem::path& dir, const std::string& name, const std::string& script) {
  const auto path = (dir / (name + ".sh")).string();
  std::ofstream(path) << "set -u\n" << script;
  return run_shell("timeout 300 bash " + path);
}

/// `text` with every "{KEY}" replaced by its value.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values)
    for (size_t at; (at = text.find("{" + key + "}")) != std::string::npos;) text.replace(at, key.size() + 2, value);
  return text;
}

/// The "loss" of every train event in RUN/metrics.jsonl, in order, as written.
std::vector<std::string> train_losses(const std::string& run_dir) {
  std::vector<std::string> losses;
  std::istringstream lines(read_text(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"event\":\"train\"") == std::string::npos) continue;
    const auto at = line.find("\"loss\":");
    if (at != std::string::npos) losses.push_back(line.substr(at + 7, line.find(',', at) - at - 7));
  }
  return losses;
}

}  // namespace

// A slip (the same -o, another config, no --resume) is refused and changes nothing; the same
// config continues the run; --overwrite moves the old run aside, byte for byte.
TEST(Cli, ATrainedRunIsNeverOverwritten) {
  const auto root = fresh_dir("overwrite");
  const auto run_dir = (root / "run").string();
  auto r = run_shell(demo_train("--set train.steps=30 --set train.valid_every=10 -o " + run_dir));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto trained = read_text(run_dir + "/checkpoint_last.pt"), best = read_text(run_dir + "/checkpoint_best.pt");
  const auto config = read_text(run_dir + "/config.yaml"), metrics = read_text(run_dir + "/metrics.jsonl");

  r = run_shell(demo_train("--set train.steps=10 -o " + run_dir));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("usage error: " + run_dir +
                          " holds a trained run of another config: continue it with --resume, start again with "
                          "--overwrite"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(read_text(run_dir + "/checkpoint_last.pt"), trained);
  EXPECT_EQ(read_text(run_dir + "/checkpoint_best.pt"), best);
  EXPECT_EQ(read_text(run_dir + "/config.yaml"), config);
  EXPECT_EQ(read_text(run_dir + "/metrics.jsonl"), metrics);

  // the same config again: the finished run is continued, not restarted
  r = run_shell(demo_train("--set train.steps=30 --set train.valid_every=10 -o " + run_dir));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(run_dir + " holds a run of this same config: continuing it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resume: " + run_dir + "/checkpoint_last.pt at step 30"), std::string::npos) << r.output;

  r = run_shell(demo_train("--set train.steps=10 --overwrite -o " + run_dir));
  EXPECT_EQ(r.code, 0) << r.output;
  std::string old;
  for (const auto& entry : std::filesystem::directory_iterator(root))
    if (entry.path().filename().string().rfind("run.old-", 0) == 0) old = entry.path().string();
  ASSERT_FALSE(old.empty()) << r.output;
  EXPECT_NE(r.output.find(run_dir + ": the previous run was moved to " + old), std::string::npos) << r.output;
  EXPECT_EQ(read_text(old + "/checkpoint_best.pt"), best);
  EXPECT_EQ(read_text(old + "/config.yaml"), config);
  EXPECT_NE(read_text(run_dir + "/metrics.jsonl").find("\"step\":10"), std::string::npos);
  EXPECT_EQ(read_text(run_dir + "/metrics.jsonl").find("\"step\":30"), std::string::npos);

  r = run_shell(demo_train("--resume --overwrite -o " + run_dir));
  EXPECT_EQ(r.code, 2) << r.output;
  r = run("train --resume -o " + (root / "nothing").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing: no run to resume (no config.yaml); start one with: ropelab train CONFIG -o"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(root / "nothing"));
  std::filesystem::remove_all(root);
}

// While a run trains, a second writer is refused at once, naming the holder; readers evaluate
// its checkpoints as they are replaced; the first run finishes with a loadable checkpoint.
TEST(Cli, ASecondWriterIsRefusedWhileReadersEvaluate) {
  const auto root = fresh_dir("writers");
  const auto run_dir = (root / "run").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  const auto r =
      run_script(root, "writers",
                 fill(R"sh(
{FIRST} > {RUN}.first.log 2>&1 & first=$!
for i in $(seq 600); do [ -e {RUN}/checkpoint_last.pt ] && break; sleep 0.05; done
{SECOND} > {RUN}.second.log 2>&1; echo "second exit $?"
echo "holder $first"
for i in 1 2 3; do
  kill -0 $first 2>/dev/null && during=training || during=finished
  {CLI} eval --run {RUN} --checkpoint last --split valid --threads 1 > {RUN}.eval$i.log 2>&1
  echo "eval exit $? while $during"
done
wait $first; echo "first exit $?"
cat {RUN}.second.log
)sh",
                      {{"FIRST", demo_train("--set train.steps=2500 --set train.valid_every=25 -o " + run_dir)},
                       {"SECOND", demo_train("--set model.d_model=32 -o " + run_dir)},
                       {"RUN", run_dir},
                       {"CLI", cli}}));
  const auto& out = r.output;
  EXPECT_NE(out.find("second exit 1"), std::string::npos) << out;
  const auto holder =
      out.substr(out.find("holder ") + 7, out.find('\n', out.find("holder ")) - out.find("holder ") - 7);
  EXPECT_NE(out.find("ropelab: error: " + run_dir + ": in use by another training process (PID " + holder + ": " + cli +
                     " train "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("eval exit 0 while training\neval exit 0 while "), std::string::npos) << out;
  EXPECT_NE(out.find("eval exit 0 while training\neval exit 0 while training\neval exit 0 while "), std::string::npos)
      << out;
  EXPECT_NE(out.find("first exit 0"), std::string::npos) << out;
  EXPECT_NE(read_text(run_dir + ".first.log").find("done: step 2500"), std::string::npos);
  EXPECT_NE(read_text(run_dir + "/config.yaml").find("d_model: 64"), std::string::npos);
  const auto eval = run("eval --run " + run_dir + " --checkpoint last --split valid --threads 1");
  EXPECT_EQ(eval.code, 0) << eval.output;
  std::filesystem::remove_all(root);
}

// Every worker of a data-parallel run holds the launcher's lock (one open file description);
// each run of `ablate --jobs 2` holds its own.
TEST(Cli, DataParallelWorkersAndAblateRunsHoldTheirLocks) {
  if (!ROPELAB_WITH_GLOO) GTEST_SKIP() << "built without Gloo (ROPELAB_WITH_GLOO=OFF)";
  const auto root = fresh_dir("locks");
  const auto run_dir = (root / "dp").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  auto r = run_script(root, "dp",
                      fill(R"sh(
{TRAIN} > {RUN}.log 2>&1 & launcher=$!
for i in $(seq 600); do grep -q 'step 3/' {RUN}.log 2>/dev/null && break; sleep 0.05; done
flock -n {RUN}/.lock true; echo "free to others: $?"
for w in $(sed -n 's/^launched 2 workers (MASTER_PORT [0-9]*): //p' {RUN}.log); do
  for fd in /proc/$w/fd/*; do [ "$(readlink $fd)" = "{RUN}/.lock" ] && echo "worker holds the lock"; done
done
{CLI} train --resume -o {RUN} 2>&1 | sed 's/^/second: /'
kill -TERM $launcher; wait $launcher; echo "launcher exit $?"
)sh",
                           {{"TRAIN", demo_train("--set train.steps=1000000 --set train.valid_every=0 "
                                                 "--set train.log_every=1 --nproc 2 -o " +
                                                 run_dir)},
                            {"RUN", run_dir},
                            {"CLI", cli}}));
  EXPECT_NE(r.output.find("free to others: 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker holds the lock\nworker holds the lock\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("second: ropelab: error: " + run_dir + ": in use by another training process"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("launcher exit 0"), std::string::npos) << r.output;

  // ablate --jobs 2: both runs are seen locked at one moment
  const auto exp = (root / "exp.yaml").string(), out = (root / "out").string();
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\nset: [data.train=" << pairs
                     << ", data.valid=" << pairs << ", data.test=" << pairs
                     << ", train.steps=1500, train.valid_every=500]\ngrid:\n  model.position.type: [sinusoidal]\n"
                        "seeds: [1, 2]\n";
  r = run_script(root, "ablate",
                 fill(R"sh(
{CLI} ablate {EXP} -o {OUT} --jobs 2 --threads 1 > {OUT}.log 2>&1 & ablate=$!
a={OUT}/runs/model.position.type=sinusoidal.seed1 b={OUT}/runs/model.position.type=sinusoidal.seed2
for i in $(seq 600); do
  if [ -e $a/.lock ] && [ -e $b/.lock ] && ! flock -n $a/.lock true && ! flock -n $b/.lock true; then
    echo "both runs locked"; break
  fi
  sleep 0.05
done
wait $ablate; echo "ablate exit $?"
)sh",
                      {{"CLI", cli}, {"EXP", exp}, {"OUT", out}}));
  EXPECT_NE(r.output.find("both runs locked\nablate exit 0"), std::string::npos) << r.output << read_text(out + ".log");

  // A training stopped by SIGTERM saves and exits 0 before its end: ablate neither evaluates
  // it nor marks it done, and the next ablate resumes it to the end.
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\nset: [data.train=" << pairs
                     << ", data.valid=" << pairs << ", data.test=" << pairs
                     << ", train.steps=100000, train.log_every=1, train.valid_every=0]\n"
                        "grid:\n  model.position.type: [rotary]\n";
  const auto stopped = out + "/runs/model.position.type=rotary.seed1";
  r = run_script(root, "stopped",
                 fill(R"sh(
{CLI} ablate {EXP} -o {OUT} --threads 1 > {OUT}.stopped.log 2>&1 & ablate=$!
for i in $(seq 600); do grep -q 'step 3/' {RUN}.log 2>/dev/null && break; sleep 0.05; done
pkill -TERM -f "train .*-o {RUN}"
wait $ablate; echo "ablate exit $?"
)sh",
                      {{"CLI", cli}, {"EXP", exp}, {"OUT", out}, {"RUN", stopped}}));
  EXPECT_NE(r.output.find("ablate exit 1"), std::string::npos) << r.output << read_text(out + ".stopped.log");
  EXPECT_NE(read_text(out + ".stopped.log").find("FAILED model.position.type=rotary seed 1"), std::string::npos);
  EXPECT_NE(read_text(stopped + ".log").find("stopping on SIGTERM after step"), std::string::npos);
  EXPECT_NE(read_text(stopped + ".log").find("ablate: the training stopped before its end"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(stopped + "/ablation.done"));
  EXPECT_FALSE(std::filesystem::exists(stopped + "/trained"));
  EXPECT_FALSE(std::filesystem::exists(stopped + "/eval.test.json"));
  std::filesystem::remove_all(root);
}

// A run killed before its first checkpoint (during tokenizer training, during the token
// store's write) leaves nothing under a final name; started again (a plain train, or
// --resume) it trains to the same losses as a run never interrupted. The training text is
// a named pipe while the run is killed, so the kill lands in the stage it is meant for.
TEST(Cli, RunsKilledBeforeTheirFirstCheckpointTrainAgainToTheSameLosses) {
  const auto root = fresh_dir("killed");
  std::string text;
  for (int i = 0; i < 400; ++i)
    text += "the " + std::to_string(i * 37 % 101) + " cats sat on mat number " + std::to_string(i) + "\n";
  std::ofstream(root / "text.txt") << text;
  const std::string base =
      "--set task=lm --set data.format=text --set data.context=32 --set data.valid=" + (root / "text.txt").string() +
      " --set model.d_model=32 --set model.d_ff=64 --set model.dropout=0 --set train.steps=8"
      " --set train.log_every=1 --set train.valid_every=0";
  struct Case {
    std::string name, tokenizer, partial, again;
  };
  const std::vector<Case> cases = {
      {"tokenizer", "--set tokenizer.type=sentencepiece --set tokenizer.vocab_size=80", "spm_input.txt.tmp", ""},
      {"store", "--set tokenizer.type=byte", "data/train.tokens.tmp", "--resume"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto whole = (root / (c.name + "_whole")).string(), killed = (root / (c.name + "_killed")).string();
    const auto fifo = (root / (c.name + ".fifo")).string();
    auto r = run_shell(
        demo_train(base + " " + c.tokenizer + " --set data.train=" + (root / "text.txt").string() + " -o " + whole));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto kill =
        fill(R"sh(
mkfifo {FIFO}
{TRAIN} > {RUN}.log 2>&1 & pid=$!
exec 3> {FIFO}        # opens once the run reads the training text
head -c 2000 {TEXT} >&3
for i in $(seq 600); do [ -e {RUN}/{PARTIAL} ] && break; sleep 0.05; done
kill -KILL $pid; wait $pid; echo "killed: $?"
exec 3>&-
ls -a {RUN} {RUN}/data 2>/dev/null
rm {FIFO}; cp {TEXT} {FIFO}   # the same path, now the whole text
)sh",
             {{"FIFO", fifo},
              {"TRAIN", demo_train(base + " " + c.tokenizer + " --set data.train=" + fifo + " -o " + killed)},
              {"RUN", killed},
              {"TEXT", (root / "text.txt").string()},
              {"PARTIAL", c.partial}});
    r = run_script(root, c.name, kill);
    EXPECT_NE(r.output.find("killed: 137"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.partial.substr(c.partial.rfind('/') + 1)), std::string::npos) << r.output;
    for (const std::string final_name :
         {"spm.model", "train.tokens", "train.index", "spm_input.txt", "checkpoint_last.pt"})
      EXPECT_EQ(r.output.find("\n" + final_name + "\n"), std::string::npos) << final_name << "\n" << r.output;
    EXPECT_NE(r.output.find("\nconfig.yaml\n"), std::string::npos) << r.output;
    if (c.again == "--resume")
      r = run("train --resume --threads 1 -o " + killed);
    else
      r = run_shell(demo_train(base + " " + c.tokenizer + " --set data.train=" + fifo + " -o " + killed));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(c.again == "--resume" ? killed + ": no checkpoint yet (the run stopped before its first "
                                                             "save): starting it again from step 0"
                                                  : killed + ": reusing a run directory without checkpoints"),
              std::string::npos)
        << r.output;
    const auto expected = train_losses(whole);
    ASSERT_EQ(expected.size(), 8u);
    EXPECT_EQ(train_losses(killed), expected);
  }
  std::filesystem::remove_all(root);
}

// Training and decoding want opposite thread settings (apps/runtime_env.cpp): `bench train`
// re-executes itself with short spins, any other command (`bench gemm` here) with
// OMP_WAIT_POLICY=PASSIVE, also when started by a training process, whose own settings it
// drops; what the user set stays.
TEST(Cli, TrainingAndOtherCommandsGetTheirOwnThreadSettings) {
  const std::string clean =
      "env -u ROPELAB_NO_REEXEC -u ROPELAB_REEXECED -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT ";
  const std::string bin = std::string(ROPELAB_BINARY_DIR) + "/ropelab ";
  const std::string train = "bench train --threads 1 --steps 1 --warmup 0 --gemm-repeats 0 --json";
  const std::string gemm = "bench gemm --threads 1 --repeats 1 --json";

  auto r = run_shell(clean + bin + train);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"thread_env\":\"GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=4\""), std::string::npos)
      << r.output;

  r = run_shell(clean + bin + gemm);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"thread_env\":\"OMP_WAIT_POLICY=PASSIVE\""), std::string::npos) << r.output;

  r = run_shell(clean +
                "ROPELAB_REEXECED=train:GOMP_SPINCOUNT,OPENBLAS_THREAD_TIMEOUT GOMP_SPINCOUNT=3000 "
                "OPENBLAS_THREAD_TIMEOUT=4 " +
                bin + gemm);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"thread_env\":\"OMP_WAIT_POLICY=PASSIVE\""), std::string::npos) << r.output;

  r = run_shell(clean + "GOMP_SPINCOUNT=77 OPENBLAS_THREAD_TIMEOUT=9 " + bin + gemm);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"thread_env\":\"GOMP_SPINCOUNT=77 OPENBLAS_THREAD_TIMEOUT=9\""), std::string::npos)
      << r.output;
}
