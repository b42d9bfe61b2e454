// Mixed precision (model/precision.h, train.precision): a bf16 update against the fp32 one
// on a tiny model, and the parts that must stay fp32 (softmax, rotary tables, the loss,
// the master weights).
#include "ropelab/model/precision.h"

#include "../test_util.h"
#include "ropelab/attention/backend.h"
#include "ropelab/config/config.h"
#include "ropelab/ops/cross_entropy/cross_entropy.h"
#include "ropelab/position/encoders.h"
#include "ropelab/task/translation_task.h"
#include "ropelab/train/trainer.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::max_diff;

namespace {

class MixedPrecision : public ropelab::testing::Seeded {};

const Config& rotary_translator() {
  static const Config config =
      load_config({{},
                   {"model.d_model=32", "model.heads=4", "model.d_ff=64", "model.encoder_layers=2",
                    "model.decoder_layers=2", "model.dropout=0", "model.position.type=rotary"}});
  return config;
}

/// The loss and every parameter's gradient of one forward and backward on `batch`.
std::pair<double, std::vector<torch::Tensor>> loss_and_gradients(TaskModel& model, const Batch& batch,
                                                                 Precision precision) {
  model->zero_grad();
  torch::Tensor loss;
  {
    PrecisionScope scope(precision, torch::kCPU);
    loss = smoothed_loss(model.logits(batch), batch.target_out, 0.1, kPadId).first;
  }
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);  // the loss is fp32 in either precision
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  return {loss.item<double>(), grads};
}

}  // namespace

TEST_F(MixedPrecision, ScopeTurnsBfloat16MatmulsOnAndRestores) {
  auto x = torch::randn({4, 8}), w = torch::randn({3, 8});
  {
    PrecisionScope scope(Precision::bf16, torch::kCPU);
    EXPECT_EQ(torch::nn::functional::linear(x, w).scalar_type(), torch::kBFloat16);
    {
      PrecisionScope inner(Precision::fp32, torch::kCPU);  // fp32 changes nothing
      EXPECT_EQ(torch::nn::functional::linear(x, w).scalar_type(), torch::kBFloat16);
    }
  }
  EXPECT_EQ(torch::nn::functional::linear(x, w).scalar_type(), torch::kFloat);
  EXPECT_NE(error_of([] { PrecisionScope scope(Precision::fp16, torch::kCPU); }).find("fp16"), std::string::npos);
}

