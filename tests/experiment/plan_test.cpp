// Planning an ablation from what is on disk (experiment/plan.h), and running the plan
// without a shell (experiment/runner.h).
#include "ropelab/experiment/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "../test_util.h"
#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/evaluations.h"
#include "ropelab/experiment/runner.h"
#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/run.h"

namespace ropelab {
namespace {

using Steps = std::vector<std::vector<std::string>>;

/// An ablation directory in memory: which runs finished, which config each was started
/// from (by its variant_config), which evaluations each holds.
class FakeDisk : public RunsOnDisk {
 public:
  std::set<std::string> done, trained_to_the_end;
  std::map<std::string, Config> started;
  std::set<std::pair<std::string, std::string>> evaluated;  // (dir, report tag)

  std::vector<std::string> finished_runs() const override { return {done.begin(), done.end()}; }
  bool finished(const std::string& dir) const override { return done.count(dir) > 0; }
  bool trained(const std::string& dir) const override { return trained_to_the_end.count(dir) > 0; }
  bool started_with(const std::string& dir, const Config& config) const override {
    const auto it = started.find(dir);
    return it != started.end() && dump_config(it->second) == dump_config(config);
  }
  bool has_evaluation(const std::string& dir, const AblationEval& eval) const override {
    return evaluated.count({dir, eval.tag}) > 0;
  }
};

class Plan : public ropelab::testing::TempDir {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
    const auto exp = write(
        "exp.yaml", "base: " + demo +
                        "\nset: [task=lm, data.format=text, tokenizer.type=byte, data.context=8, data.test=t.txt]\n"
                        "grid:\n  model.position.type: [alibi, rotary]\nseeds: [1, 2]\n"
                        "eval_contexts: [8, 16]\n");
    spec_ = load_experiment(exp);
    variants_ = expand_grid(spec_);
    options_ = {"OUT", 3, ""};
  }
  Job plan(size_t variant, int64_t seed, const std::vector<std::string>& extra = {}) const {
    return plan_job(spec_, variants_.at(variant), seed, extra, options_, disk_);
  }
  /// The run's config as plan_job computes it.
  Config config_of(size_t variant, int64_t seed) const { return variant_config(spec_, variants_.at(variant), seed); }

