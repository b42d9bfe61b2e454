// Logit-bias encoders: ALiBi's slopes against tests/golden/length_golden.json (from Press et
// al. 2022's recipe, tests/golden/length_golden.py), each bias against its paper's formula,
// translation invariance, the relative table against the dense bias, T5 through the table
// and its initial scale.
#include "../test_util.h"
#include "ropelab/attention/backend.h"
#include "ropelab/position/encoders.h"
#include "ropelab/position/position_traits.h"

using namespace ropelab;
using ropelab::testing::golden;
using ropelab::testing::max_diff;

namespace {

class BiasEncoders : public ropelab::testing::Seeded {};

PositionEncoder make(PositionType type, bool causal, int64_t heads = 4) {
  return make_position_encoder(PositionOptions().type(type).num_buckets(8).max_distance(16),
                               PositionGeometry{8 * heads, heads, causal});
}

/// The encoders whose bias depends on key_pos - query_pos alone.
const std::vector<PositionType> kRelative =
    position_types([](const PositionTraits& t) { return t.kind == PositionKind::bias && t.relative; });

}  // namespace

TEST_F(BiasEncoders, AlibiSlopesFollowThePaper) {
  for (const auto& [heads, expected] : golden("length_golden.json").at("alibi_slopes").items()) {
    const auto slopes = alibi_slopes(std::stoll(heads));
    const auto want = expected.get<std::vector<double>>();
    ASSERT_EQ(slopes.size(), want.size()) << heads << " heads";
    for (size_t h = 0; h < want.size(); ++h) EXPECT_NEAR(slopes[h], want[h], 1e-12) << heads << " heads, head " << h;
  }
}

// ALiBi: -m_h (i - j) for the keys a causal query sees; symmetric -m_h |i - j| otherwise.
TEST_F(BiasEncoders, AlibiIsTheSlopeTimesTheDistance) {
  for (bool causal : {true, false}) {
    auto alibi = make(PositionType::alibi, causal, 8);
    auto bias = alibi->logit_bias(torch::arange(6), torch::arange(6));  // (1, 8, 6, 6)
    ASSERT_EQ(bias.sizes(), (std::vector<int64_t>{1, 8, 6, 6}));
    for (int64_t h : {0, 7})
      for (int64_t i : {0, 3, 5})
        for (int64_t j = 0; j < 6; ++j)
          EXPECT_NEAR(bias[0][h][i][j].item<double>(), -std::pow(2.0, -(h + 1.0)) * std::abs(i - j), 1e-6);
  }
}

// Kerple (log): -r1 log(1 + r2 |i - j|) with the learned r1, r2 of each head.
// T5's table starts N(0, d_model^-0.5) as its reference implementations (Raffel et al.
// 2020) initialise it, or N(0, t5_init_std): measured on 1024 x 16 draws (the standard
// deviation's sampling error is about 0.6%).
TEST_F(BiasEncoders, T5TableStartsAtTheReferenceScale) {
  for (const double asked : {0.0, 1.0, 0.3}) {
    SCOPED_TRACE(asked);
    const int64_t d_model = 256;
    auto encoder = make_position_encoder(
        PositionOptions().type(PositionType::t5_bias).num_buckets(1024).max_distance(4096).t5_init_std(asked),
        PositionGeometry{d_model, 16, true});
    const auto table = encoder->named_parameters()["table.weight"];
    ASSERT_EQ(table.numel(), 1024 * 16);
    const double expected = asked > 0 ? asked : 1.0 / std::sqrt(static_cast<double>(d_model));
    EXPECT_NEAR(table.std().item<double>(), expected, 0.03 * expected);
    EXPECT_NEAR(table.mean().item<double>(), 0.0, 0.05 * expected);
  }
}

TEST_F(BiasEncoders, KerpleIsTheLogarithmicKernel) {
  auto encoder = make(PositionType::kerple, true);
  auto& kerple = dynamic_cast<KerpleEncoder&>(*encoder);
  auto bias = kerple.logit_bias(torch::arange(5), torch::arange(5));
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const double r1 = kerple.r1[h].item<double>(), r2 = kerple.r2[h].item<double>();
        EXPECT_NEAR(bias[0][h][i][j].item<double>(), -r1 * std::log(1.0 + r2 * static_cast<double>(i - j)), 1e-5);
      }
}