// One bf16 step against the fp32 step from the same weights and batch: the loss within 1%,
// the gradient (all parameters as one vector) within 5% of its norm, and both really differ
// (the products did run in bfloat16). Parameters and gradients stay fp32.
TEST_F(MixedPrecision, Bfloat16StepMatchesFp32WithinTolerance) {
  auto model = make_task(rotary_translator())->build_model(40);
  std::vector<Example> examples{{{5, 6, 7, 8, 9, 10}, {11, 12, 13, 14}, {}},
                                {{15, 16, 17}, {18, 19, 20, 21, 22, 23, 24}, {}},
                                {{25, 26, 27, 28}, {29, 30, 31}, {}}};
  const auto batch = collate(examples, {0, 1, 2}, torch::kCPU);
  const auto [loss32, grads32] = loss_and_gradients(*model, batch, Precision::fp32);
  const auto [loss16, grads16] = loss_and_gradients(*model, batch, Precision::bf16);
  EXPECT_NE(loss16, loss32);
  EXPECT_NEAR(loss16, loss32, 0.01 * loss32);
  std::vector<torch::Tensor> a, b;
  for (size_t i = 0; i < grads32.size(); ++i) {
    EXPECT_EQ(grads16[i].scalar_type(), torch::kFloat);
    a.push_back(grads32[i].flatten()), b.push_back(grads16[i].flatten());
  }
  const auto g32 = torch::cat(a), g16 = torch::cat(b);
  const double relative = ((g16 - g32).norm() / g32.norm()).item<double>();
  EXPECT_GT(relative, 0.0);
  EXPECT_LT(relative, 0.05);
  for (const auto& p : (*model)->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);

  // update_step in bf16: the weights move and stay fp32
  torch::optim::Adam adam((*model)->parameters(), torch::optim::AdamOptions(1e-3));
  auto before = (*model)->parameters().front().detach().clone();
  auto totals = update_step(*model, adam, {batch}, TrainOptions().precision(Precision::bf16), 1e-3);
  EXPECT_FALSE(totals.skipped);
  EXPECT_NEAR(totals.loss, loss32, 0.01 * loss32);
  EXPECT_FALSE(torch::equal((*model)->parameters().front(), before));
  for (const auto& p : (*model)->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
}

// Attention on bfloat16 q, k, v (what the projections give under bf16) runs in fp32 with
// autocast off, whatever the backend and path: it equals the fp32 attention of the same
// (bfloat16-representable) values, where bfloat16 scores and softmax would be off by ~1e-2,
// and bfloat16 scores would overflow the masks' fill value. Softmax through the fused
// kernel and, with attention dropout, through ATen; the Performer.
TEST_F(MixedPrecision, AttentionRunsInFp32WhateverTheBackend) {
  auto q = torch::randn({2, 3, 9, 8}).to(torch::kBFloat16), k = torch::randn({2, 3, 9, 8}).to(torch::kBFloat16),
       v = torch::randn({2, 3, 9, 8}).to(torch::kBFloat16);
  const std::vector<AttentionOptions> backends = {AttentionOptions(), AttentionOptions().dropout(0.2),
                                                  AttentionOptions().type(AttentionType::performer).num_features(16)};
  for (const auto& options : backends) {
    SCOPED_TRACE(to_string(options.type()) + " dropout " + std::to_string(options.dropout()));
    torch::manual_seed(4);
    auto backend = make_attention_backend(options, 8);
    backend->train();
    torch::manual_seed(5);
    auto reference = backend->forward({q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat), {}, {}, true});
    PrecisionScope scope(Precision::bf16, torch::kCPU);
    torch::manual_seed(5);
    auto mixed =
        attend_in_fp32({q, k, v, {}, {}, true}, [&](const AttentionInputs& in) { return backend->forward(in); });
    EXPECT_EQ(mixed.scalar_type(), torch::kFloat);
    EXPECT_LT(max_diff(mixed, reference), 1e-5);
  }
}

// Whole bf16 updates of models whose attention leaves the fused kernel: the Performer, and
// softmax with attention dropout.
TEST_F(MixedPrecision, Bfloat16UpdatesRunWithEveryAttention) {
  std::vector<Example> examples{{{5, 6, 7, 8}, {9, 10, 11}, {}}, {{12, 13}, {14, 15, 16, 17}, {}}};
  const auto batch = collate(examples, {0, 1}, torch::kCPU);
  for (const char* attention : {"model.attention.type=performer", "model.attention.dropout=0.1"}) {
    SCOPED_TRACE(attention);
    const auto config = load_config({{},
                                     {"model.d_model=32", "model.heads=4", "model.d_ff=64", "model.encoder_layers=1",
                                      "model.decoder_layers=1", "train.precision=bf16", attention}});
    auto model = make_task(config)->build_model(40);
    torch::optim::Adam adam((*model)->parameters(), torch::optim::AdamOptions(1e-3));
    const auto totals = update_step(*model, adam, {batch}, config.train, 1e-3);
    EXPECT_FALSE(totals.skipped);
    EXPECT_TRUE(std::isfinite(totals.loss));
  }
}

// Rotary on bfloat16 queries rotates with fp32 tables: at positions in the thousands the
// result is the fp32 rotation of the same values, rounded once to bfloat16. Tables rounded
// to bfloat16 (8 bits of mantissa) would move most elements by a unit or more.
TEST_F(MixedPrecision, RotaryTablesStayFp32) {
  RotaryEncoder rotary(PositionOptions(), PositionGeometry{64, 4, true}, 1);
  auto x = torch::randn({1, 4, 64, 16}).to(torch::kBFloat16);
  const auto positions = torch::arange(4000, 4064);
  auto [q, k] = rotary.rotate_pair(x, x, positions);
  auto [q32, k32] = rotary.rotate_pair(x.to(torch::kFloat), x.to(torch::kFloat), positions);
  ASSERT_EQ(q.scalar_type(), torch::kBFloat16);
  const double mismatched = q.ne(q32.to(torch::kBFloat16)).to(torch::kDouble).mean().item<double>();
  EXPECT_LT(mismatched, 0.01);
  EXPECT_LT(max_diff(k.to(torch::kFloat), k32), 0.02);
}

