// FAVOR+ attention: convergence to softmax, the chunked causal evaluation against a direct
// quadratic one, no future leakage, padding, incremental decoding, gradients, redraws.
#include "ropelab/attention/performer.h"

#include "../test_util.h"
#include "ropelab/attention/softmax.h"
#include "ropelab/config/config.h"
#include "ropelab/run/checkpoint.h"

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

class Performer : public ropelab::testing::TempDir {};

const auto kDouble = torch::TensorOptions().dtype(torch::kDouble);

AttentionOptions performer_options(int64_t m, int64_t chunk = 128) {
  return AttentionOptions().type(AttentionType::performer).num_features(m).chunk_size(chunk);
}

/// Inputs with moderate logits (|q.k|/sqrt(d) around 1), where the estimator is useful.
AttentionInputs inputs(int64_t B, int64_t H, int64_t T, int64_t D, bool causal, double scale = 0.6) {
  return {torch::randn({B, H, T, D}, kDouble) * scale,
          torch::randn({B, H, T, D}, kDouble) * scale,
          torch::randn({B, H, T, D}, kDouble),
          torch::Tensor(),
          torch::Tensor(),
          causal};
}

/// Mean absolute error against exact softmax attention, averaged over feature draws.
double error_vs_softmax(int64_t m, bool causal) {
  SoftmaxAttention exact(AttentionOptions{});
  double total = 0;
  const int draws = 4;
  for (int d = 0; d < draws; ++d) {
    torch::manual_seed(100 + d);
    auto in = inputs(2, 2, 24, 16, causal);
    PerformerAttention performer(performer_options(m, 7), 16);
    total += (performer.forward(in) - exact.reference_forward(in)).abs().mean().item<double>();
  }
  return total / draws;
}

}  // namespace

TEST_F(Performer, ErrorAgainstSoftmaxFallsAsFeaturesGrow) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    std::vector<double> errors;
    for (int64_t m : {8, 32, 128, 512}) errors.push_back(error_vs_softmax(m, causal));
    for (size_t i = 1; i < errors.size(); ++i) EXPECT_LT(errors[i], errors[i - 1]) << "m index " << i;
    EXPECT_LT(errors.back(), 0.25 * errors.front());
    EXPECT_LT(errors.back(), 0.05);
  }
}

TEST_F(Performer, ChunkedCausalEqualsDirectQuadraticEvaluation) {
  PerformerAttention performer(performer_options(32), 8);
  auto in = inputs(2, 3, 13, 8, true, 1.0);
  auto phi_q = performer.query_features(in.q);
  auto phi_k = torch::exp(performer.feature_logits(in.k));
  auto expected = causal_linear_attention_reference(phi_q, phi_k, in.v);
  for (int64_t chunk : {1, 3, 5, 13, 64}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    auto got = causal_linear_attention(phi_q, performer.feature_logits(in.k), {}, in.v, chunk);
    EXPECT_LT(max_diff(got, expected), 1e-12);
  }
  // the backend itself (chunk 128 > T: one chunk)
  EXPECT_LT(max_diff(performer.forward(in), expected), 1e-12);
}

TEST_F(Performer, CausalOutputsDoNotDependOnLaterTokens) {
  PerformerAttention performer(performer_options(16, 4), 8);
  auto in = inputs(1, 2, 12, 8, true, 1.0);
  auto before = performer.forward(in);
  auto changed = in;
  const int64_t t = 6;  // positions > t get new keys (much larger ones) and values
  changed.k = in.k.clone(), changed.v = in.v.clone();
  changed.k.narrow(2, t + 1, 12 - t - 1).copy_(torch::randn({1, 2, 5, 8}, kDouble) * 3);
  changed.v.narrow(2, t + 1, 12 - t - 1).copy_(torch::randn({1, 2, 5, 8}, kDouble));
  auto after = performer.forward(changed);
  EXPECT_LT(max_diff(before.narrow(2, 0, t + 1), after.narrow(2, 0, t + 1)), 1e-12);
  EXPECT_GT(max_diff(before.narrow(2, t + 1, 5), after.narrow(2, t + 1, 5)), 1e-3);
}

TEST_F(Performer, PaddedKeysCountNowhere) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    PerformerAttention performer(performer_options(16, 3), 8);
    auto in = inputs(1, 2, 9, 8, causal, 1.0);
    auto padded = in;
    padded.k = torch::cat({in.k, torch::randn({1, 2, 4, 8}, kDouble) * 5}, 2);
    padded.v = torch::cat({in.v, torch::randn({1, 2, 4, 8}, kDouble)}, 2);
    padded.q = causal ? torch::cat({in.q, torch::randn({1, 2, 4, 8}, kDouble)}, 2) : in.q;
    padded.key_padding_mask = torch::arange(13).ge(9).unsqueeze(0);
    auto out = performer.forward(padded);
    EXPECT_LT(max_diff(out.narrow(2, 0, 9), performer.forward(in)), 1e-12);
  }
}

