// What a finished run contributes to an ablation's tables (experiment/results.h).
#include "ropelab/experiment/results.h"

#include "../test_util.h"

namespace ropelab {
namespace {

class Results : public ropelab::testing::TempDir {};

// The ablation table's train_s is the last elapsed_s, which a resumed run continues from
// its checkpoint (ResumeContinuesBitForBit checks that it never goes back).
TEST_F(Results, TrainingTimeIsTheLastElapsed) {
  write("metrics.jsonl",
        "{\"event\":\"train\",\"step\":100,\"elapsed_s\":40}\n"
        "{\"event\":\"valid\",\"step\":100,\"loss\":2.5,\"ppl\":12.0}\n"
        "{\"event\":\"train\",\"step\":200,\"elapsed_s\":90}\n"
        "{\"event\":\"train\",\"step\":300,\"elapsed_s\":120}\n"  // resumed at step 200
        "{\"event\":\"valid\",\"step\":300,\"loss\":2.0,\"ppl\":7.5}\n");
  write("eval.test.json", "{\"bleu\":12.5,\"chrf\":30.0,\"perplexity\":20.0}\n");
  const auto r = read_run_result(dir_.string(), Config(), {});
  EXPECT_DOUBLE_EQ(r.metrics.at("train_s"), 120.0);
  EXPECT_DOUBLE_EQ(r.metrics.at("valid_ppl"), 7.5);
  EXPECT_DOUBLE_EQ(r.metrics.at("test_bleu"), 12.5);
  EXPECT_EQ(r.curve.size(), 2u);
}

}  // namespace
}  // namespace ropelab
