// The position registry (position/position_traits.h) against the encoders it describes:
// each row's claims are measured on the encoder its type builds.
#include "ropelab/position/position_traits.h"

#include "../test_util.h"
#include "ropelab/position/position_encoder.h"

namespace ropelab {
namespace {

constexpr int64_t kDim = 32, kHeads = 4;

PositionEncoder make(const PositionTraits& row, bool causal = true, RopeScalingOptions scaling = {}) {
  torch::manual_seed(0);  // trainable encoders start from the same parameters
  auto encoder = make_position_encoder(PositionOptions().type(row.type).max_len(8).scaling(scaling),
                                       PositionGeometry{kDim, kHeads, causal});
  encoder->to(torch::kDouble);
  return encoder;
}

/// `length` positions from `offset`, with as many coordinates as the encoder takes.
Positions positions(const PositionEncoder& encoder, int64_t offset, int64_t length) {
  return Positions::range(offset, length, encoder->axes(), torch::kCPU);
}

/// Every query-key logit of random queries and keys at positions from `offset`, with the
/// encoder's rotation and bias applied.
torch::Tensor logits(const PositionEncoder& encoder, int64_t offset) {
  torch::manual_seed(1);
  const auto q = torch::randn({1, kHeads, 5, kDim / kHeads}, torch::kDouble);
  const auto k = torch::randn({1, kHeads, 5, kDim / kHeads}, torch::kDouble);
  const auto p = positions(encoder, offset, 5);
  const auto [rq, rk] = encoder->rotate_pair(q, k, p);
  auto scores = torch::matmul(rq, rk.transpose(-1, -2));
  if (encoder->has_logit_bias()) scores = scores + encoder->logit_bias(p, p).to(torch::kDouble);
  return scores;
}

TEST(PositionRegistry, HasEveryTypeOnceInOrderWithItsName) {
  const auto& rows = position_registry();
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(rows[i].type), i) << rows[i].name;
    EXPECT_EQ(to_string(rows[i].type), rows[i].name);
    EXPECT_EQ(parse_position_type(rows[i].name), rows[i].type);
    EXPECT_EQ(&position_traits(rows[i].type), &rows[i]);
  }
  EXPECT_EQ(rows.back().type, PositionType::fire);  // the last enum value has the last row
  EXPECT_EQ(position_names(position_types([](const PositionTraits& t) { return t.scalable; })), "rotary and rotary_nd");
}

TEST(PositionRegistry, EachRowSaysWhatItsEncoderDoes) {
  for (const auto& row : position_registry()) {
    SCOPED_TRACE(row.name);
    auto encoder = make(row);
    EXPECT_EQ(encoder->rotates(), row.kind == PositionKind::rotary);
    EXPECT_EQ(encoder->has_logit_bias(), row.kind == PositionKind::bias);
    const auto x = torch::zeros({1, 5, kDim}, torch::kDouble);
    EXPECT_EQ(!encoder->embed(x, positions(encoder, 0, 5)).equal(x), row.kind == PositionKind::additive);
    EXPECT_EQ(!encoder->parameters().empty(), row.trainable);
    EXPECT_EQ(encoder->axes() > 1, row.multi_axis);
    if (row.kind == PositionKind::bias) {
      EXPECT_EQ(encoder->bias_is_relative(), row.relative);
    }
    // relative: the logits do not change when queries and keys move together (positions
    // past FIRE's threshold of 512, where its normaliser follows the query position), up
    // to the fp32 rounding of xPos's scales
    if (row.kind == PositionKind::rotary || row.kind == PositionKind::bias) {
      const auto near = logits(encoder, 1000), far = logits(encoder, 2000);
      EXPECT_EQ(torch::allclose(near, far, 1e-5, 1e-5), row.relative) << (near - far).abs().max().item<double>();
      EXPECT_EQ(!row.relative, row.query_dependent);
    } else {
      EXPECT_FALSE(row.relative || row.query_dependent);
    }
    // scalable: linear RoPE scaling changes the logits of a scalable encoder, and nothing
    // that does not rotate (config validation refuses it for the others: xPos rotates, but
    // with scales of its own that no RoPE scaling method was defined for)
    if (row.kind != PositionKind::none) {
      const auto scaled = make(row, true, RopeScalingOptions().type(RopeScalingType::linear).factor(4));
      const bool changes = !torch::allclose(logits(encoder, 1000), logits(scaled, 1000), 1e-5, 1e-5);
      if (row.scalable || row.kind != PositionKind::rotary) {
        EXPECT_EQ(changes, row.scalable);
      }
    }
    // bounded: positions at max_len (8) and beyond are refused
    bool refused = false;
    try {
      encoder->embed(torch::zeros({1, 9, kDim}, torch::kDouble), positions(encoder, 0, 9));
    } catch (const c10::Error&) {
      refused = true;
    }
    EXPECT_EQ(refused, row.bounded);
    // causal only: no encoder for a bidirectional stack
    bool built = true;
    try {
      make(row, false);
    } catch (const c10::Error&) {
      built = false;
    }
    EXPECT_EQ(built, !row.causal_only);
    EXPECT_TRUE(!row.cross_attention || row.kind == PositionKind::rotary);
  }
}

// A forget gate alone gives positions through the logits (FoX); beside an encoder, the
// encoder's kind stands.
TEST(PositionRegistry, ForgetGateAloneIsALogitBias) {
  EXPECT_EQ(position_kind(PositionOptions().type(PositionType::none)), PositionKind::none);
  EXPECT_EQ(position_kind(PositionOptions().type(PositionType::none).forget_gate(true)), PositionKind::bias);
  EXPECT_EQ(position_kind(PositionOptions().type(PositionType::rotary).forget_gate(true)), PositionKind::rotary);
  EXPECT_EQ(position_kind(PositionOptions().type(PositionType::alibi)), PositionKind::bias);
}

}  // namespace
}  // namespace ropelab
