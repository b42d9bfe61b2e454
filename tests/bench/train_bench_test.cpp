// The training benchmark reports updates that ran no optimizer step: a timing of skipped
// updates (non-finite loss, fp16 overflow) is not a training update's.
#include "../test_util.h"
#include "ropelab/bench/benchmarks.h"

using namespace ropelab;

namespace {

TrainBenchResult bench_tiny(const std::string& lr) {
  torch::manual_seed(2);
  const auto config =
      load_config({{},
                   {"model.d_model=32", "model.heads=4", "model.d_ff=48", "model.encoder_layers=1",
                    "model.decoder_layers=1", "model.dropout=0", "train.lr_schedule=constant", "train.lr=" + lr}});
  TrainBenchOptions options;
  options.vocab_size = 50, options.batch = 4, options.length = 7, options.warmup = 1, options.steps = 3;
  return bench_train(config, options, torch::kCPU);
}

}  // namespace

TEST(TrainBench, CountsTheUpdatesThatRanNoOptimizerStep) {
  const auto fine = bench_tiny("0.001");
  EXPECT_EQ(fine.skipped_updates, 0);
  EXPECT_EQ(fine.settling_updates, 0);  // fp32: no loss scale
  EXPECT_TRUE(fine.loss_scale_settled);
  EXPECT_EQ(fine.step.repeats, 3);
  // Adam moves every weight by about lr: from the second update on the logits are not finite
  const auto blown = bench_tiny("1e30");
  EXPECT_EQ(blown.skipped_updates, 3);
  EXPECT_EQ(blown.settling_updates, 0);
}
