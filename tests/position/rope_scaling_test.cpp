// RoPE scaling against tests/golden/length_golden.json, written from the papers' formulas
// and YaRN's reference ramp by tests/golden/length_golden.py (Chen et al. 2023; Peng et al.
// 2023), and through the rotary encoder: angles, the YaRN temperature in the tables, dynamic
// NTK's length.
#include "ropelab/position/rope_scaling.h"

#include "../test_util.h"
#include "ropelab/position/encoders.h"

using namespace ropelab;
using ropelab::testing::golden;
using ropelab::testing::max_diff;

namespace {

class RopeScaling : public ropelab::testing::Seeded {};

RopeScalingOptions options_of(const nlohmann::json& c) {
  return RopeScalingOptions()
      .type(parse_rope_scaling_type(c.at("type").get<std::string>()))
      .factor(c.at("factor").get<double>())
      .original_max(c.at("original_max").get<int64_t>())
      .ramp(parse_yarn_ramp(c.at("ramp").get<std::string>()));
}

torch::Tensor tensor_of(const nlohmann::json& values) {
  return torch::tensor(values.get<std::vector<double>>(), torch::kDouble);
}

/// base^(-2i/r) in float, as the encoders keep it.
torch::Tensor ladder(double base, int64_t r) {
  return torch::pow(base, -2.0 * torch::arange(r / 2, torch::kDouble) / static_cast<double>(r)).to(torch::kFloat);
}

}  // namespace

TEST_F(RopeScaling, FrequenciesMatchThePapersFormulas) {
  const auto& cases = golden("length_golden.json").at("rope_scaling");
  ASSERT_GE(cases.size(), 9u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto r = c.at("rotary_dim").get<int64_t>();
    auto f = scale_frequencies(ladder(c.at("base").get<double>(), r), options_of(c), c.at("length").get<int64_t>());
    const auto expected = tensor_of(c.at("inv_freq"));
    EXPECT_LT(max_diff(f.inv_freq.to(torch::kDouble) / expected, torch::ones_like(expected)), 1e-6);
    EXPECT_NEAR(f.position_divisor, c.at("position_divisor").get<double>(), 1e-12);
    EXPECT_NEAR(f.attention_factor, c.at("attention_factor").get<double>(), 1e-12);
    // angle(n, i) = n / divisor * inv_freq[i]
    auto positions = tensor_of(c.at("positions"));
    auto angles = positions.unsqueeze(1) / f.position_divisor * f.inv_freq.to(torch::kDouble);
    auto golden_angles = torch::stack(
        [&] {
          std::vector<torch::Tensor> rows;
          for (const auto& row : c.at("angles")) rows.push_back(tensor_of(row));
          return rows;
        }(),
        0);
    EXPECT_LT(max_diff(angles, golden_angles), 1e-6 * std::max(1.0, golden_angles.abs().max().item<double>()));
  }
}

// The encoder applies the scaling to its angles; the checkpointed ladder stays unscaled.
TEST_F(RopeScaling, TheRotaryEncoderScalesItsAnglesNotItsBuffer) {
  const auto& cases = golden("length_golden.json").at("rope_scaling");
  for (const auto& c : cases) {
    const auto type = c.at("type").get<std::string>();
    if (type == "dynamic_ntk") continue;  // its length comes from the positions: below
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto r = c.at("rotary_dim").get<int64_t>();
    RotaryEncoder rotary(PositionOptions().base(c.at("base").get<double>()).scaling(options_of(c)),
                         PositionGeometry{r, 1, true}, 1);
    auto positions = torch::tensor(c.at("positions").get<std::vector<int64_t>>());
    auto angles = rotary.angles(Positions(positions)).to(torch::kDouble);
    std::vector<torch::Tensor> rows;
    for (const auto& row : c.at("angles")) rows.push_back(tensor_of(row));
    auto expected = torch::stack(rows, 0);
    EXPECT_LT(max_diff(angles, expected), 2e-6 * std::max(1.0, expected.abs().max().item<double>()));
    EXPECT_TRUE(torch::equal(rotary.named_buffers()["inv_freq"], ladder(c.at("base").get<double>(), r)));
  }
}

