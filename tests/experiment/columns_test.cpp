// Ablation columns as typed keys: every name the tables use parses to its key and formats
// back to itself; names no key gives are refused; the tables' order sorts lengths by value.
#include "ropelab/experiment/columns.h"

#include <algorithm>

#include "../test_util.h"

using namespace ropelab;
using Measure = ColumnKey::Measure;

TEST(Columns, EveryTableNameRoundTripsThroughItsKey) {
  const std::vector<std::pair<std::string, ColumnKey>> cases{
      {"valid_ppl", {Measure::valid_ppl}},
      {"train_s", {Measure::train_s}},
      {"test_bleu", {Measure::test_bleu}},
      {"test_chrf", {Measure::test_chrf}},
      {"test_ter", {Measure::test_ter}},
      {"test_ppl", {Measure::test_ppl}},
      {"test_ppl@128", {Measure::test_ppl, 128}},
      {"test_ppl@2048/512", {Measure::test_ppl, 2048, 512}},
      {"test_ppl@1024+yarn", {Measure::test_ppl, 1024, 0, "yarn"}},
      {"test_ppl@1024+dynamic_ntk", {Measure::test_ppl, 1024, 0, "dynamic_ntk"}},
      {"test_ppl@1024#w128", {Measure::test_ppl, 1024, 0, "", 128}},
      {"test_ppl@1024#w128s4", {Measure::test_ppl, 1024, 0, "", 128, 4}},
      {"test_ppl@1024/64#w128s4+yarn", {Measure::test_ppl, 1024, 64, "yarn", 128, 4}},
      {"passkey@248", {Measure::passkey, 248}},
      {"passkey@1016#w512", {Measure::passkey, 1016, 0, "", 512}},
      {"passkey@1016#w512s4", {Measure::passkey, 1016, 0, "", 512, 4}},
      {"gain@2048#w512:512-1024", ColumnKey::gain(2048, 512, 512, 1024)},
      {"gain@32768#w512:512-32768", ColumnKey::gain(32768, 512, 512, 32768)},
      {"mqar@1024", ColumnKey::retrieval("mqar", 1024)},
      {"multikey@4096", ColumnKey::retrieval("multikey", 4096)},
  };
  for (const auto& [name, key] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(format_column(key), name);
    const auto parsed = parse_column(name);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_TRUE(*parsed == key);
  }
}

TEST(Columns, NamesNoKeyGivesAreRefused) {
  for (const std::string name : {"",
                                 "bleu",
                                 "test_ppl@",
                                 "test_ppl@0",
                                 "test_ppl@012",
                                 "test_ppl@12x",
                                 "test_ppl@12/",
                                 "test_ppl@12/0",
                                 "test_ppl@12+",
                                 "passkey",
                                 "passkey@5/2",
                                 "passkey@5+yarn",
                                 "passkey@5/2#w8",
                                 "passkey@5#w8+yarn",
                                 "passkey@5#w8s",
                                 "test_bleu@5",
                                 "valid_ppl@128",
                                 "test_ppl_x",
                                 "test_ppl@12#w",
                                 "test_ppl@12#w0",
                                 "test_ppl@12#w8s",
                                 "test_ppl@12#s4",
                                 "gain",
                                 "gain@2048",
                                 "gain@2048#w512",
                                 "gain@2048#w512:512",
                                 "gain@2048#w512:512-",
                                 "gain@2048#w512:512-1024x",
                                 "gain@2048#w512s4:512-1024",
                                 "gain@2048/64#w512:512-1024",
                                 "gain@2048:512-1024",
                                 "mqar",
                                 "mqar@",
                                 "mqar@1024#w8",
                                 "niah@1024"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(parse_column(name).has_value());
  }
}

TEST(Columns, TablesOrderNamesAndLengthsByValue) {
  std::vector<std::string> names{"valid_ppl",   "test_ppl@1024", "passkey@504", "test_ppl@256", "train_s",
                                 "passkey@120", "test_ppl@64",   "test_bleu",   "test_ppl"};
  std::stable_sort(names.begin(), names.end(), column_before);
  EXPECT_EQ(names, (std::vector<std::string>{"passkey@120", "passkey@504", "test_bleu", "test_ppl", "test_ppl@64",
                                             "test_ppl@256", "test_ppl@1024", "train_s", "valid_ppl"}));
  // a context's gain buckets by position, before the next context's
  std::vector<std::string> gains{"gain@4096#w512:512-1024", "gain@2048#w512:512-2048", "gain@2048#w512:1024-2048",
                                 "gain@2048#w512:512-1024"};
  std::stable_sort(gains.begin(), gains.end(), column_before);
  EXPECT_EQ(gains, (std::vector<std::string>{"gain@2048#w512:512-1024", "gain@2048#w512:512-2048",
                                             "gain@2048#w512:1024-2048", "gain@4096#w512:512-1024"}));
  // a retrieval task's lengths by value, task by task
  std::vector<std::string> tasks{"multikey@1024", "mqar@4096", "multikey@512", "mqar@512"};
  std::stable_sort(tasks.begin(), tasks.end(), column_before);
  EXPECT_EQ(tasks, (std::vector<std::string>{"mqar@512", "mqar@4096", "multikey@512", "multikey@1024"}));
}

// How a column was evaluated, for the plots' legends.
TEST(Columns, EvaluatedAsNamesScalingAndWindow) {
  EXPECT_EQ(ColumnKey(Measure::test_ppl, 1024).evaluated_as(), "none");
  EXPECT_EQ(ColumnKey(Measure::test_ppl, 1024, 0, "yarn").evaluated_as(), "yarn");
  EXPECT_EQ(ColumnKey(Measure::test_ppl, 1024, 0, "", 128, 4).evaluated_as(), "w128s4");
  EXPECT_EQ(ColumnKey(Measure::test_ppl, 1024, 0, "yarn", 128).evaluated_as(), "yarn,w128");
}