  ExperimentSpec spec_;
  std::vector<Variant> variants_;
  PlanOptions options_;
  FakeDisk disk_;
};

const std::vector<std::string> kEval8{"eval",      "--split",
                                      "test",      "--context",
                                      "8",         "--per-position",
                                      "--run",     "OUT/runs/model.position.type=rotary.seed2",
                                      "--threads", "3"};

TEST_F(Plan, ANewRunTrainsFromTheExperimentThenRunsEveryEvaluation) {
  const auto job = plan(1, 2);
  EXPECT_EQ(job.variant, "model.position.type=rotary");
  EXPECT_EQ(job.dir, "OUT/runs/model.position.type=rotary.seed2");
  EXPECT_EQ(job.log, "OUT/runs/model.position.type=rotary.seed2.log");
  EXPECT_TRUE(job.trains);
  EXPECT_TRUE(job.whole);
  ASSERT_EQ(job.steps.size(), 3u);  // train, then eval at contexts 8 and 16
  std::vector<std::string> train{"train", "--overwrite", "--allow-unread"};
  train.insert(train.end(), spec_.base.begin(), spec_.base.end());
  for (const auto& s : spec_.set) train.insert(train.end(), {"--set", s});
  train.insert(train.end(), {"--set", "model.position.type=rotary", "--set", "train.seed=2", "--threads", "3", "-o",
                             "OUT/runs/model.position.type=rotary.seed2"});
  EXPECT_EQ(job.steps[0], train);
  EXPECT_EQ(job.steps[1], kEval8);
  EXPECT_EQ(job.steps[2][4], "16");
  EXPECT_EQ(job.config.train.seed(), 2);
}

TEST_F(Plan, AnInterruptedOrFailedRunOfTheSameConfigResumes) {
  disk_.started[plan(1, 2).dir] = config_of(1, 2);  // started, never finished (stopped, or a step failed)
  const auto job = plan(1, 2);
  ASSERT_EQ(job.steps.size(), 3u);
  EXPECT_EQ(job.steps[0], (std::vector<std::string>{"train", "--resume", "--threads", "3", "-o", job.dir}));
  EXPECT_TRUE(job.trains);
  EXPECT_FALSE(job.whole);  // its pace says little of a new run's
}

TEST_F(Plan, AFinishedRunRunsOnlyTheEvaluationsItLacks) {
  const auto dir = plan(1, 2).dir;
  disk_.started[dir] = config_of(1, 2);
  disk_.done.insert(dir);
  disk_.evaluated.insert({dir, "test.ctx16"});
  auto job = plan(1, 2);
  EXPECT_FALSE(job.trains);
  EXPECT_FALSE(job.whole);
  EXPECT_EQ(job.steps, Steps{kEval8});
  disk_.evaluated.insert({dir, "test.ctx8"});
  EXPECT_TRUE(plan(1, 2).steps.empty());  // nothing left
}

TEST_F(Plan, ARunStoppedAmongItsEvaluationsRunsOnlyThoseItLacks) {
  const auto dir = plan(1, 2).dir;
  disk_.started[dir] = config_of(1, 2);
  disk_.trained_to_the_end.insert(dir);  // trained; stopped before its marker
  disk_.evaluated.insert({dir, "test.ctx16"});
  auto job = plan(1, 2);
  EXPECT_FALSE(job.trains);  // no `train --resume`, which would start the log anew
  EXPECT_EQ(job.steps, Steps{kEval8});
  disk_.evaluated.insert({dir, "test.ctx8"});
  EXPECT_TRUE(plan(1, 2).steps.empty());
  disk_.started[dir] = config_of(0, 2);  // a trained run of another config is trained anew
  job = plan(1, 2);
  ASSERT_EQ(job.steps.size(), 3u);
  EXPECT_EQ(job.steps[0][1], "--overwrite");
}

TEST_F(Plan, AChangedConfigTrainsAnewAndMovesTheOldRunAside) {
  const auto dir = plan(1, 2).dir;
  disk_.started[dir] = config_of(0, 2);  // the directory holds a run of another config
  disk_.done.insert(dir);
  disk_.evaluated.insert({dir, "test.ctx8"});
  disk_.evaluated.insert({dir, "test.ctx16"});
  const auto job = plan(1, 2);
  EXPECT_EQ(job.dir, dir);
  ASSERT_EQ(job.steps.size(), 3u);
  EXPECT_EQ(job.steps[0][1], "--overwrite");
}

TEST_F(Plan, AnIdenticalFinishedRunIsReusedFromAnotherDirectory) {
  const std::string other = "OUT/runs/from_another_experiment.seed2";
  disk_.started[other] = config_of(1, 2);
  disk_.done.insert(other);
  disk_.evaluated.insert({other, "test.ctx8"});
  const auto job = plan(1, 2);
  EXPECT_EQ(job.dir, other);
  EXPECT_EQ(job.log, other + ".log");
  ASSERT_EQ(job.steps.size(), 1u);  // only the evaluation it lacks, there
  EXPECT_EQ(job.steps[0][4], "16");
  EXPECT_EQ(job.steps[0][7], other);
  // a finished run of another seed is not the same config
  EXPECT_EQ(plan(1, 1).dir, "OUT/runs/model.position.type=rotary.seed1");
}

TEST_F(Plan, ExtraOverridesAndTheDeviceReachTheCommands) {
  options_.device = "cuda";
  const auto job = plan(0, 1, {"train.init_from=OUT/runs/x.seed1"});
  EXPECT_EQ(job.config.train.init_from(), "OUT/runs/x.seed1");
  const auto& train = job.steps[0];
  EXPECT_NE(std::find(train.begin(), train.end(), "train.init_from=OUT/runs/x.seed1"), train.end());
  EXPECT_EQ(std::vector<std::string>(train.end() - 6, train.end()),
            (std::vector<std::string>{"--threads", "3", "--device", "cuda", "-o", job.dir}));
  EXPECT_EQ(job.steps[1].back(), "cuda");
}

class Runner : public ropelab::testing::TempDir {
 protected:
  /// A job of `steps`, each run as `/bin/sh STEP...`, in DIR/runs/NAME.
  Job job(const std::string& name, Steps steps, bool trains = false) const {
    Job j;
    j.variant = name;
    j.seed = 1;
    j.dir = (dir_ / "runs" / name).string();
    j.log = AblationLayout::log(j.dir);
    j.steps = std::move(steps);
    j.trains = trains;
    std::filesystem::create_directories(j.dir);  // as the training step would
    return j;
  }
};

TEST_F(Runner, RunsEachJobsStepsInOrderAndStopsAJobAtItsFirstFailure) {
  const auto good = job("good", {{"-c", "echo one"}, {"-c", "echo two >&2"}});
  const auto bad = job("bad", {{"-c", "echo first"}, {"-c", "exit 3"}, {"-c", "echo never"}});
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const auto outcome = run_jobs({good, bad}, "/bin/sh", 2, 0, 2);
  const auto out = ::testing::internal::GetCapturedStdout(), err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(outcome.failed, 1);
  EXPECT_EQ(outcome.signal, 0);
  EXPECT_EQ(testing::read_text(good.log), "one\ntwo\n");  // stdout and stderr, in order
  EXPECT_TRUE(std::filesystem::exists(AblationLayout::done(good.dir)));
  EXPECT_EQ(testing::read_text(bad.log), "first\n");
  EXPECT_FALSE(std::filesystem::exists(AblationLayout::done(bad.dir)));
  EXPECT_NE(out.find("ablate: [2/2] start bad seed 1"), std::string::npos) << out;
  EXPECT_NE(out.find("ablate: FAILED bad seed 1"), std::string::npos) << out;
  EXPECT_EQ(err, "ablate: run failed, see " + bad.log + "\n");
}

TEST_F(Runner, TheEtaFollowsOnlyJobsThatDidARunsWholeWork) {
  const auto resumed = job("resumed", {{"-c", "true"}});
  auto whole = job("whole", {{"-c", "true"}}), next = job("next", {{"-c", "true"}});
  whole.whole = next.whole = true;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_jobs({resumed, whole, next}, "/bin/sh", 1, 0, 3).failed, 0);
  const auto out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("finished resumed seed 1 in 0s; 2 left, ETA unknown until a run trained from its start finishes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("finished whole seed 1 in 0s; 1 left, ETA 0s\n"), std::string::npos) << out;
  EXPECT_NE(out.find("finished next seed 1 in 0s; 0 left, ETA 0s\n"), std::string::npos) << out;
}

TEST_F(Runner, ASignalReachesTheStepsUnderWayAndNothingStartsAfterIt) {
  // The step sends SIGTERM to run_jobs' process (its parent) and waits up to 5 s for it back.
  const std::string step =
      "trap 'echo passed on; exit 0' TERM; kill -TERM $PPID;"
      " for i in $(seq 500); do sleep 0.01; done; echo not passed on";
  const auto first = job("first", {{"-c", step}, {"-c", "echo second step"}});
  const auto other = job("other", {{"-c", "echo other"}});
  struct sigaction before, after;  // filled by ::sigaction
  ::sigaction(SIGTERM, nullptr, &before);
  ::testing::internal::CaptureStdout();
  const auto outcome = run_jobs({first, other}, "/bin/sh", 1, 0, 2);
  const auto out = ::testing::internal::GetCapturedStdout();
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(outcome.signal, SIGTERM);
  EXPECT_EQ(outcome.stopped, 1);
  EXPECT_EQ(outcome.failed, 0);
  EXPECT_EQ(testing::read_text(first.log), "passed on\n");  // its second step never ran
  EXPECT_FALSE(std::filesystem::exists(other.log));
  EXPECT_FALSE(std::filesystem::exists(AblationLayout::done(first.dir)));
  EXPECT_NE(out.find("ablate: stopped first seed 1 after "), std::string::npos) << out;
  EXPECT_NE(out.find("ablate: SIGTERM: 1 runs stopped, 1 not started\n"), std::string::npos) << out;
  EXPECT_EQ(after.sa_handler, before.sa_handler);  // the caller's handler is back
}

TEST_F(Runner, ATrainingThatStopsBeforeItsEndFailsTheJob) {
  // exits 0 without writing RUN/trained, as a training stopped by a signal does
  auto stopped = job("stopped", {{"-c", "echo training"}, {"-c", "echo evaluation"}}, true);
  stopped.whole = true;  // trained from its start: the log of an older run goes
  std::ofstream(stopped.log) << "an older log\n";
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_jobs({stopped}, "/bin/sh", 1, 0, 1).failed, 1);
  ::testing::internal::GetCapturedStdout();
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(testing::read_text(stopped.log),
            "training\nablate: the training stopped before its end; run ablate again to resume it\n");
  EXPECT_FALSE(std::filesystem::exists(AblationLayout::done(stopped.dir)));
  // resumed, it reaches its end and goes on to its evaluations, all appended to its log
  auto trained =
      job("trained", {{"-c", "echo resumed; touch \"$0\"", RunPaths(stopped.dir).trained}, {"-c", "echo evaluation"}},
          true);
  trained.dir = stopped.dir, trained.log = stopped.log;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_jobs({trained}, "/bin/sh", 1, 0, 1).failed, 0);
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(testing::read_text(trained.log),
            "training\nablate: the training stopped before its end; run ablate again to resume it\n"
            "resumed\nevaluation\n");
  EXPECT_TRUE(std::filesystem::exists(AblationLayout::done(trained.dir)));
}

