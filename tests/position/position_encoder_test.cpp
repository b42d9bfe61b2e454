// Position encoders: formulas, the properties the papers rely on, golden T5 buckets.
#include "../test_util.h"
#include "ropelab/position/encoders.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::max_diff;

namespace {

class Position : public ropelab::testing::Seeded {};

torch::Tensor dot_after_rotation(RotaryEncoder& rotary, const torch::Tensor& q, const torch::Tensor& k,
                                 const Positions& m, const Positions& n) {
  // q, k: (1, 1, 1, Dh); m, n: positions of one token each
  return (rotary.rotate(q, m) * rotary.rotate(k, n)).sum();
}

}  // namespace

TEST_F(Position, SinusoidMatchesThePaperFormula) {
  SinusoidalEncoder enc(PositionOptions(), PositionGeometry{16, 2, false});
  auto pe = enc.table(torch::arange(50));
  for (double base : {10000.0, 100.0}) {  // model.position.base changes the frequency ladder
    SinusoidalEncoder with_base(PositionOptions().base(base), PositionGeometry{16, 2, false});
    auto table = with_base.table(torch::arange(50));
    for (int64_t pos : {0, 1, 7, 49})
      for (int64_t i = 0; i < 8; ++i) {
        const double angle = static_cast<double>(pos) / std::pow(base, 2.0 * i / 16.0);
        EXPECT_NEAR(table[pos][2 * i].item<double>(), std::sin(angle), 1e-5) << "base " << base;
        EXPECT_NEAR(table[pos][2 * i + 1].item<double>(), std::cos(angle), 1e-5) << "base " << base;
      }
  }
  SinusoidalEncoder concat(PositionOptions().sinusoid_layout(SinusoidLayout::concat), PositionGeometry{16, 2, false});
  auto pc = concat.table(torch::arange(50));
  EXPECT_LT(max_diff(pc.narrow(1, 0, 8), pe.index({torch::indexing::Slice(), torch::arange(0, 16, 2)})), 1e-6);
  EXPECT_LT(max_diff(pc.narrow(1, 8, 8), pe.index({torch::indexing::Slice(), torch::arange(1, 16, 2)})), 1e-6);
}

// Vaswani et al. 3.5: PE(pos + k) is a linear function of PE(pos), the same for every pos.
TEST_F(Position, SinusoidShiftIsOneLinearMapForAllPositions) {
  SinusoidalEncoder enc(PositionOptions(), PositionGeometry{16, 2, false});
  const int64_t shift = 5;
  auto base = enc.table(torch::arange(0, 40)).to(torch::kDouble);  // (40, D)
  auto shifted = enc.table(torch::arange(shift, 40 + shift)).to(torch::kDouble);
  // M_k depends on k alone: per frequency w_i, (sin w(p+k), cos w(p+k)) is the 2x2
  // rotation [[cos wk, sin wk], [-sin wk, cos wk]] of (sin wp, cos wp).
  auto M = torch::zeros({16, 16}, torch::kDouble);
  for (int64_t i = 0; i < 8; ++i) {
    const double wk = static_cast<double>(shift) / std::pow(10000.0, 2.0 * i / 16.0);
    M[2 * i][2 * i] = std::cos(wk), M[2 * i][2 * i + 1] = std::sin(wk);
    M[2 * i + 1][2 * i] = -std::sin(wk), M[2 * i + 1][2 * i + 1] = std::cos(wk);
  }
  EXPECT_LT(max_diff(torch::matmul(base, M.t()), shifted), 1e-4);
}

TEST_F(Position, RotaryLogitDependsOnlyOnRelativePosition) {
  for (auto layout : {RotaryLayout::half, RotaryLayout::interleaved}) {
    for (double fraction : {1.0, 0.5}) {
      RotaryEncoder rotary(PositionOptions().layout(layout).fraction(fraction), PositionGeometry{64, 4, false}, 1);
      auto q = torch::randn({1, 1, 1, 16}, torch::kDouble);
      auto k = torch::randn({1, 1, 1, 16}, torch::kDouble);
      rotary.to(torch::kDouble);
      auto at = [](int64_t p) { return torch::tensor({p}); };
      auto reference = dot_after_rotation(rotary, q, k, at(3), at(1));
      for (int64_t m : {2, 10, 100, 1000})
        EXPECT_NEAR(dot_after_rotation(rotary, q, k, at(m + 2), at(m)).item<double>(), reference.item<double>(), 1e-9);
      // and it does depend on the offset
      EXPECT_GT(std::abs(dot_after_rotation(rotary, q, k, at(7), at(1)).item<double>() - reference.item<double>()),
                1e-6);
    }
  }
}

