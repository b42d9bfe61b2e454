// Padding examples into batches and planning batches by token budget.
#include "ropelab/data/batching.h"

#include <filesystem>
#include <fstream>

#include "../test_util.h"

using namespace ropelab;

using Batching = ropelab::testing::TempDir;  // a fresh directory per test

TEST_F(Batching, BatchesRespectTheTokenBudgetAndCoverEveryExample) {
  std::vector<Example> examples;
  for (int i = 0; i < 200; ++i)
    examples.push_back({std::vector<int64_t>(static_cast<size_t>(1 + i % 17), 5),
                        std::vector<int64_t>(static_cast<size_t>(1 + i % 13), 6),
                        {}});
  for (bool bucketing : {true, false}) {
    auto plan = plan_batches(examples, 64, bucketing, 7);
    std::vector<int> seen(examples.size(), 0);
    for (const auto& batch : plan) {
      auto b = collate(examples, batch, torch::kCPU);
      EXPECT_LE(b.source.numel(), 64);
      EXPECT_LE(b.target_in.numel(), 64);
      for (auto i : batch) ++seen[i];
    }
    for (int s : seen) EXPECT_EQ(s, 1);
    EXPECT_EQ(plan, plan_batches(examples, 64, bucketing, 7));  // seeded
    EXPECT_NE(plan, plan_batches(examples, 64, bucketing, 8));
  }
  // bucketing wastes less on padding
  auto padding = [&](bool bucketing) {
    int64_t pads = 0;
    for (const auto& batch : plan_batches(examples, 64, bucketing, 7))
      pads += collate(examples, batch, torch::kCPU).source.eq(kPadId).sum().item<int64_t>();
    return pads;
  };
  EXPECT_LT(padding(true), padding(false) / 2);
}

TEST_F(Batching, CollateAddsBosAndEosAndShiftsTarget) {
  std::vector<Example> examples = {{{10, 11}, {20, 21, 22}, {}}, {{12}, {23}, {}}};
  auto b = collate(examples, {0, 1}, torch::kCPU);
  ASSERT_EQ(kPadId, 0);
  ASSERT_EQ(kBosId, 2);
  ASSERT_EQ(kEosId, 3);
  EXPECT_TRUE(torch::equal(b.source, torch::tensor({{10, 11, 3}, {12, 3, 0}}).to(torch::kLong)));
  EXPECT_TRUE(torch::equal(b.target_in, torch::tensor({{2, 20, 21, 22}, {2, 23, 0, 0}}).to(torch::kLong)));
  EXPECT_TRUE(torch::equal(b.target_out, torch::tensor({{20, 21, 22, 3}, {23, 3, 0, 0}}).to(torch::kLong)));
  EXPECT_EQ(b.target_tokens, 6);
}