// eval_window_sinks: past the training context each run is also evaluated with a sliding
// window of the training context's keys and each number of sinks, one column each; not at
// the training context itself, and not for attention that takes no window.
TEST_F(Plan, WindowedEvaluationsFollowTheTrainingContext) {
  auto asked = spec_.evaluations;
  asked.window_sinks = {0, 4};
  auto config = config_of(0, 1);
  std::vector<std::string> columns;
  for (const auto& eval : ablation_evals(config, asked)) {
    columns.push_back(format_column(eval.columns.at(0).second));
    if (eval.columns.at(0).second.window == 0) continue;
    const auto args = eval.args;
    const auto sinks = std::to_string(eval.columns.at(0).second.sinks);
    EXPECT_NE(std::find(args.begin(), args.end(), "model.attention.window=8"), args.end());
    EXPECT_NE(std::find(args.begin(), args.end(), "model.attention.sinks=" + sinks), args.end());
    EXPECT_EQ(eval.tag, "test.ctx16.set_8_" + sinks);  // its own files
  }
  EXPECT_EQ(columns, (std::vector<std::string>{"test_ppl@8", "test_ppl@16", "test_ppl@16#w8", "test_ppl@16#w8s4"}));
  config.model.attention().type(AttentionType::performer);
  EXPECT_EQ(ablation_evals(config, asked).size(), 2u);
}

