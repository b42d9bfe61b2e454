// The matrix multiplications of a training update counted from the model's shapes
// (bench/gemm.h), checked against the parameters of the model actually built: every
// weight matrix multiplies every token once forward and twice backward (6 FLOPs per
// weight per token), the tied embedding once as the output projection, and each softmax
// attention does two (T x T x Dh) products per sentence and head forward and four backward.
#include "ropelab/bench/gemm.h"

#include "../test_util.h"
#include "ropelab/task/task.h"

using namespace ropelab;

namespace {

double expected_flops(const Config& config, int64_t vocab, int64_t sentences, int64_t length, int64_t attentions) {
  torch::manual_seed(1);
  auto model = make_task(config)->build_model(vocab);
  double matrix_weights = 0;
  for (const auto& p : model->module().parameters())
    if (p.dim() == 2) matrix_weights += static_cast<double>(p.numel());  // the embedding (V x d) included
  const double rows = static_cast<double>(sentences * length);
  const auto& m = config.model;
  const double attention = 6.0 * 2.0 * sentences * m.heads() * length * length * (m.d_model() / m.heads());
  return 6.0 * rows * matrix_weights + attention * static_cast<double>(attentions);
}

}  // namespace

TEST(TrainingGemms, TranslationCountsEveryWeightTokenAndAttention) {
  const auto config = load_config(
      {{}, {"model.d_model=32", "model.heads=4", "model.d_ff=48", "model.encoder_layers=2", "model.decoder_layers=3"}});
  const auto shapes = training_gemms(config, 50, 4, 7);
  // attentions: 2 encoder self, 3 decoder self, 3 decoder cross
  EXPECT_DOUBLE_EQ(total_flops(shapes), expected_flops(config, 50, 4, 7, 8));
  EXPECT_EQ(shapes.back().name, "output projection, grad weight");
  EXPECT_EQ(shapes.back().m, 50);
  // attention's own products run in fp32 under any precision, the projections do not
  for (const auto& s : shapes) EXPECT_EQ(s.fp32, s.batch > 1) << s.name;
}

TEST(TrainingGemms, LanguageModelHasNoEncoderNorCrossAttention) {
  const auto config = load_config({{},
                                   {"task=lm", "data.format=text", "model.d_model=32", "model.heads=2", "model.d_ff=40",
                                    "model.decoder_layers=3"}});
  const auto shapes = training_gemms(config, 30, 3, 11);
  EXPECT_DOUBLE_EQ(total_flops(shapes), expected_flops(config, 30, 3, 11, 3));
  for (const auto& s : shapes) EXPECT_EQ(s.name.find("encoder"), std::string::npos) << s.name;
}

TEST(TrainingGemms, PerformerIsNotCounted) {
  const auto config = load_config({{}, {"model.attention.type=performer"}});
  const auto message = ropelab::testing::error_of([&] { training_gemms(config, 30, 3, 11); });
  EXPECT_NE(message.find("model.attention.type is performer"), std::string::npos) << message;
}

TEST(BenchGemm, TimesEveryShapeAndSumsItsCount) {
  const std::vector<GemmShape> shapes = {{"a", 1, 8, 16, 4, 3}, {"b", 5, 4, 4, 8, 2, /*fp32=*/true}};
  const auto r = bench_gemm(shapes, torch::kBFloat16, torch::kCPU, 2);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].dtype, torch::kBFloat16);
  EXPECT_EQ(r.rows[1].dtype, torch::kFloat);  // a shape marked fp32 keeps fp32
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * (8 * 16 * 4 * 3 + 5 * 4 * 4 * 8 * 2));
  EXPECT_DOUBLE_EQ(r.seconds, 3 * r.rows[0].timing.median + 2 * r.rows[1].timing.median);
  EXPECT_GT(r.gflops(), 0.0);
}
