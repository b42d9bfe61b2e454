// The YAML values reader that config files and experiment files share: a file's problems,
// values converted as a config's are, unknown keys, each in one line naming the file and key.
#include "ropelab/config/yaml_values.h"

#include "../test_util.h"
#include "ropelab/options/config.h"

using namespace ropelab;
using ropelab::testing::error_of;

namespace {
class YamlValues : public ropelab::testing::TempDir {};
}  // namespace

TEST_F(YamlValues, AFileThatCannotBeReadIsNamedWithItsKind) {
  const auto missing = (dir_ / "missing.yaml").string();
  EXPECT_EQ(error_of([&] { yaml_values::File(missing, "experiment file"); }),
            missing + ": cannot open experiment file");
  const auto broken = write("broken.yaml", "seeds: [1, 2]\ngrid: {a: [1\n");
  EXPECT_EQ(error_of([&] { yaml_values::File(broken, "experiment file"); }).rfind(broken + ":3: YAML syntax error", 0),
            0u);
  const auto list = write("list.yaml", "- a\n- b\n");
  EXPECT_EQ(error_of([&] { yaml_values::File(list, "experiment file"); }),
            list + ": expected a mapping of keys at the top level");
}

TEST_F(YamlValues, ValuesConvertAsAConfigsDoAndNameTheKey) {
  const auto path = write("e.yaml", "seeds: [1, 2]\none: 7\nmixed: [1, 2.5]\ndepths: [0.5, x]\nmap: {a: 1}\n");
  const yaml_values::File file(path, "experiment file");
  const auto& root = file.root();
  EXPECT_EQ(file.values<int64_t>(root["seeds"], "seeds"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(file.values<int64_t>(root["one"], "one"), (std::vector<int64_t>{7}));
  EXPECT_EQ(file.values<double>(root["mixed"], "mixed"), (std::vector<double>{1, 2.5}));
  EXPECT_EQ(error_of([&] { file.values<int64_t>(root["mixed"], "mixed"); }), path + ": mixed: '2.5' is not an integer");
  EXPECT_EQ(error_of([&] { file.values<double>(root["depths"], "depths"); }), path + ": depths: 'x' is not a number");
  EXPECT_EQ(error_of([&] { file.scalars(root["map"], "map"); }), path + ": map must be a value or a list of values");
  EXPECT_EQ(error_of([&] {
              file.expect_keys(root, "", {"seeds", "one"});
            }),
            path + ": unknown key mixed (expected seeds, one)");
}

TEST(YamlValuesClosest, SuggestsOnlyCloseSpellings) {
  EXPECT_EQ(yaml_values::closest("dmodel", {"heads", "d_model", "d_ff"}), "d_model");
  EXPECT_EQ(yaml_values::closest("zzzzzzzz", {"heads", "d_model", "d_ff"}), "");
}