// With eval_window_sinks, passkey prompts longer than the training context are asked again
// under the window with each number of sinks, each in its own report beside passkey.json; not
// for a run with its own window, nor when no prompt is past the context.
TEST_F(Plan, PasskeyIsAskedAgainUnderAWindowWithSinksPastTheContext) {
  auto asked = spec_.evaluations;
  asked.window_sinks = {0, 4};
  PasskeyGrid grid;
  grid.lengths = {100, 140};
  grid.depths = {0, 1};
  asked.passkey = grid;
  auto passkey_evals = [&](const Config& config) {
    std::vector<std::string> out;
    for (const auto& eval : ablation_evals(config, asked)) {
      if (eval.protocol != ProtocolKind::passkey) continue;
      std::string names = eval.report("RUN");
      for (const auto& column : eval.columns) names += " " + format_column(column.second);
      out.push_back(names);
      if (eval.tag.empty()) continue;
      const auto& args = eval.args;
      const auto sinks = std::to_string(eval.columns.at(0).second.sinks);
      EXPECT_NE(std::find(args.begin(), args.end(), "model.attention.window=8"), args.end());
      EXPECT_NE(std::find(args.begin(), args.end(), "model.attention.sinks=" + sinks), args.end());
    }
    return out;
  };
  auto config = config_of(1, 1);
  EXPECT_EQ(passkey_evals(config),
            (std::vector<std::string>{"RUN/passkey.json passkey@100 passkey@140",
                                      "RUN/passkey.set_8_0.json passkey@100#w8 passkey@140#w8",
                                      "RUN/passkey.set_8_4.json passkey@100#w8s4 passkey@140#w8s4"}));
  auto long_context = config;
  long_context.data.context(4096);
  EXPECT_EQ(passkey_evals(long_context).size(), 1u);
  config.model.attention().window(4);
  EXPECT_EQ(passkey_evals(config).size(), 1u);
}