TEST_F(Position, RotaryPreservesNormsAndPassesUnrotatedDimsThrough) {
  RotaryEncoder rotary(PositionOptions().fraction(0.5), PositionGeometry{64, 4, false}, 1);
  auto x = torch::randn({2, 4, 9, 16});
  auto y = rotary.rotate(x, torch::arange(9));
  EXPECT_LT(max_diff(x.norm(2, -1), y.norm(2, -1)), 1e-4);
  EXPECT_LT(max_diff(x.narrow(-1, 8, 8), y.narrow(-1, 8, 8)), 0.0 + 1e-12);
  EXPECT_LT(max_diff(x.select(2, 0), y.select(2, 0)), 1e-6);  // position 0: the identity
}

// half and interleaved pair different dimensions: one fixed permutation maps one onto the other.
TEST_F(Position, RotaryLayoutsAreOnePermutationApart) {
  const int64_t dh = 16;
  RotaryEncoder half(PositionOptions().layout(RotaryLayout::half), PositionGeometry{dh * 2, 2, false}, 1);
  RotaryEncoder inter(PositionOptions().layout(RotaryLayout::interleaved), PositionGeometry{dh * 2, 2, false}, 1);
  // interleaved index 2i <-> half index i, 2i+1 <-> i + Dh/2
  std::vector<int64_t> perm(dh);
  for (int64_t i = 0; i < dh / 2; ++i) perm[2 * i] = i, perm[2 * i + 1] = i + dh / 2;
  auto p = torch::tensor(perm);
  auto x = torch::randn({1, 2, 6, dh});
  auto positions = torch::arange(6);
  auto via_half = half.rotate(x, positions).index_select(-1, p);
  auto via_inter = inter.rotate(x.index_select(-1, p), positions);
  EXPECT_LT(max_diff(via_half, via_inter), 1e-5);
}

TEST_F(Position, AxialRotaryLogitDependsOnlyOnPerAxisDifferences) {
  RotaryEncoder rotary(PositionOptions(), PositionGeometry{64, 4, false}, 2);
  rotary.to(torch::kDouble);
  auto q = torch::randn({1, 1, 1, 16}, torch::kDouble);
  auto k = torch::randn({1, 1, 1, 16}, torch::kDouble);
  auto at = [](int64_t row, int64_t col) { return Positions(torch::tensor({{row, col}}), 2); };
  auto reference = dot_after_rotation(rotary, q, k, at(3, 5), at(1, 2)).item<double>();  // (2, 3) apart
  EXPECT_NEAR(dot_after_rotation(rotary, q, k, at(10, 20), at(8, 17)).item<double>(), reference, 1e-9);
  EXPECT_NEAR(dot_after_rotation(rotary, q, k, at(42, 3), at(40, 0)).item<double>(), reference, 1e-9);
  // same flattened distance, different per-axis differences: a different logit
  EXPECT_GT(std::abs(dot_after_rotation(rotary, q, k, at(3, 5), at(2, 1)).item<double>() - reference), 1e-6);
}

