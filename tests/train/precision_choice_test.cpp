// train.precision: auto (train/precision_choice.h): a request that nothing computes in, timed
// on the run's model and resolved into the run's config before the first update.
#include "ropelab/train/precision_choice.h"

#include <filesystem>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/run/run.h"
#include "ropelab/task/translation_task.h"
#include "ropelab/train/trainer.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::read_text;

namespace {

class PrecisionChoice : public ropelab::testing::TempDir {};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_F(PrecisionChoice, AutoIsARequestThatNothingComputesIn) {
  EXPECT_EQ(load_config({{}, {"train.precision=auto"}}).train.precision(), Precision::automatic);
  EXPECT_EQ(to_string(Precision::automatic), "auto");
  EXPECT_TRUE(contains(error_of([] { matmul_dtype(Precision::automatic); }), "precision auto"));
  EXPECT_TRUE(contains(error_of([] { PrecisionScope scope(Precision::automatic, torch::kCPU); }), "precision auto"));
  EXPECT_EQ(faster_precision(1.0, 0.5), Precision::bf16);
  EXPECT_EQ(faster_precision(0.5, 1.0), Precision::fp32);
  EXPECT_EQ(faster_precision(0.5, 0.5), Precision::fp32);  // a tie keeps fp32
}

// Both precisions are timed on the model as it is, which stays as it was: the same
// parameters, no gradients left behind; the faster of the two medians is kept.
TEST_F(PrecisionChoice, TimingLeavesTheModelAsItWas) {
  const auto config = load_config({{},
                                   {"model.d_model=32", "model.heads=4", "model.d_ff=64", "model.encoder_layers=1",
                                    "model.decoder_layers=1", "model.position.type=rotary"}});
  auto model = make_task(config)->build_model(40);
  std::vector<Example> examples{{{5, 6, 7, 8, 9, 10}, {11, 12, 13, 14}, {}}, {{15, 16, 17}, {18, 19, 20, 21}, {}}};
  const auto batch = collate(examples, {0, 1}, torch::kCPU);
  std::vector<torch::Tensor> before;
  for (const auto& p : (*model)->parameters()) before.push_back(p.detach().clone());
  const auto trial = time_precisions(*model, batch, 0.1, 2);
  EXPECT_GT(trial.fp32_seconds, 0.0);
  EXPECT_GT(trial.bf16_seconds, 0.0);
  EXPECT_EQ(trial.rounds, 2);
  EXPECT_TRUE(contains(trial.describe(), "train.precision auto: " + to_string(trial.chosen)));
  const auto after = (*model)->parameters();
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(torch::equal(before[i], after[i])) << "parameter " << i;
    EXPECT_FALSE(after[i].grad().defined()) << "parameter " << i;
  }
}

// A run asked for auto measures once, says so, and trains in what it wrote into config.yaml;
// its resume reads that choice and measures nothing. The ablation runner still knows the run
// as the one its auto variant started.
TEST_F(PrecisionChoice, TheRunKeepsItsChoiceInItsConfig) {
  const auto data = write("pairs.tsv", "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\n");
  auto config_for = [&](int64_t steps) {
    return load_config(
        {{},
         {"data.train=" + data, "tokenizer.type=word", "model.d_model=16", "model.heads=2", "model.d_ff=16",
          "model.encoder_layers=1", "model.decoder_layers=1", "train.max_tokens=12",
          "train.steps=" + std::to_string(steps), "train.valid_every=0", "train.threads=1", "train.precision=auto"}});
  };
  const auto run = (dir_ / "run").string();
  ::testing::internal::CaptureStdout();
  train(config_for(2), yaml_config_files(), run, false);
  const auto log = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(contains(log, "train.precision auto: ")) << log;
  const auto saved = load_config({{RunPaths(run).config}, {}}).train.precision();
  EXPECT_TRUE(saved == Precision::fp32 || saved == Precision::bf16) << to_string(saved);
  EXPECT_TRUE(contains(log, "train.precision auto: " + to_string(saved))) << log;
  EXPECT_TRUE(run_started_with(run, config_for(2), yaml_config_files()));
  auto other = config_for(2);
  other.train.precision(saved == Precision::fp32 ? Precision::bf16 : Precision::fp32);
  EXPECT_FALSE(run_started_with(run, other, yaml_config_files()));

  // continued from the same auto config (as `ropelab train` of it again does): the saved
  // choice stands, and only train.steps changed
  ::testing::internal::CaptureStdout();
  train(config_for(3), yaml_config_files(), run, true);
  const auto resumed = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(contains(resumed, "train.precision auto")) << resumed;
  EXPECT_EQ(load_config({{RunPaths(run).config}, {}}).train.precision(), saved);
  EXPECT_EQ(load_config({{RunPaths(run).config_until(2)}, {}}).train.precision(), saved);
}