// Kerple (power): -r1 |i - j|^r2 with r1 >= 0.01 and r2 in [0.01, 2]; the gradient at
// distance 0 is finite (d^r2 log d is taken as 0 there). kerple_bound `reset` (default)
// writes values past a bound back to it, as the authors' code, and keeps their gradient;
// `clamp` leaves the values and has no gradient past a bound.
TEST_F(BiasEncoders, KerplePowerIsThePowerKernel) {
  for (const auto bound : {KerpleBound::reset, KerpleBound::clamp})
    for (bool causal : {true, false}) {
      SCOPED_TRACE(to_string(bound));
      auto encoder = make_position_encoder(PositionOptions().type(PositionType::kerple_power).kerple_bound(bound),
                                           PositionGeometry{32, 4, causal});
      auto& kerple = dynamic_cast<KerpleEncoder&>(*encoder);
      ASSERT_EQ(kerple.form(), KerpleEncoder::Form::power);
      {
        torch::NoGradGuard no_grad;
        kerple.r1.copy_(torch::tensor({0.7, 0.001, 1.3, 0.2}));
        kerple.r2.copy_(torch::tensor({1.5, 0.8, 2.6, 0.0}));
      }
      const double r1[] = {0.7, 0.01, 1.3, 0.2}, r2[] = {1.5, 0.8, 2.0, 0.01};
      auto bias = kerple.logit_bias(torch::arange(6), torch::arange(6));  // (1, 4, 6, 6)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 6; ++i)
          for (int64_t j = 0; j < 6; ++j)
            EXPECT_NEAR(bias[0][h][i][j].item<double>(), -r1[h] * std::pow(std::abs(i - j), r2[h]), 1e-5)
                << h << " " << i << " " << j;
      bias.sum().backward();
      EXPECT_TRUE(torch::isfinite(kerple.r1.grad()).all().item<bool>());
      EXPECT_TRUE(torch::isfinite(kerple.r2.grad()).all().item<bool>());
      const bool reset = bound == KerpleBound::reset;
      // The stored values: reset inside the bounds, or left where they were.
      EXPECT_NEAR(kerple.r1[1].item<double>(), reset ? 0.01 : 0.001, 1e-7);
      EXPECT_NEAR(kerple.r2[2].item<double>(), reset ? 2.0 : 2.6, 1e-6);
      // The gradient of the parameters past a bound: the kernel's own, or none.
      EXPECT_EQ(kerple.r1.grad()[1].item<double>() != 0.0, reset);
      EXPECT_EQ(kerple.r2.grad()[2].item<double>() != 0.0, reset);
      EXPECT_EQ(kerple.r2.grad()[3].item<double>() != 0.0, reset);
      EXPECT_NE(kerple.r2.grad()[0].item<double>(), 0.0);  // inside the bounds: always
    }
}

// FIRE: f(psi(i - j) / psi(max(L, i))) with psi(x) = log(c x + 1), written out by hand
// with the encoder's own MLP weights.
TEST_F(BiasEncoders, FireIsTheMlpOfTheNormalisedDistance) {
  auto encoder = make_position_encoder(PositionOptions().type(PositionType::fire).fire_hidden(5).fire_threshold(3),
                                       PositionGeometry{16, 2, true});
  auto& fire = dynamic_cast<FireEncoder&>(*encoder);
  const double c = fire.c.item<double>(), L = 3.0 * fire.threshold_scale.item<double>();
  auto psi = [&](double x) { return std::log(c * x + 1.0); };
  auto bias = fire.logit_bias(torch::arange(7), torch::arange(7));  // (1, 2, 7, 7)
  auto w1 = fire.hidden->weight.to(torch::kDouble), b1 = fire.hidden->bias.to(torch::kDouble);
  auto w2 = fire.out->weight.to(torch::kDouble), b2 = fire.out->bias.to(torch::kDouble);
  for (int64_t i : {0, 2, 6})
    for (int64_t j = 0; j <= i; ++j) {
      const double x = psi(static_cast<double>(i - j)) / (psi(std::max(L, static_cast<double>(i))) + 1e-6);
      auto expected = torch::matmul(w2, torch::relu(w1.squeeze(1) * x + b1)) + b2;  // (2)
      for (int64_t h = 0; h < 2; ++h)
        EXPECT_NEAR(bias[0][h][i][j].item<double>(), expected[h].item<double>(), 1e-5) << i << "," << j;
    }
}