// p-RoPE (Barbero et al. 2025): with unrotated u, the slowest round(u x r/2) pairs keep
// angle 0 at every position, so their dimensions pass through; the other pairs turn as in
// plain rotary, and the logit still depends on the offset alone.
TEST_F(Position, PRopeLeavesTheSlowestPairsUnrotated) {
  RotaryEncoder plain(PositionOptions(), PositionGeometry{64, 4, false}, 1);
  for (const double unrotated : {0.25, 0.5, 0.75}) {
    SCOPED_TRACE(unrotated);
    RotaryEncoder p_rope(PositionOptions().unrotated(unrotated), PositionGeometry{64, 4, false}, 1);
    const auto positions = Positions(torch::arange(50));
    const auto angles = p_rope.angles(positions), reference = plain.angles(positions);  // (50, 8)
    const auto still = static_cast<int64_t>(std::llround(unrotated * 8));
    EXPECT_EQ(angles.narrow(1, 8 - still, still).abs().max().item<double>(), 0.0);
    EXPECT_LT(max_diff(angles.narrow(1, 0, 8 - still), reference.narrow(1, 0, 8 - still)), 1e-6);
    // half layout: pair i is dimensions i and i + 8; the slowest pairs' dimensions pass through
    auto x = torch::randn({1, 1, 50, 16});
    const auto y = p_rope.rotate(x, positions);
    EXPECT_LT(max_diff(y.narrow(-1, 8 - still, still), x.narrow(-1, 8 - still, still)), 1e-12);
    EXPECT_LT(max_diff(y.narrow(-1, 16 - still, still), x.narrow(-1, 16 - still, still)), 1e-12);
    p_rope.to(torch::kDouble);
    auto q = torch::randn({1, 1, 1, 16}, torch::kDouble), k = torch::randn({1, 1, 1, 16}, torch::kDouble);
    auto at = [](int64_t p) { return Positions(torch::tensor({p})); };
    const auto ref = dot_after_rotation(p_rope, q, k, at(3), at(1)).item<double>();
    EXPECT_NEAR(dot_after_rotation(p_rope, q, k, at(503), at(501)).item<double>(), ref, 1e-9);
  }
  EXPECT_NE(error_of([] {
              RotaryEncoder(PositionOptions().unrotated(1.0), PositionGeometry{64, 4, false}, 1);
            }).find("unrotated must be in [0, 1)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              RotaryEncoder(PositionOptions().unrotated(0.3), PositionGeometry{64, 4, true}, 1, true);
            }).find("unrotated applies to rotary, not xPos"),
            std::string::npos);
}

TEST_F(Position, RotaryRejectsDimensionsThatDoNotSplit) {
  // Dh = 16, fraction 0.25 -> 4 rotated dims: fine for 1 or 2 axes, not 3
  EXPECT_EQ(error_of([] { RotaryEncoder(PositionOptions().fraction(0.25), PositionGeometry{32, 2, false}, 2); }), "");
  auto message = error_of([] { RotaryEncoder(PositionOptions(), PositionGeometry{32, 2, false}, 3); });
  EXPECT_NE(message.find("must be a positive multiple of 2 x axes = 6"), std::string::npos) << message;
  message = error_of([] { RotaryEncoder(PositionOptions(), PositionGeometry{30, 2, false}, 1); });
  EXPECT_NE(message.find("(15 = fraction 1 x head_dim 15)"), std::string::npos) << message;
}

// Golden values: tests/golden/t5_buckets.py, an independent Python implementation.
TEST_F(Position, T5BucketsMatchGoldenValues) {
  const std::vector<int64_t> relative = {0,   1,  -1,  3,  -3,  7,   -7,   8,   -8,   15,   -15,  16,
                                         -16, 20, -20, 40, -40, 127, -127, 128, -128, 1000, -1000};
  const std::vector<int64_t> bidirectional = {0,  17, 1,  19, 3,  23, 7,  24, 8,  25, 9, 26,
                                              10, 26, 10, 28, 12, 31, 15, 31, 15, 31, 15};
  const std::vector<int64_t> causal = {0, 0, 1, 0, 3, 0, 7, 0, 8, 0, 15, 0, 16, 0, 17, 0, 23, 0, 31, 0, 31, 0, 31};
  auto r = torch::tensor(relative);
  auto b = t5_relative_bucket(r, true, 32, 128);
  auto c = t5_relative_bucket(r, false, 32, 128);
  for (size_t i = 0; i < relative.size(); ++i) {
    EXPECT_EQ(b[static_cast<int64_t>(i)].item<int64_t>(), bidirectional[i]) << "relative " << relative[i];
    EXPECT_EQ(c[static_cast<int64_t>(i)].item<int64_t>(), causal[i]) << "relative " << relative[i];
  }
}

TEST_F(Position, T5BiasShapeAndOffsets) {
  T5BiasEncoder enc(PositionOptions().type(PositionType::t5_bias), PositionGeometry{16, 4, true});
  auto full = enc.logit_bias(torch::arange(6), torch::arange(6));
  EXPECT_EQ(full.sizes(), (std::vector<int64_t>{1, 4, 6, 6}));
  // the last query alone at offset 5 against all 6 keys: the same row as the full matrix
  auto last = enc.logit_bias(torch::arange(5, 6), torch::arange(6));
  EXPECT_LT(max_diff(last, full.narrow(2, 5, 1)), 1e-7);
}

TEST_F(Position, LearnedRejectsPositionsBeyondItsTable) {
  LearnedEncoder enc(PositionOptions().max_len(8), PositionGeometry{16, 2, false});
  auto message = error_of([&] { enc.embed(torch::zeros({1, 9, 16}), torch::arange(9)); });
  EXPECT_NE(message.find("position 8 is beyond the learned table of 8 positions"), std::string::npos) << message;
}

