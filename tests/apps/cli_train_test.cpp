// ropelab train: signals, every encoder and backend in both tasks, data-parallel workers, fine-tuning from another run.
#include "cli_util.h"

using namespace ropelab::cli_test;

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
  // the log names the machine its speeds were measured on (util/machine.h)
  EXPECT_NE(text.find("\nmachine: "), std::string::npos) << text;
  EXPECT_NE(text.find("; ATen kernels "), std::string::npos) << text;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoint_last.pt"));
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/trained"));   // stopped, not finished
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/loss.svg"));  // drawn once training reaches its end
  auto r = run("translate --run " + run_dir + " --checkpoint last --input " + data);
  EXPECT_EQ(r.code, 0) << r.output;
  // validating every update: the update the stop follows is validated before the stop, so
  // that the resumed run misses no validation
  const auto validated = (root / "validated").string();
  const std::string again = cli + " train " + ROPELAB_SOURCE_DIR +
                            "/experiments/demo_tiny.yaml --set data.train=" + data + " --set data.valid=" + data +
                            " --set train.steps=1000000 --set train.log_every=1 --set train.valid_every=1 --threads 1 "
                            "-o " +
                            validated + " > " + validated + ".log 2>&1 & pid=$!; for i in $(seq 100); do " +
                            "grep -q 'step 2/' " + validated + ".log 2>/dev/null && break; sleep 0.1; done; " +
                            "kill -TERM $pid; wait $pid";
  std::ofstream(script_path) << again << "\n";
  EXPECT_EQ(WEXITSTATUS(std::system(("bash " + script_path).c_str())), 0);
  const auto log = read_text(validated + ".log");
  const auto at = log.find("stopping on SIGTERM after step ");
  ASSERT_NE(at, std::string::npos) << log;
  const auto step = std::stol(log.substr(at + std::string("stopping on SIGTERM after step ").size()));
  EXPECT_NE(read_text(validated + "/metrics.jsonl").find("{\"event\":\"valid\",\"step\":" + std::to_string(step) + ","),
            std::string::npos)
      << "no validation of step " << step;
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
    // A learned table holds the training context's positions (max_len follows data.context).
    const bool bounded = variant.find("type=learned") != std::string::npos;
    if (bounded) {
      EXPECT_EQ(r.code, 1) << r.output;
      EXPECT_NE(r.output.find("beyond the learned table of 16 positions"), std::string::npos) << r.output;
      r = run("eval --run " + lm + " --checkpoint last --context 16");
    }
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("perplexity = ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(bounded ? "windows of 16" : "windows of 32"), std::string::npos) << r.output;
  }
  auto r = run("translate --run " + (root / "lm").string() + " --checkpoint last --input " + text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("language model"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}

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
    EXPECT_NE(read_text(dir + "/loss.svg").find("loss (label-smoothed cross-entropy"), std::string::npos) << dir;
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
  // refused before anything moves: a source in the directory the fine-tune trains into
  // (--overwrite would move the source aside first)
  for (const auto& source : {first, first + "/checkpoint_best.pt"})
    for (const std::string request : {"", " --overwrite"}) {
      r = run("train --init-from " + source + " --set train.steps=1 --threads 1 -o " + first + "/" + request);
      EXPECT_NE(r.code, 0) << r.output;
      EXPECT_NE(r.output.find("train.init_from: " + source + " is in the run directory -o " + first +
                              "/ trains into; fine-tune into another directory (-o)"),
                std::string::npos)
          << r.output;
      EXPECT_TRUE(std::filesystem::exists(first + "/checkpoint_best.pt")) << source << request;
    }
  for (const auto& entry : std::filesystem::directory_iterator(root))
    EXPECT_EQ(entry.path().string().find(".old-"), std::string::npos) << entry.path();
  std::filesystem::remove_all(root);
}