// Without gradient FIRE writes its bias in blocks of query rows (long evaluation contexts);
// the blocks must give the bias computed in one piece, for shared and batched positions and
// for queries that are the last rows of the keys (Tq < Tk).
TEST_F(BiasEncoders, FireRowBlocksEqualTheWholeBias) {
  auto encoder = make_position_encoder(PositionOptions().type(PositionType::fire).fire_hidden(6).fire_threshold(50),
                                       PositionGeometry{24, 3, true});
  const auto keys = torch::arange(300);
  for (const auto& queries : {torch::arange(300), torch::arange(290, 300), torch::stack({keys, keys + 7})}) {
    const auto& k = queries.dim() == 2 ? torch::stack({keys, keys + 7}) : keys;
    auto whole = encoder->logit_bias(queries, k);
    torch::NoGradGuard no_grad;
    auto blocks = encoder->logit_bias(queries, k);
    ASSERT_EQ(blocks.sizes(), whole.sizes());
    EXPECT_TRUE(blocks.is_contiguous());
    EXPECT_LT(max_diff(blocks, whole), 1e-6) << queries.sizes();
  }
}

// The bias of a relative encoder depends on i - j alone: shifting every position leaves it.
TEST_F(BiasEncoders, RelativeBiasesAreTranslationInvariant) {
  for (auto type : kRelative)
    for (bool causal : {true, false}) {
      SCOPED_TRACE(to_string(type) + (causal ? " causal" : " bidirectional"));
      auto encoder = make(type, causal);
      auto at = encoder->logit_bias(torch::arange(6), torch::arange(6));
      auto shifted = encoder->logit_bias(torch::arange(37, 43), torch::arange(37, 43));
      EXPECT_LT(max_diff(at, shifted), 1e-6);
      EXPECT_GT(at.std().item<double>(), 0.0);  // not a constant
    }
}

// The (H, Tq + Tk - 1) table the stack gives attention expands to the dense bias, also for
// queries aligned with the last keys (incremental decoding: Tq < Tk).
TEST_F(BiasEncoders, RelativeTableExpandsToTheDenseBias) {
  for (auto type : kRelative) {
    SCOPED_TRACE(to_string(type));
    auto encoder = make(type, true);
    for (auto [tq, tk] : {std::pair<int64_t, int64_t>{6, 6}, {1, 9}, {3, 9}}) {
      auto table = relative_bias_table(*encoder, tq, tk, torch::kCPU);
      ASSERT_EQ(table.sizes(), (std::vector<int64_t>{4, tq + tk - 1}));
      auto dense = encoder->logit_bias(torch::arange(tk - tq, tk), torch::arange(tk));
      EXPECT_LT(max_diff(LogitBias::relative_table(table).to_dense(tq, tk), dense), 1e-6) << tq << " x " << tk;
    }
  }
}

// Which encoders bias the logits, and which of those by distance alone.
TEST_F(BiasEncoders, EveryBiasEncoderSaysSo) {
  for (auto type : position_types([](const PositionTraits& t) { return t.kind == PositionKind::bias; })) {
    auto encoder = make(type, true);
    EXPECT_TRUE(encoder->has_logit_bias()) << to_string(type);
    EXPECT_EQ(encoder->bias_is_relative(), position_traits(type).relative) << to_string(type);
    EXPECT_FALSE(encoder->rotates()) << to_string(type);
  }
}
