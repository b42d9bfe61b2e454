// Positions: the four layouts, default ranges, row selection, joining, derived tables.
#include "ropelab/position/positions.h"

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

TEST(Positions, LayoutsAndDefaults) {
  auto shared = Positions::range(3, 4, 1, torch::kCPU);
  EXPECT_FALSE(shared.batched());
  EXPECT_EQ(shared.length(), 4);
  EXPECT_TRUE(torch::equal(shared.values(), torch::arange(3, 7)));
  EXPECT_EQ(shared.coordinates().sizes(), (std::vector<int64_t>{4, 1}));
  auto grid = Positions::range(0, 5, 2, torch::kCPU);  // every axis counts the token index
  EXPECT_EQ(grid.values().sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_FALSE(grid.batched());
  EXPECT_TRUE(torch::equal(grid.values().select(1, 1), torch::arange(5)));
  Positions rows(torch::zeros({3, 5, 2}, torch::kLong), 2);
  EXPECT_TRUE(rows.batched());
  EXPECT_EQ(rows.length(), 5);
  EXPECT_NE(error_of([] {
              Positions(torch::zeros({3, 5, 4}, torch::kLong), 2);
            }).find("expected 2 coordinates"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Positions(torch::zeros({2, 3, 4, 5}, torch::kLong), 2);
            }).find("(T, N) or (B, T, N)"),
            std::string::npos);
}

TEST(Positions, RowSelectionAndJoining) {
  auto shared = Positions::range(0, 3, 1, torch::kCPU);
  EXPECT_TRUE(shared.index_select(torch::tensor({0, 0, 1})).values().is_same(shared.values()));  // shared stays
  Positions rows(torch::tensor({{0, 1}, {5, 6}}));
  EXPECT_TRUE(torch::equal(rows.index_select(torch::tensor({1, 1})).values(), torch::tensor({{5, 6}, {5, 6}})));
  // caches grow along time: shared + shared stays shared, a shared part joins batched rows
  EXPECT_TRUE(torch::equal(Positions().cat(shared).values(), shared.values()));
  EXPECT_TRUE(torch::equal(shared.cat(Positions::range(3, 1, 1, torch::kCPU)).values(), torch::arange(4)));
  auto joined = shared.cat(Positions(torch::tensor({{3}, {9}})));
  EXPECT_TRUE(torch::equal(joined.values(), torch::tensor({{0, 1, 2, 3}, {0, 1, 2, 9}})));
}

TEST(Positions, DerivedTablesAreMadeOncePerPositionsAndDtype) {
  auto p = Positions::range(0, 4, 1, torch::kCPU);
  int made = 0;
  auto make = [&] {
    ++made;
    return std::vector<torch::Tensor>{p.values() * 2};
  };
  const int owner = 0;
  auto copy = p;  // copies share what was derived
  p.derived(&owner, torch::kFloat, make);
  copy.derived(&owner, torch::kFloat, make);
  EXPECT_EQ(made, 1);
  p.derived(&owner, torch::kDouble, make);  // another dtype, another table
  const int other = 0;
  p.derived(&other, torch::kFloat, make);  // another encoder, another table
  EXPECT_EQ(made, 3);
  Positions::range(0, 4, 1, torch::kCPU).derived(&owner, torch::kFloat, make);  // equal values, new positions
  EXPECT_EQ(made, 4);
}