TEST_F(Performer, IncrementalDecodingEqualsFullEvaluation) {
  PerformerAttention performer(performer_options(32, 4), 8);
  auto in = inputs(2, 2, 11, 8, true, 1.0);
  auto full = performer.forward(in);
  AttentionCachePtr cache;
  // a prompt of 5 (two chunks), then one token at a time
  std::vector<std::pair<int64_t, int64_t>> pieces{{0, 5}};
  for (int64_t t = 5; t < 11; ++t) pieces.emplace_back(t, 1);
  for (auto [start, length] : pieces) {
    AttentionInputs step{
        in.q.narrow(2, start, length), in.k.narrow(2, start, length), in.v.narrow(2, start, length), {}, {}, true};
    auto out = performer.forward_cached(step, cache);
    EXPECT_LT(max_diff(out, full.narrow(2, start, length)), 1e-12) << "from " << start;
  }
  auto* sums = dynamic_cast<PerformerCache*>(cache.get());  // the backend's own state: sums, no keys
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(sums->kv_sum.sizes(), (std::vector<int64_t>{2, 2, 32, 8}));
}

TEST_F(Performer, GradientsMatchFiniteDifferences) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    PerformerAttention performer(performer_options(16, 3), 4);
    auto in = inputs(1, 1, 7, 4, causal, 1.0);
    in.key_padding_mask = torch::arange(7).ge(6).unsqueeze(0);
    auto weights = torch::randn({1, 1, 7, 4}, kDouble);
    for (auto* x : {&in.q, &in.k, &in.v}) x->requires_grad_(true);
    auto loss = [&] { return (performer.forward(in) * weights).sum(); };
    auto grads = torch::autograd::grad({loss()}, {in.q, in.k, in.v});
    torch::NoGradGuard no_grad;
    int checked = 0;
    for (int which = 0; which < 3; ++which) {
      auto& x = which == 0 ? in.q : which == 1 ? in.k : in.v;
      auto flat = x.view({-1});
      for (int64_t i = 0; i < flat.numel(); i += 3) {
        const double original = flat[i].item<double>(), eps = 1e-6;
        flat[i] = original + eps;
        const double plus = loss().item<double>();
        flat[i] = original - eps;
        const double minus = loss().item<double>();
        flat[i] = original;
        const double numeric = (plus - minus) / (2 * eps);
        EXPECT_NEAR(grads[which].view({-1})[i].item<double>(), numeric, 1e-6 + 1e-5 * std::abs(numeric))
            << "input " << which << " element " << i;
        ++checked;
      }
    }
    EXPECT_GT(checked, 25);
  }
}

TEST_F(Performer, FeaturesAreOrthogonalWithinBlocks) {
  auto w = orthogonal_random_features(20, 8);
  ASSERT_EQ(w.sizes(), (std::vector<int64_t>{20, 8}));
  auto block = w.narrow(0, 0, 8);
  auto unit = block / block.norm(2, {1}, true);
  EXPECT_LT(max_diff(torch::matmul(unit, unit.t()), torch::eye(8)), 1e-5);
}

TEST_F(Performer, RedrawsOnScheduleInTrainingOnlyAndTravelsInCheckpoints) {
  auto performer = std::make_shared<PerformerAttention>(performer_options(16).redraw_every(10), 8);
  performer->train();
  auto first = performer->features.clone();
  performer->before_update(0);
  performer->before_update(9);
  EXPECT_TRUE(torch::equal(performer->features, first));
  performer->before_update(10);
  EXPECT_FALSE(torch::equal(performer->features, first));
  auto drawn = performer->features.clone();
  performer->eval();
  performer->before_update(20);
  EXPECT_TRUE(torch::equal(performer->features, drawn));  // frozen in evaluation

  const auto path = (dir_ / "performer.pt").string();
  save_checkpoint(path, *performer, nullptr, Progress{});
  PerformerAttention other(performer_options(16), 8);
  EXPECT_FALSE(torch::equal(other.features, drawn));
  load_checkpoint(path, other);
  EXPECT_TRUE(torch::equal(other.features, drawn));
}

TEST_F(Performer, ModelsDecodeIncrementallyWithRotaryAndAbsolutePositions) {
  for (auto type : {PositionType::rotary, PositionType::sinusoidal, PositionType::learned}) {
    SCOPED_TRACE(to_string(type));
    auto position = PositionOptions().type(type);
    auto options = ropelab::testing::tiny_options()
                       .attention(performer_options(32, 2))
                       .encoder_position(position)
                       .decoder_position(position);
    ropelab::testing::expect_cached_decoding_matches_full(options, 1e-4);
  }
}

TEST_F(Performer, ConfigRejectsT5BiasAndAttentionDropout) {
  auto config = write("c.yaml", "model:\n  attention:\n    type: performer\n  decoder_position:\n    type: t5_bias\n");
  auto message = ropelab::testing::error_of([&] { load_config({{config}, {}}); });
  EXPECT_NE(message.find("model.decoder_position.type"), std::string::npos) << message;
  EXPECT_NE(message.find("performer"), std::string::npos) << message;
  message = ropelab::testing::error_of([&] {
    load_config({{}, {"model.attention.type=performer", "model.attention.dropout=0.1"}});
  });
  EXPECT_NE(message.find("model.attention.dropout"), std::string::npos) << message;
}