// The learned table starts N(0, learned_init_std^2), by default 0.02 as GPT-2 and BERT:
// measured on 512 x 64 draws (the standard deviation's sampling error is about 0.4%).
TEST_F(Position, LearnedTableStartsAtItsScale) {
  EXPECT_DOUBLE_EQ(PositionOptions().learned_init_std(), 0.02);
  for (const double asked : {1.0, 0.02}) {
    SCOPED_TRACE(asked);
    LearnedEncoder enc(PositionOptions().max_len(512).learned_init_std(asked), PositionGeometry{64, 4, true});
    const auto table = enc.named_parameters()["table.weight"];
    ASSERT_EQ(table.numel(), 512 * 64);
    EXPECT_NEAR(table.std().item<double>(), asked, 0.03 * asked);
    EXPECT_NEAR(table.mean().item<double>(), 0.0, 0.05 * asked);
  }
}

// xPos's scales against tests/golden/length_golden.json (Sun et al. 2022's formula, written
// independently in tests/golden/length_golden.py).
TEST_F(Position, XposScalesFollowThePaper) {
  const auto& x = ropelab::testing::golden("length_golden.json").at("xpos");
  const auto r = x.at("rotary_dim").get<int64_t>();
  RotaryEncoder xpos(PositionOptions().type(PositionType::xpos).scale_base(x.at("scale_base").get<double>()),
                     PositionGeometry{r, 1, true}, 1, true);
  auto positions = Positions(torch::tensor(x.at("positions").get<std::vector<int64_t>>()));
  auto up = xpos.xpos_scale(positions, 1.0).to(torch::kDouble),
       down = xpos.xpos_scale(positions, -1.0).to(torch::kDouble);
  for (size_t p = 0; p < x.at("positions").size(); ++p) {
    auto q = torch::tensor(x.at("query_scale")[p].get<std::vector<double>>(), torch::kDouble);
    auto k = torch::tensor(x.at("key_scale")[p].get<std::vector<double>>(), torch::kDouble);
    EXPECT_LT(max_diff(up[static_cast<int64_t>(p)] / q, torch::ones_like(q)), 1e-5) << "position " << p;
    EXPECT_LT(max_diff(down[static_cast<int64_t>(p)] / k, torch::ones_like(k)), 1e-5) << "position " << p;
  }
}

// xPos keeps rotary's relative property: the logit of a query at m and a key at n depends
// on m - n alone (the decay zeta^((m - n) / scale_base) included), and it decays.
TEST_F(Position, XposLogitDependsOnlyOnRelativePositionAndDecays) {
  RotaryEncoder xpos(PositionOptions().type(PositionType::xpos).scale_base(16), PositionGeometry{16, 1, true}, 1, true);
  auto q = torch::randn({1, 1, 1, 16}, torch::kDouble), k = torch::randn({1, 1, 1, 16}, torch::kDouble);
  xpos.to(torch::kDouble);
  auto logit = [&](int64_t m, int64_t n) {
    auto qm = xpos.rotate_pair(q, q, Positions(torch::tensor({m}))).first;
    auto kn = xpos.rotate_pair(k, k, Positions(torch::tensor({n}))).second;
    return (qm * kn).sum().item<double>();
  };
  EXPECT_NEAR(logit(7, 3), logit(107, 103), 1e-4 * std::abs(logit(7, 3)) + 1e-6);
  // with the rotation aligned (same vector, distance a multiple of nothing): the scale alone
  auto same = [&](int64_t m, int64_t n) {
    auto qm = xpos.rotate_pair(q, q, Positions(torch::tensor({m}))).first;
    auto qn = xpos.rotate_pair(q, q, Positions(torch::tensor({n}))).second;
    return (qm * qn).sum().item<double>();
  };
  EXPECT_NEAR(same(5, 5), (q * q).sum().item<double>(), 1e-6);  // distance 0: no decay, no rotation
  auto message = error_of([&] { xpos.rotate(q, Positions(torch::tensor({0}))); });
  EXPECT_NE(message.find("rotate_pair"), std::string::npos) << message;
  message = error_of([] {
    make_position_encoder(PositionOptions().type(PositionType::xpos), PositionGeometry{16, 1, false});
  });
  EXPECT_NE(message.find("xPos is defined for causal attention only"), std::string::npos) << message;
}
