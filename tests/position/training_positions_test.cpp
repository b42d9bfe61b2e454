// Positions drawn for training (position/training_positions.h): randomized positions (Ruoss
// et al. 2023) and PoSE (Zhu et al. 2024), their distributions, and a stack that trains on
// them while evaluation keeps 0, ..., T - 1.
#include "ropelab/position/training_positions.h"

#include <cmath>
#include <map>
#include <numeric>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/model/transformer.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/position/unused_settings.h"

using namespace ropelab;
using ropelab::testing::all_position_types;
using ropelab::testing::causal_position_types;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class TrainingPositions : public ropelab::testing::Seeded {};

std::vector<int64_t> as_vector(const torch::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/// Whether an encoder reads train_positions: the rule the config applies (position/unused_settings.h).
bool takes_drawn_positions(const PositionOptions& options) {
  for (const auto& setting : position_settings())
    if (std::string(setting.key) == "train_positions.type") return setting.read_by(options);
  ADD_FAILURE() << "no train_positions.type in position_settings()";
  return false;
}

TrainPositionsOptions drawn(TrainPositionsType type, int64_t range) {
  return TrainPositionsOptions().type(type).range(range);
}

}  // namespace

// The reference code's arithmetic (Zhu et al. 2024, train_pose.py): position ids 0 ... T - 1,
// those of the second chunk (from index f on) raised by the skip u.
TEST_F(TrainingPositions, PosePositionsFollowTheReferenceArithmetic) {
  EXPECT_EQ(as_vector(pose_positions(8, 3, 5)), (std::vector<int64_t>{0, 1, 2, 8, 9, 10, 11, 12}));
  EXPECT_EQ(as_vector(pose_positions(5, 1, 0)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(as_vector(pose_positions(4, 2, 96)), (std::vector<int64_t>{0, 1, 98, 99}));
  EXPECT_THROW(pose_positions(4, 5, 0), c10::Error);
}

// A sorted sample of T from {0, ..., N - 1} without replacement: the k-th smallest (k = 1 ... T)
// has mean k (N + 1) / (T + 1) - 1 and variance k (T - k + 1) (N + 1) (N - T) / ((T + 1)^2 (T + 2)).
// The means of 4000 draws fall within 4.5 standard errors of those, each draw shared by the batch.
TEST_F(TrainingPositions, RandomizedPositionsAreASortedSampleOfTheRange) {
  const int64_t n = 64, t = 8, draws = 4000;
  std::vector<double> sum(t, 0.0);
  for (int64_t d = 0; d < draws; ++d) {
    const auto p = draw_training_positions(drawn(TrainPositionsType::randomized, n), 3, t, torch::kCPU);
    ASSERT_FALSE(p.batched());  // one draw for the batch
    const auto v = as_vector(p.values());
    ASSERT_EQ(static_cast<int64_t>(v.size()), t);
    for (int64_t k = 0; k < t; ++k) {
      ASSERT_GE(v[k], k == 0 ? 0 : v[k - 1] + 1);  // sorted and distinct
      ASSERT_LT(v[k], n);
      sum[k] += static_cast<double>(v[k]);
    }
  }
  for (int64_t k = 1; k <= t; ++k) {
    const double mean = k * (n + 1.0) / (t + 1.0) - 1.0;
    const double var = k * (t - k + 1.0) * (n + 1.0) * (n - t) / ((t + 1.0) * (t + 1.0) * (t + 2.0));
    EXPECT_NEAR(sum[k - 1] / draws, mean, 4.5 * std::sqrt(var / draws)) << "order statistic " << k;
  }
}

// PoSE, two chunks: the first chunk's length f is uniform in [1, (T + 1) / 2] and the skip u
// uniform in [0, N - T], one draw per sequence.
TEST_F(TrainingPositions, PoseDrawsTheChunkAndTheSkipUniformly) {
  const int64_t n = 40, t = 8, rows = 4, draws = 1000;
  std::map<int64_t, int64_t> firsts;  // f of the rows whose skip shows it (u > 0)
  int64_t no_skip = 0, skip_min = n, skip_max = -1;
  double skip_sum = 0;
  for (int64_t d = 0; d < draws; ++d) {
    const auto p = draw_training_positions(drawn(TrainPositionsType::pose, n), rows, t, torch::kCPU);
    ASSERT_EQ(p.values().sizes(), (std::vector<int64_t>{rows, t}));  // one draw per sequence
    for (int64_t r = 0; r < rows; ++r) {
      const auto v = as_vector(p.values()[r]);
      int64_t first = t, skip = 0;  // the one jump, if any
      for (int64_t k = 1; k < t; ++k)
        if (v[k] != v[k - 1] + 1) {
          ASSERT_EQ(first, t) << "a second jump";
          first = k, skip = v[k] - k;
        }
      ASSERT_TRUE(pose_positions(t, first, skip).equal(p.values()[r]));  // starts at 0, one skip
      if (first == t) {
        ++no_skip;
        continue;
      }
      ++firsts[first];
      skip_sum += static_cast<double>(skip);
      skip_min = std::min(skip_min, skip);
      skip_max = std::max(skip_max, skip);
    }
  }
  const double all = static_cast<double>(draws * rows), seen = all - static_cast<double>(no_skip);
  EXPECT_NEAR(no_skip / all, 1.0 / (n - t + 1.0), 0.012);  // P(u = 0)
  ASSERT_EQ(firsts.size(), 4u);                            // f in {1, 2, 3, 4}, each a quarter
  for (const auto& [f, count] : firsts) {
    EXPECT_GE(f, 1);
    EXPECT_LE(f, (t + 1) / 2);
    EXPECT_NEAR(count / seen, 0.25, 0.035) << "f = " << f;
  }
  EXPECT_EQ(skip_min, 1);
  EXPECT_EQ(skip_max, n - t);
  EXPECT_NEAR(skip_sum / seen, (1.0 + (n - t)) / 2.0, 0.6);  // u uniform in [1, N - T] when it shows
}

TEST_F(TrainingPositions, ARangeBelowTheSequenceIsRefused) {
  for (auto type : {TrainPositionsType::randomized, TrainPositionsType::pose})
    EXPECT_EQ(ropelab::testing::error_of([&] { draw_training_positions(drawn(type, 7), 2, 8, torch::kCPU); }),
              "train_positions.range 7 is below a training sequence of 8 tokens");
}

// A learned table shows which positions a call used: its rows with a gradient. Training
// draws them from the range; evaluation uses 0 ... T - 1.
TEST_F(TrainingPositions, AStackTrainsOnDrawnPositionsAndEvaluatesOnContiguousOnes) {
  const int64_t t = 8, range = 1000;
  auto used_rows = [&](TrainPositionsType type, bool training) {
    LanguageModel lm(tiny_options().decoder_position(
        PositionOptions().type(PositionType::learned).max_len(range).train_positions(drawn(type, range))));
    lm->train(training);
    lm(torch::randint(1, 23, {3, t})).sum().backward();
    const auto grad = lm->decoder->position()->named_parameters()["table.weight"].grad();
    return as_vector(grad.abs().sum(1).nonzero().flatten());
  };
  std::vector<int64_t> first(t);
  std::iota(first.begin(), first.end(), 0);
  for (auto type : {TrainPositionsType::contiguous, TrainPositionsType::randomized, TrainPositionsType::pose})
    EXPECT_EQ(used_rows(type, false), first) << to_string(type);
  EXPECT_EQ(used_rows(TrainPositionsType::contiguous, true), first);
  const auto randomized = used_rows(TrainPositionsType::randomized, true);
  EXPECT_EQ(randomized.size(), static_cast<size_t>(t));  // one draw shared by the 3 sequences
  EXPECT_GT(randomized.back(), t);
  const auto pose = used_rows(TrainPositionsType::pose, true);
  EXPECT_EQ(pose.front(), 0);                      // every sequence's first chunk starts at 0
  EXPECT_GT(pose.size(), static_cast<size_t>(t));  // a skip of its own for each sequence
  EXPECT_GT(pose.back(), t);
}

// With drawn_at_eval (the reference code's test-time choice), evaluation of randomized
// positions draws as training does: T sorted rows of the range, a new draw per call, the
// same ones from the same seed.
TEST_F(TrainingPositions, DrawnAtEvalDrawsInEvaluationToo) {
  const int64_t t = 8, range = 1000;
  LanguageModel lm(tiny_options().decoder_position(
      PositionOptions()
          .type(PositionType::learned)
          .max_len(range)
          .train_positions(drawn(TrainPositionsType::randomized, range).drawn_at_eval(true))));
  lm->eval();
  const auto tokens = torch::randint(1, 23, {3, t});
  auto used_rows = [&](uint64_t seed) {
    lm->zero_grad();
    torch::manual_seed(seed);
    lm(tokens).sum().backward();
    const auto grad = lm->decoder->position()->named_parameters()["table.weight"].grad();
    return as_vector(grad.abs().sum(1).nonzero().flatten());
  };
  const auto rows = used_rows(5);
  ASSERT_EQ(rows.size(), static_cast<size_t>(t));  // one draw for the batch
  EXPECT_GT(rows.back(), t);
  EXPECT_EQ(used_rows(5), rows);
  EXPECT_NE(used_rows(6), rows);
  torch::manual_seed(5);
  const auto drawn_out = lm(tokens);
  torch::manual_seed(5);
  const auto again = lm(tokens);
  EXPECT_EQ(max_diff(drawn_out, again), 0.0);
  EXPECT_GT(max_diff(drawn_out, lm(tokens, nullptr, Positions::range(0, t, 1, torch::kCPU))), 1e-4);
  // only randomized reads the key: PoSE with it set still evaluates at 0 ... T - 1
  LanguageModel pose(tiny_options().decoder_position(
      PositionOptions()
          .type(PositionType::learned)
          .max_len(range)
          .train_positions(drawn(TrainPositionsType::pose, range).drawn_at_eval(true))));
  pose->eval();
  EXPECT_EQ(max_diff(pose(tokens), pose(tokens, nullptr, Positions::range(0, t, 1, torch::kCPU))), 0.0);
}

// Evaluation that draws is held to what training on drawn positions is (a dynamic scaling
// per call, a window at cache positions), and a translator, whose search decodes through
// caches at 0 ... T - 1, cannot draw at evaluation: one line each, when the config loads.
TEST_F(TrainingPositions, DrawnAtEvalRefusesWhatWouldNotUseTheDrawnPositions) {
  const std::vector<std::string> lm = {"task=lm",
                                       "data.format=text",
                                       "data.context=64",
                                       "model.position.type=rotary",
                                       "model.position.train_positions.type=randomized",
                                       "model.position.train_positions.drawn_at_eval=true"};
  auto error = [&](const std::vector<std::string>& base, const std::vector<std::string>& more) {
    auto all = base;
    all.insert(all.end(), more.begin(), more.end());
    return ropelab::testing::error_of([&] { load_config({{}, all}); });
  };
  EXPECT_EQ(error(lm, {}), "");
  EXPECT_EQ(error(lm, {"model.position.scaling.type=dynamic_ntk"}),
            "--set: model.decoder_position.scaling.dynamic=call follows the call's largest position, which "
            "model.decoder_position.train_positions.type=randomized puts near the range in training; use token");
  EXPECT_EQ(error(lm, {"model.attention.window=16"}),
            "--set: model.attention.window_positions=cache places the queries of a window at cache positions (at "
            "most sinks + window - 1), not at the drawn positions of model.decoder_position.train_positions.type="
            "randomized; use sequence");
  EXPECT_EQ(error(lm, {"model.position.train_positions.drawn_at_eval=false", "model.attention.window=16"}), "");
  EXPECT_EQ(error({"model.position.type=rotary", "model.position.train_positions.type=randomized",
                   "model.position.train_positions.drawn_at_eval=true"},
                  {}),
            "--set: model.encoder_position.train_positions.drawn_at_eval=true applies to language models: a "
            "translator's search decodes through caches, at positions 0 ... T - 1");
}

// Every encoder that takes drawn positions trains on them (a finite loss and gradient, and a
// loss other than on 0 ... T - 1), and in evaluation the drawing changes nothing: the same
// weights give the same outputs as without it, by full recomputation and by cached decoding.
TEST_F(TrainingPositions, EveryEncoderTrainsOnThemAndEvaluatesAsBefore) {
  auto types = all_position_types();
  for (const auto& p : causal_position_types()) types.push_back(p);
  for (const auto& base : types) {
    if (!takes_drawn_positions(base)) continue;  // the config refuses the key there
    for (auto type : {TrainPositionsType::randomized, TrainPositionsType::pose}) {
      auto contiguous = base;
      if (position_traits(base.type()).bounded) contiguous.max_len(256);  // a row for every drawn position
      auto p = contiguous;
      p.train_positions(drawn(type, 256));
      SCOPED_TRACE(position_label(p));
      torch::manual_seed(1);
      LanguageModel plain(tiny_options().decoder_position(contiguous));
      torch::manual_seed(1);
      LanguageModel trained(tiny_options().decoder_position(p));
      const auto tokens = torch::randint(1, 23, {2, 9});
      auto loss = trained(tokens).logsumexp(-1).mean();
      loss.backward();
      EXPECT_TRUE(torch::isfinite(loss).item<bool>());
      EXPECT_GT(std::abs(loss.item<double>() - plain(tokens).logsumexp(-1).mean().item<double>()), 1e-7);
      for (const auto& param : trained->parameters())
        if (param.grad().defined()) {
          EXPECT_TRUE(torch::isfinite(param.grad()).all().item<bool>());
        }
      trained->eval();
      plain->eval();
      EXPECT_LT(max_diff(plain(tokens), trained(tokens)), 1e-6);
      // dynamic NTK per call decodes in its autoregressive form: tests/model/dynamic_ntk_decoding_test.cpp
      if (trained->decoder->position()->follows_length()) continue;
      DecoderCache cache;
      torch::Tensor step;
      for (int64_t i = 0; i < tokens.size(1); ++i) step = trained(tokens.narrow(1, i, 1), &cache);
      EXPECT_LT(max_diff(step.squeeze(1), trained(tokens).select(1, tokens.size(1) - 1)), 1e-5);
    }
  }
}
