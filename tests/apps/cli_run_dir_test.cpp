// Run directories: a trained model is never overwritten or lost, one writer at a time, killed runs train again to the
// same losses.
#include "cli_util.h"

using namespace ropelab::cli_test;

namespace {

/// An ablation of demo_tiny.yaml on the demo pairs, written to EXP: `sets` after the data's,
/// then `rest` (the grid, the seeds).
void write_demo_experiment(const std::string& exp, const std::string& sets, const std::string& rest) {
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\nset: [data.train=" << pairs
                     << ", data.valid=" << pairs << ", data.test=" << pairs << ", " << sets << "]\n"
                     << rest;
}

/// The rest of the line of `output` that starts with `label` ("" when there is none).
std::string line_after(const std::string& output, const std::string& label) {
  const auto at = output.find(label);
  if (at == std::string::npos) return "";
  return output.substr(at + label.size(), output.find('\n', at) - at - label.size());
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

// A start refused before it writes anything (a config error, a device the machine lacks)
// leaves no empty run directory; a directory that was there before stays.
TEST(Cli, ARefusedStartLeavesNoEmptyRunDirectory) {
  const auto root = fresh_dir("refused");
  const auto run_dir = (root / "run").string();
  auto r = run_shell(demo_train("--set model.d_model=-3 -o " + run_dir));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("model.d_model=-3 must be positive"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(run_dir));
  r = run_shell(demo_train("--device cuda:7 -o " + run_dir));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("device cuda:7 requested but"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(run_dir));
  std::filesystem::create_directories(run_dir);
  r = run_shell(demo_train("--set model.d_model=-3 -o " + run_dir));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(std::filesystem::is_directory(run_dir));
  std::filesystem::remove_all(root);
}

// While a run trains, a second writer is refused at once, naming the holder; readers evaluate
// its checkpoints as they are replaced; the first run, stopped by SIGTERM once they are done,
// leaves a loadable checkpoint. It has more steps than it can reach and is stopped, not left
// to finish, so that every reader runs while it trains however loaded the machine is.
TEST(Cli, ASecondWriterIsRefusedWhileReadersEvaluate) {
  const auto root = fresh_dir("writers");
  const auto run_dir = (root / "run").string();
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  const auto r =
      run_script(root, "writers",
                 fill(R"sh(
{FIRST} > {RUN}.first.log 2>&1 & first=$!
for i in $(seq 2400); do [ -e {RUN}/checkpoint_last.pt ] && break; sleep 0.05; done
{SECOND} > {RUN}.second.log 2>&1; echo "second exit $?"
echo "holder $first"
for i in 1 2 3; do
  kill -0 $first 2>/dev/null && during=training || during=finished
  {CLI} eval --run {RUN} --checkpoint last --split valid --threads 1 > {RUN}.eval$i.log 2>&1
  echo "eval exit $? while $during"
done
kill -TERM $first; wait $first; echo "first exit $?"
cat {RUN}.second.log
)sh",
                      {{"FIRST", demo_train("--set train.steps=1000000 --set train.valid_every=25 -o " + run_dir)},
                       {"SECOND", demo_train("--set model.d_model=32 -o " + run_dir)},
                       {"RUN", run_dir},
                       {"CLI", cli}}));
  const auto& out = r.output;
  EXPECT_NE(out.find("second exit 1"), std::string::npos) << out;
  const auto holder = line_after(out, "holder ");
  EXPECT_NE(
      out.find("ropelab: error: " + run_dir + ": in use by another process (PID " + holder + ": " + cli + " train "),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("eval exit 0 while training\neval exit 0 while training\neval exit 0 while training\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("first exit 0"), std::string::npos) << out;
  EXPECT_NE(read_text(run_dir + ".first.log").find("stopping on SIGTERM after step "), std::string::npos)
      << read_text(run_dir + ".first.log");
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/trained"));  // stopped before its end
  EXPECT_NE(read_text(run_dir + "/config.yaml").find("d_model: 64"), std::string::npos);
  const auto eval = run("eval --run " + run_dir + " --checkpoint last --split valid --threads 1");
  EXPECT_EQ(eval.code, 0) << eval.output;
  std::filesystem::remove_all(root);
}

// Every worker of a data-parallel run holds the launcher's lock (one open file description).
TEST(Cli, DataParallelWorkersHoldTheLaunchersLock) {
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
  EXPECT_NE(r.output.find("second: ropelab: error: " + run_dir + ": in use by another process"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("launcher exit 0"), std::string::npos) << r.output;

  std::filesystem::remove_all(root);
}

// Each run of `ablate --jobs 2` holds its own lock; a run stopped by SIGTERM is neither
// evaluated nor marked done, and SIGTERM to ablate itself reaches its training.
TEST(Cli, AblateRunsHoldTheirLocksAndStopOnSigterm) {
  const auto root = fresh_dir("ablate_locks");
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  // ablate --jobs 2: both runs are seen locked at one moment, then stopped by SIGTERM
  const auto exp = (root / "exp.yaml").string(), out = (root / "out").string();
  write_demo_experiment(exp, "train.steps=1000000, train.valid_every=0",
                        "grid:\n  model.position.type: [sinusoidal]\nseeds: [1, 2]\n");
  auto r = run_script(root, "ablate",
                      fill(R"sh(
{CLI} ablate {EXP} -o {OUT} --jobs 2 --threads 1 > {OUT}.log 2>&1 & ablate=$!
a={OUT}/runs/model.position.type=sinusoidal.seed1 b={OUT}/runs/model.position.type=sinusoidal.seed2
for i in $(seq 600); do
  if [ -e $a/.lock ] && [ -e $b/.lock ] && ! flock -n $a/.lock true && ! flock -n $b/.lock true; then
    echo "both runs locked"; break
  fi
  sleep 0.05
done
pkill -TERM -P $ablate  # the two trainings, children of ablate
wait $ablate; echo "ablate exit $?"
)sh",
                           {{"CLI", cli}, {"EXP", exp}, {"OUT", out}}));
  EXPECT_NE(r.output.find("both runs locked\nablate exit 1"), std::string::npos) << r.output << read_text(out + ".log");

  // A training stopped by SIGTERM saves and exits 0 before its end: ablate neither evaluates
  // it nor marks it done, and the next ablate resumes it to the end.
  write_demo_experiment(exp, "train.steps=100000, train.log_every=1, train.valid_every=0",
                        "grid:\n  model.position.type: [rotary]\n");
  const auto stopped = out + "/runs/model.position.type=rotary.seed1";
  r = run_script(root, "stopped",
                 fill(R"sh(
{CLI} ablate {EXP} -o {OUT} --threads 1 > {OUT}.stopped.log 2>&1 & ablate=$!
for i in $(seq 600); do grep -q 'step 3/' {RUN}.log 2>/dev/null && break; sleep 0.05; done
pkill -TERM -P $ablate  # the training, ablate's child
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

  // SIGTERM to ablate itself reaches the training (resumed), which saves; ablate says so and
  // exits 143.
  r = run_script(root, "ablate_stopped",
                 fill(R"sh(
rm {RUN}.log
setsid {CLI} ablate {EXP} -o {OUT} --threads 1 > {OUT}.ablate_stopped.log 2>&1 & ablate=$!
for i in $(seq 600); do grep -q '^step ' {RUN}.log 2>/dev/null && break; sleep 0.05; done
kill -TERM $ablate
wait $ablate; echo "ablate exit $?"
kill -KILL -- -$ablate 2>/dev/null  # a training left running (its own process group)
)sh",
                      {{"CLI", cli}, {"EXP", exp}, {"OUT", out}, {"RUN", stopped}}));
  const auto said = read_text(out + ".ablate_stopped.log");
  EXPECT_NE(r.output.find("ablate exit 143"), std::string::npos) << r.output << said;
  EXPECT_NE(said.find("ablate: stopped model.position.type=rotary seed 1 after "), std::string::npos) << said;
  EXPECT_NE(said.find("ablate: SIGTERM: 1 runs stopped, 0 not started\n"), std::string::npos) << said;
  EXPECT_NE(said.find("ablate: stopped; the same command resumes the grid (results not written)"), std::string::npos)
      << said;
  EXPECT_NE(read_text(stopped + ".log").find("stopping on SIGTERM after step"), std::string::npos);
  EXPECT_EQ(said.find("wrote "), std::string::npos) << said;
  EXPECT_FALSE(std::filesystem::exists(stopped + "/trained"));
  std::filesystem::remove_all(root);
}

// An ablation directory belongs to one ablate: a second, on the directory while the first
// trains its run, stops at once naming the first, and neither starts nor moves anything.
TEST(Cli, ASecondAblateOnOneDirectoryIsRefused) {
  const auto root = fresh_dir("two_ablates");
  const auto exp = (root / "exp.yaml").string(), out = (root / "out").string();
  const auto run = out + "/runs/model.position.type=rotary.seed1";
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  write_demo_experiment(exp, "train.steps=1000000, train.log_every=1, train.valid_every=0",
                        "grid:\n  model.position.type: [rotary]\n");
  const auto r = run_script(root, "two_ablates",
                            fill(R"sh(
{CLI} ablate {EXP} -o {OUT} --threads 1 > {OUT}.first.log 2>&1 & first=$!
for i in $(seq 600); do grep -q 'step 3/' {RUN}.log 2>/dev/null && break; sleep 0.05; done
echo "holder $first"
{CLI} ablate {EXP} -o {OUT} --threads 1 > {OUT}.second.log 2>&1; echo "second exit $?"
ls {OUT}/runs | sed 's/^/in runs: /'
ls {OUT} | sed 's/^/in out: /'
pkill -TERM -P $first  # the training, the first ablate's child
wait $first
)sh",
                                 {{"CLI", cli}, {"EXP", exp}, {"OUT", out}, {"RUN", run}}));
  const auto second = read_text(out + ".second.log");
  EXPECT_NE(r.output.find("second exit 1"), std::string::npos) << r.output << second;
  const auto holder = line_after(r.output, "holder ");
  ASSERT_FALSE(holder.empty()) << r.output;
  EXPECT_EQ(second, "ropelab: error: " + out + ": in use by another process (PID " + holder + ": ropelab ablate " +
                        exp + " -o " + out + "); wait for it to end, or choose another directory\n");
  // The first's run and log stay where they are: nothing was moved aside.
  EXPECT_NE(r.output.find("second exit 1\nin runs: model.position.type=rotary.seed1\n"
                          "in runs: model.position.type=rotary.seed1.log\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(".old-"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in runs: model.position.type=rotary.seed1.log\nin out: runs\n"), std::string::npos)
      << r.output;  // and no table: the first has not come to its tables
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