TEST_F(MixedPrecision, ConfigNamesThePrecisionAndKeepsFp16ToCuda) {
  EXPECT_EQ(load_config({{}, {"train.precision=bf16"}}).train.precision(), Precision::bf16);
  EXPECT_EQ(load_config({{}, {}}).train.precision(), Precision::fp32);
  EXPECT_EQ(load_config({{}, {"train.precision=fp16", "train.device=cuda"}}).train.precision(), Precision::fp16);
  auto message = error_of([] { load_config({{}, {"train.precision=fp16"}}); });
  EXPECT_NE(message.find("train.precision=fp16 needs train.device cuda"), std::string::npos) << message;
  message = error_of([] { load_config({{}, {"train.precision=bf17"}}); });
  EXPECT_NE(message.find("train.precision"), std::string::npos) << message;
  EXPECT_NE(message.find("bf16"), std::string::npos) << message;
}

TEST_F(MixedPrecision, LossScaleHalvesOnOverflowAndDoublesAfterAStreak) {
  LossScale s{kLossScaleInitial, 0};
  update_loss_scale(s, false);
  EXPECT_EQ(s.scale, kLossScaleInitial / 2);
  for (int64_t i = 0; i < kLossScaleGrowth - 1; ++i) update_loss_scale(s, true);
  EXPECT_EQ(s.scale, kLossScaleInitial / 2);
  EXPECT_EQ(s.good, kLossScaleGrowth - 1);
  update_loss_scale(s, true);
  EXPECT_EQ(s.scale, kLossScaleInitial);
  EXPECT_EQ(s.good, 0);
  update_loss_scale(s, true);
  update_loss_scale(s, false);  // an overflow restarts the streak
  EXPECT_EQ(s.good, 0);
}

// The loss scale's arithmetic on the CPU (fp16 itself runs on CUDA only): an update with a
// scaled loss equals the unscaled one (the scale is undone inside Adam's pass); a scale that
// overflows skips the update, leaves the weights alone and is halved.
TEST_F(MixedPrecision, ScaledLossGivesTheSameUpdateAndOverflowSkipsIt) {
  std::vector<Example> examples{{{5, 6, 7, 8}, {9, 10, 11}, {}}, {{12, 13}, {14, 15, 16, 17}, {}}};
  const auto batch = collate(examples, {0, 1}, torch::kCPU);
  auto updated = [&](LossScale* scale, LossTotals* totals) {
    torch::manual_seed(3);
    auto model = make_task(rotary_translator())->build_model(40);
    // weight decay and a large eps make Adam's step depend on the gradient's scale
    torch::optim::Adam adam((*model)->parameters(), torch::optim::AdamOptions(1e-2).weight_decay(0.5).eps(1e-3));
    *totals = update_step(*model, adam, {batch}, TrainOptions(), 1e-2, nullptr, nullptr, scale);
    return torch::cat({(*model)->parameters().front().flatten(), (*model)->parameters().back().flatten()});
  };
  LossTotals plain, scaled, overflowed;
  const auto reference = updated(nullptr, &plain);
  LossScale scale{1024.0, 5};
  const auto with_scale = updated(&scale, &scaled);
  EXPECT_FALSE(scaled.skipped);
  EXPECT_FALSE(scaled.overflow);
  EXPECT_EQ(scale.scale, 1024.0);
  EXPECT_EQ(scale.good, 6);
  EXPECT_LT(max_diff(with_scale, reference), 1e-6);
  EXPECT_DOUBLE_EQ(scaled.loss, plain.loss);  // the reported loss is the unscaled one

  LossScale huge{1e38, 7};  // loss * scale overflows fp32
  torch::manual_seed(3);
  const auto initial = make_task(rotary_translator())->build_model(40);
  const auto before =
      torch::cat({(*initial)->parameters().front().flatten(), (*initial)->parameters().back().flatten()});
  const auto after = updated(&huge, &overflowed);
  EXPECT_TRUE(overflowed.skipped);
  EXPECT_TRUE(overflowed.overflow);
  EXPECT_EQ(huge.scale, 5e37);
  EXPECT_EQ(huge.good, 0);
  EXPECT_TRUE(torch::equal(after, before));
}