// eval_scaling_factors: each static scaling at each fixed factor at every context, beside the
// exact factor past the training context; a fixed factor equal to the exact one (2 at 16 =
// 2 x 8) is the same evaluation, run once and read into both columns; dynamic NTK takes no
// fixed factor; the rotary variant only, and not when it trained on randomized positions.
TEST_F(Plan, FixedFactorsAddColumnsAndShareTheExactFactorsEvaluation) {
  auto asked = spec_.evaluations;
  asked.scalings = {"yarn", "dynamic_ntk"};
  asked.scaling_factors = {2, 4};
  std::vector<std::string> columns, tags;
  for (const auto& eval : ablation_evals(config_of(1, 1), asked)) {
    tags.push_back(eval.tag);
    std::string names;
    for (const auto& column : eval.columns) names += (names.empty() ? "" : " ") + format_column(column.second);
    columns.push_back(names);
  }
  EXPECT_EQ(columns, (std::vector<std::string>{"test_ppl@8", "test_ppl@8+yarn2x", "test_ppl@8+yarn4x", "test_ppl@16",
                                               "test_ppl@16+yarn test_ppl@16+yarn2x", "test_ppl@16+dynamic_ntk",
                                               "test_ppl@16+yarn4x"}));
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(std::adjacent_find(tags.begin(), tags.end()), tags.end());  // no evaluation twice
  EXPECT_EQ(ablation_evals(config_of(0, 1), asked).size(), 2u);         // alibi: no scalings
  auto randomized = config_of(1, 1);  // rotary trained on positions that span the lengths: no scalings
  randomized.model.decoder_position().train_positions().type(TrainPositionsType::randomized);
  EXPECT_EQ(ablation_evals(randomized, asked).size(), 2u);
  auto pose = config_of(1, 1);  // PoSE is read with and without YaRN (Zhu et al. 2024)
  pose.model.decoder_position().train_positions().type(TrainPositionsType::pose);
  EXPECT_EQ(ablation_evals(pose, asked).size(), 7u);
}

// Context gain's full pass is the perplexity at its context, and its command writes that
// report too: where both are missing, the gain's command runs alone; where only the
// perplexity is, its own command runs.
TEST_F(Plan, AContextGainGivesThePerplexityAtItsContextToo) {
  spec_.evaluations.gain_windows = {8};
  const auto dir = plan(1, 2).dir;
  disk_.started[dir] = config_of(1, 2);
  disk_.trained_to_the_end.insert(dir);
  const std::vector<std::string> gain16{"eval", "--split", "test", "--context", "16", "--context-gain",
                                        "8",    "--run",   dir,    "--threads", "3"};
  EXPECT_EQ(plan(1, 2).steps, (Steps{kEval8, gain16}));  // no gain at 8: nothing past the window
  disk_.evaluated.insert({dir, "test.ctx16.gain8"});
  auto ppl16 = kEval8;
  ppl16[4] = "16";
  EXPECT_EQ(plan(1, 2).steps, (Steps{kEval8, ppl16}));
  disk_.evaluated.erase({dir, "test.ctx16.gain8"});
  disk_.evaluated.insert({dir, "test.ctx16"});
  EXPECT_EQ(plan(1, 2).steps, (Steps{kEval8, gain16}));
}

// A grid reaches variants that do not read every key it sets: one warning per such variant
// when the experiment loads, and the variant's training takes its config as it is.
TEST_F(Plan, KeysAVariantDoesNotReadAreOneWarningPerVariant) {
  const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
  const auto exp = write("unread.yaml", "base: " + demo +
                                            "\nset: [task=lm, data.format=text, tokenizer.type=byte, data.context=8, "
                                            "data.test=t.txt, model.position.unrotated=0.25]\n"
                                            "grid:\n  model.position.type: [alibi, rotary, kerple]\n");
  const auto spec = load_experiment(exp);
  ASSERT_EQ(spec.warnings.size(), 2u);
  EXPECT_EQ(spec.warnings[0], exp +
                                  ": variant model.position.type=alibi does not read "
                                  "model.decoder_position.unrotated, set by --set");
  EXPECT_NE(spec.warnings[1].find("variant model.position.type=kerple does not read"), std::string::npos);
  const auto job = plan_job(spec, expand_grid(spec).at(0), 1, {}, options_, disk_);
  EXPECT_EQ(job.config.model.decoder_position().type(), PositionType::alibi);
  EXPECT_NE(std::find(job.steps[0].begin(), job.steps[0].end(), "--allow-unread"), job.steps[0].end());
}

}  // namespace
}  // namespace ropelab