// Dynamic NTK per token (the default): the token at n takes the NTK base of the length it
// has seen, n + 1, against tests/golden/length_golden.py; the same positions give the same
// angles in any call (a window's first tokens, the later steps of a decode), so the
// encoder does not follow the call's length.
TEST_F(RopeScaling, DynamicNtkPerTokenFollowsTheLengthSeenAtEachToken) {
  const auto& cases = golden("length_golden.json").at("dynamic_ntk_per_token");
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    const auto r = c.at("rotary_dim").get<int64_t>();
    SCOPED_TRACE(r);
    auto scaling = RopeScalingOptions()
                       .type(RopeScalingType::dynamic_ntk)
                       .original_max(c.at("original_max").get<int64_t>())
                       .dynamic(DynamicLength::token);
    RotaryEncoder rotary(PositionOptions().base(c.at("base").get<double>()).scaling(scaling),
                         PositionGeometry{r, 1, true}, 1);
    EXPECT_FALSE(rotary.follows_length());
    const auto positions = c.at("positions").get<std::vector<int64_t>>();
    std::vector<torch::Tensor> rows;
    for (const auto& row : c.at("angles")) rows.push_back(tensor_of(row));
    const auto expected = torch::stack(rows, 0);
    auto angles = rotary.angles(Positions(torch::tensor(positions))).to(torch::kDouble);
    EXPECT_LT(max_diff(angles, expected), 2e-6 * std::max(1.0, expected.abs().max().item<double>()));
    // a position's angles do not depend on the others in the call (batched rows alike)
    auto alone = rotary.angles(Positions(torch::tensor({positions.back()}))).to(torch::kDouble);
    EXPECT_TRUE(torch::equal(alone[0], angles[-1]));
  }
}

// Dynamic NTK per call (scaling.dynamic: call) scales by the call's length (largest
// position + 1): below the training context it is plain rotary, at 512 = 4 x 128 it is
// NTK with s = 4.
TEST_F(RopeScaling, DynamicNtkFollowsTheLengthOfTheCall) {
  const auto& cases = golden("length_golden.json").at("rope_scaling");
  for (const auto& c : cases) {
    if (c.at("type").get<std::string>() != "dynamic_ntk") continue;
    const auto length = c.at("length").get<int64_t>();
    SCOPED_TRACE(length);
    RotaryEncoder rotary(PositionOptions().scaling(options_of(c).dynamic(DynamicLength::call)),
                         PositionGeometry{16, 1, true}, 1);
    EXPECT_TRUE(rotary.follows_length());
    auto angles = rotary.angles(Positions(torch::arange(length))).to(torch::kDouble);  // (length, 8)
    auto expected = torch::arange(length, torch::kDouble).unsqueeze(1) * tensor_of(c.at("inv_freq"));
    EXPECT_LT(max_diff(angles, expected), 1e-6 * static_cast<double>(length));
  }
}

// YaRN's temperature multiplies q and k: a rotation keeps the norm, so the rotated vector's
// norm grows by exactly the attention factor, on every dimension (fraction < 1 included).
TEST_F(RopeScaling, YarnTemperatureScalesQueriesAndKeys) {
  for (double fraction : {1.0, 0.5}) {
    auto scaling = RopeScalingOptions().type(RopeScalingType::yarn).factor(8).original_max(128);
    RotaryEncoder rotary(PositionOptions().fraction(fraction).scaling(scaling), PositionGeometry{16, 1, true}, 1);
    auto x = torch::randn({1, 1, 5, 16});
    auto rotated = rotary.rotate(x, Positions(torch::arange(5)));
    const double factor = 0.1 * std::log(8.0) + 1.0;
    EXPECT_LT(max_diff(rotated.norm(2, {-1}), x.norm(2, {-1}) * factor), 1e-4) << "fraction " << fraction;
  }
}

TEST_F(RopeScaling, NamesRoundTripAndUnknownTypesAreErrors) {
  for (auto t : {RopeScalingType::none, RopeScalingType::linear, RopeScalingType::ntk, RopeScalingType::dynamic_ntk,
                 RopeScalingType::yarn})
    EXPECT_EQ(parse_rope_scaling_type(to_string(t)), t);
  EXPECT_EQ(ropelab::testing::error_of([] { parse_rope_scaling_type("longrope"); }),
            "unknown RoPE scaling type 'longrope' (expected none | linear | ntk | dynamic_ntk | yarn)");
}
