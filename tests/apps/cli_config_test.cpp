// The ropelab executable's command line: subcommands listed, config and flag mistakes give one line and a non-zero
// exit, thread settings per command.
#include "cli_util.h"

using namespace ropelab::cli_test;

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

// A key the chosen encoder does not read is one line and exit 2; --allow-unread names it on
// stderr and trains with the config as it is.
TEST(Cli, UnreadKeysAreRefusedOrNamedWithAllowUnread) {
  const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
  const std::string set = " --set model.position.type=alibi --set model.position.unrotated=0.25 --dump-config";
  auto r = run("train " + demo + set);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output,
            "ropelab: config error: --set: model.encoder_position.unrotated=0.25 is not read "
            "(model.encoder_position.type=alibi, scaling.type=none); it applies to rotary and rotary_nd\n");
  r = run("train " + demo + set + " --allow-unread");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: --set: model.decoder_position.unrotated=0.25 is not read"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("type: alibi"), std::string::npos) << r.output;
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
      {"train " + demo + " --no-such-flag", "The following argument was not expected: --no-such-flag"},
      {"frobnicate", "unknown command 'frobnicate' (expected train | translate | eval"},
      {"train /nonexistent/config.yaml", "CONFIG: File does not exist: /nonexistent/config.yaml"},
      {"train " + demo + " --threads -1", "--threads: must be >= 0, got -1"},
      {"eval --run /tmp --beam 0", "--beam: must be > 0, got 0"},
      {"eval --run /tmp --beam two", "--beam: 'two' is not a number"},
      {"bench attention --tiles 64x0", "--tiles: expected QxK with positive Q and K (e.g. 64x256), got '64x0'"},
      {"bench attention --bias alibi",
       "--bias: alibi needs two softmax kernels; the performer backend takes no logit bias (e.g. --compare "
       "streaming,materialized) (see --help)"},
      {"bench attention --compare streaming,performer --bias fire",
       "--bias: fire needs two softmax kernels; the performer backend takes no logit bias (e.g. --compare "
       "streaming,materialized) (see --help)"},
      {"generate --run /tmp --min-new -1", "--min-new: must be >= 0, got -1"},
      {"bench attention --compare streaming,materialized --sinks 4",
       "--sinks: sinks are the keys seen beside a window: give --window too"},
  };
  for (const auto& [args, line] : flag_cases) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("ropelab: usage error: ", 0), 0u) << args << "\n" << r.output;
    // anywhere in the line: newer CLI11 releases name the command first ("train: The following ...")
    EXPECT_NE(r.output.find(line), std::string::npos) << args << "\n" << r.output;
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

// `bench attention` measures each case in a child started through the shell from the
// executable's own path: a path with spaces, a comma and quotes still measures every case.
TEST(Cli, BenchAttentionSweepsFromAFolderWithSpacesAndQuotes) {
  const auto top = fresh_dir("bench_path"), dir = top / "a b, 'c'";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(ROPELAB_BINARY_DIR) + "/ropelab", dir / "ropelab");
  // the copy's path for this test's own shell: double quotes, the single quotes as they are
  const auto r = run_shell("\"" + (dir / "ropelab").string() +
                           "\" bench attention --seq 32 --mode causal --compare streaming,materialized --batch 1 "
                           "--heads 1 --head-dim 8 --repeats 1 --threads 1 --json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto at = r.output.find("{\"bench\"");  // stderr shares the output: a failed case's line comes first
  ASSERT_NE(at, std::string::npos) << r.output;
  const auto row = nlohmann::json::parse(r.output.substr(at, r.output.find('\n', at) - at));
  EXPECT_EQ(row.at("T"), 32) << r.output;
  EXPECT_GT(row.at("streaming_ms").get<double>(), 0) << r.output;
  EXPECT_GT(row.at("materialized_ms").get<double>(), 0) << r.output;
  EXPECT_EQ(r.output.find("failed"), std::string::npos) << r.output;
  std::filesystem::remove_all(top);
}

// A learned bias in bf16 with a window and sinks: every case measured (in its child) and named.
TEST(Cli, BenchAttentionTimesALearnedBiasInBf16WithAWindow) {
  const auto r =
      run("bench attention --seq 32 --mode causal --compare chunked,materialized --bias kerple --dtype "
          "bfloat16 --window 8 --sinks 2 --batch 1 --heads 2 --head-dim 8 --repeats 1 --threads 1 --json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto at = r.output.find("{\"bench\"");
  ASSERT_NE(at, std::string::npos) << r.output;
  const auto row = nlohmann::json::parse(r.output.substr(at, r.output.find('\n', at) - at));
  EXPECT_EQ(row.at("dtype"), "bfloat16") << r.output;
  EXPECT_EQ(row.at("bias"), "kerple") << r.output;
  EXPECT_EQ(row.at("window"), 8) << r.output;
  EXPECT_EQ(row.at("sinks"), 2) << r.output;
  EXPECT_GT(row.at("chunked_ms").get<double>(), 0) << r.output;
  EXPECT_GT(row.at("materialized_ms").get<double>(), 0) << r.output;
}
