// The same computations on every device: each test is parameterised over the device (cpu,
// cuda:0) and, for the kernels, the dtype, and skips where the device does not exist here
// (ctest lists those as skipped). References are computed on the CPU in double.
// scripts/gpu_check.sh runs them on a machine with a GPU.
#include "../test_util.h"
#include "ropelab/attention/performer.h"
#include "ropelab/attention/softmax.h"
#include "ropelab/config/config.h"
#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/ops/attention/sdpa_attention.h"
#include "ropelab/ops/rotary/rotary.h"
#include "ropelab/position/position_encoder.h"
#include "ropelab/task/translation_task.h"
#include "ropelab/train/trainer.h"

using namespace ropelab;
using ropelab::testing::max_diff;
using ropelab::testing::rotary_tables;
using ropelab::testing::test_devices;

namespace {

std::string device_name(const torch::Device& device) { return device.is_cpu() ? "cpu" : "cuda"; }

/// Largest error allowed against the double reference, for values of order 1. The kernel gets
/// float tables (as the position encoders pass them), which bound even double's accuracy.
double tolerance(torch::Dtype dtype) {
  // bf16: 8 bits of mantissa, fp16: 11, each output rounded once
  return dtype == torch::kBFloat16 ? 3e-2 : dtype == torch::kHalf ? 5e-3 : dtype == torch::kFloat ? 1e-5 : 1e-6;
}

// --- the fused rotary kernel ------------------------------------------------------------

class RotaryOnDevice : public ::testing::TestWithParam<std::tuple<torch::Device, torch::Dtype>> {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

/// An input of `shape` seen through `view`, and the time dimension of the view.
struct Case {
  std::string name;
  std::vector<int64_t> shape;
  std::function<torch::Tensor(const torch::Tensor&)> view;
  int64_t time_dim;
};

const std::vector<Case> kCases = {
    {"[T,B,H,Dh]", {6, 2, 3, 16}, [](const torch::Tensor& x) { return x; }, 0},
    {"[B,H,T,Dh]", {2, 3, 6, 16}, [](const torch::Tensor& x) { return x; }, -2},
    // the q slice of a fused (B, T, 3, H, Dh) projection: strided, not contiguous
    {"qkv slice", {2, 6, 3, 3, 16}, [](const torch::Tensor& x) { return x.select(2, 0); }, 1},
    // (B, T, H, Dh) seen as (B, H, T, Dh) by a transpose
    {"transposed", {2, 6, 3, 16}, [](const torch::Tensor& x) { return x.transpose(1, 2); }, 2},
};

TEST_P(RotaryOnDevice, ForwardAndBackwardMatchTheEagerFormulaInDouble) {
  const auto [device, dtype] = GetParam();
  ROPELAB_SKIP_WITHOUT(device);
  auto probe = torch::empty({1, 1, 1, 16}, torch::TensorOptions().device(device).dtype(dtype));
  if (!rotary_fused_supports(probe)) GTEST_SKIP() << "no fused rotary kernel for " << dtype << " on " << device;
  for (const auto& c : kCases) {
    for (bool interleaved : {false, true}) {
      for (int64_t half : {8, 4}) {  // full and partial rotary
        SCOPED_TRACE(c.name + (interleaved ? " interleaved" : " halves") + " r/2=" + std::to_string(half));
        // the reference rotates the same rounded inputs in double: what is left is the kernel's
        auto base = torch::randn(c.shape, torch::kDouble).to(dtype).to(torch::kDouble);
        auto x_ref = c.view(base).detach().requires_grad_(true);
        auto x = c.view(base.to(device, dtype)).detach().requires_grad_(true);
        const int64_t T = x.size(c.time_dim < 0 ? c.time_dim + x.dim() : c.time_dim);
        auto [cos, sin] = rotary_tables(T, half);  // double, on the CPU
        // a loss that weighs every output, with weights the dtype holds exactly
        auto weights = torch::randn(x_ref.sizes(), torch::kDouble).to(dtype).to(torch::kDouble);
        auto reference = rotary_eager(x_ref, cos, sin, c.time_dim, interleaved);
        auto grad_ref = torch::autograd::grad({(reference * weights).sum()}, {x_ref})[0];
        // the tables stay in float on the CPU, as the position encoders pass them
        auto out = rotary_fused(x, cos.to(torch::kFloat), sin.to(torch::kFloat), c.time_dim, interleaved);
        ASSERT_EQ(out.device(), x.device());
        ASSERT_EQ(out.scalar_type(), dtype);
        auto grad = torch::autograd::grad({(out * weights.to(device, dtype)).sum()}, {x})[0];
        const double tol = tolerance(dtype);
        EXPECT_LT(max_diff(out.cpu(), reference), tol);
        EXPECT_LT(max_diff(grad.cpu(), grad_ref), 4 * tol);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, RotaryOnDevice,
                         ::testing::Combine(::testing::ValuesIn(test_devices()),
                                            ::testing::Values(torch::kFloat, torch::kDouble, torch::kBFloat16,
                                                              torch::kHalf)),
                         [](const auto& info) {
                           return device_name(std::get<0>(info.param)) + "_" +
                                  std::string(c10::toString(std::get<1>(info.param)));
                         });

/// The output and the gradients of `leaves` for the loss sum(out * w), each in double on the CPU.
std::vector<torch::Tensor> output_and_gradients(const torch::Tensor& out, const torch::Tensor& w,
                                                const std::vector<torch::Tensor>& leaves) {
  auto grads = torch::autograd::grad({(out * w).sum()}, leaves);
  std::vector<torch::Tensor> result{out.detach().cpu().to(torch::kDouble)};
  for (const auto& g : grads) result.push_back(g.cpu().to(torch::kDouble));
  return result;
}

/// Each of `got` (the output, then the gradients) within `tol` of `expected`, relative to the
/// largest expected value where that exceeds 1.
void expect_close_to(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& expected, double tol) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LT(max_diff(got[i], expected[i]), tol * std::max(1.0, expected[i].abs().max().item<double>()))
        << (i == 0 ? "output" : "gradient " + std::to_string(i - 1));
}

// --- streaming attention in chunks of device operations ------------------------------------

class ChunkedAttentionOnDevice : public ::testing::TestWithParam<std::tuple<torch::Device, torch::Dtype>> {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

// The chunked form on the device against the ATen path in double on the CPU: outputs and the
// gradients of q, k, v, an ALiBi table and FIRE's parameters, causal with a window, sinks and
// padding, several chunks each way; and the streaming setting takes it off the CPU.
TEST_P(ChunkedAttentionOnDevice, MatchesTheDoubleReferenceWithBiasesAndGradients) {
  const auto [device, dtype] = GetParam();
  ROPELAB_SKIP_WITHOUT(device);
  const int64_t B = 2, H = 2, Tq = 21, Tk = 29, Dh = 8;
  auto q = torch::randn({B, H, Tq, Dh}, torch::kDouble), k = torch::randn({B, H, Tk, Dh}, torch::kDouble),
       v = torch::randn({B, H, Tk, Dh}, torch::kDouble), table = torch::randn({H, Tq + Tk - 1}, torch::kDouble);
  auto pad = torch::zeros({B, Tk}, torch::kBool);
  pad[1][Tk - 1] = true;
  auto fire = make_position_encoder(PositionOptions().type(PositionType::fire).fire_threshold(5.0),
                                    PositionGeometry{H * Dh, H, true});
  fire->to(torch::kDouble);
  const auto w = torch::randn({B, H, Tq, Dh}, torch::kDouble);
  auto run = [&](const torch::Device& on, torch::Dtype type, bool reference) {
    fire->to(on, type);
    std::vector<torch::Tensor> leaves;
    for (const auto& t : {q, k, v, table}) leaves.push_back(t.to(on, type).requires_grad_(true));
    LogitBias bias = LogitBias::relative_table(leaves[3]);
    bias.fire = fire->factored_bias(Tq, Tk);
    const AttentionInputs in{leaves[0], leaves[1], leaves[2], pad.to(on), bias, true, 9, 2};
    SoftmaxAttention attention(AttentionOptions().kernel(AttentionKernel::streaming));
    if (!reference) {
      EXPECT_EQ(attention.path(in), on.is_cpu() ? SoftmaxAttention::Path::streaming : SoftmaxAttention::Path::chunked);
    }
    const auto out =
        reference ? attention.reference_forward(in)
                  : chunked_attention(in.q, in.k, in.v, in.key_padding_mask, bias, {{true, 9, 2}, {}, {5, 7, 1 << 24}});
    for (const auto& p : fire->parameters()) leaves.push_back(p);
    return output_and_gradients(out, w.to(on, type), leaves);
  };
  const auto expected = run(torch::kCPU, torch::kDouble, true);
  expect_close_to(run(device, dtype, false), expected, dtype == torch::kDouble ? 1e-10 : 2e-4);
}

INSTANTIATE_TEST_SUITE_P(Devices, ChunkedAttentionOnDevice,
                         ::testing::Combine(::testing::ValuesIn(test_devices()),
                                            ::testing::Values(torch::kFloat, torch::kDouble)),
                         [](const auto& info) {
                           return device_name(std::get<0>(info.param)) + "_" +
                                  std::string(c10::toString(std::get<1>(info.param)));
                         });

// --- models --------------------------------------------------------------------------------

class ModelOnDevice : public ::testing::TestWithParam<torch::Device> {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

TEST_P(ModelOnDevice, CachedDecodingEqualsRecomputation) {
  const auto device = GetParam();
  ROPELAB_SKIP_WITHOUT(device);
  // every encoder of the CPU test (tests/model/transformer_test.cpp), on this device
  for (const auto& position : ropelab::testing::all_position_types()) {
    SCOPED_TRACE(to_string(position.type()));
    ropelab::testing::expect_cached_decoding_matches_full(
        ropelab::testing::tiny_options().encoder_position(position).decoder_position(position), 1e-5, device);
  }
  for (const auto& position : ropelab::testing::causal_position_types()) {
    SCOPED_TRACE(to_string(position.type()) + "/" + to_string(position.scaling().type()));
    if (position.scaling().type() == RopeScalingType::dynamic_ntk &&
        position.scaling().dynamic() == DynamicLength::call)
      continue;  // decoded in its autoregressive form: tests/model/dynamic_ntk_decoding_test.cpp
    ropelab::testing::expect_cached_decoding_matches_full(ropelab::testing::tiny_options().decoder_position(position),
                                                          1e-5, device);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ModelOnDevice, ::testing::ValuesIn(test_devices()),
                         [](const auto& info) { return device_name(info.param); });

// --- CUDA only: against the CPU --------------------------------------------------------

/// Two Adam updates of a tiny translator (fused rotary, no dropout) on `device`, from the
/// same initial parameters; returns the parameters afterwards, on the CPU.
std::vector<torch::Tensor> parameters_after_two_updates(const torch::Device& device) {
  torch::manual_seed(7);
  const auto rotary = PositionOptions().type(PositionType::rotary);
  Seq2Seq model(ropelab::testing::tiny_options().encoder_position(rotary).decoder_position(rotary));
  model->to(device);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-2).eps(1e-6));
  auto src = torch::randint(1, 23, {4, 7}).to(device), tgt = torch::randint(1, 23, {4, 6}).to(device);
  for (int step = 0; step < 2; ++step) {
    adam.zero_grad();
    auto logits = model(src, tgt.narrow(1, 0, 5));
    auto loss =
        torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), tgt.narrow(1, 1, 5).reshape({-1}));
    loss.backward();
    adam.step();
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().cpu());
  return out;
}

TEST(Cuda, TrainingUpdatesEqualTheCpuUpdates) {
  const torch::Device gpu(torch::kCUDA, 0);
  ROPELAB_SKIP_WITHOUT(gpu);
  const auto cpu = parameters_after_two_updates(torch::kCPU), cuda = parameters_after_two_updates(gpu);
  ASSERT_EQ(cpu.size(), cuda.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_LT(max_diff(cpu[i], cuda[i]), 1e-4) << "parameter " << i;
}

// bf16 and fp16 (with its loss scale) updates on the GPU: finite, close to the fp32 update's
// loss, the weights fp32 afterwards. The loss scale multiplies summed token losses, so fp16's
// first updates from kLossScaleInitial may overflow: each such update must report the
// overflow, leave the weights alone and halve the scale, until one is taken.
TEST(Cuda, ReducedPrecisionUpdatesTrackFp32) {
  const torch::Device gpu(torch::kCUDA, 0);
  ROPELAB_SKIP_WITHOUT(gpu);
  std::vector<Example> examples{{{5, 6, 7, 8, 9}, {10, 11, 12}, {}}, {{13, 14}, {15, 16, 17, 18}, {}}};
  const auto batch = collate(examples, {0, 1}, gpu);
  auto loss_of = [&](Precision precision) {
    torch::manual_seed(7);
    const auto rotary = PositionOptions().type(PositionType::rotary);
    Seq2Seq model(ropelab::testing::tiny_options().encoder_position(rotary).decoder_position(rotary));
    model->to(gpu);
    const TranslationTask::Model task(model);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    LossScale scale{kLossScaleInitial, 0};
    auto weights = [&] {
      std::vector<torch::Tensor> flat;
      for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten().clone());
      return torch::cat(flat);
    };
    const auto initial = weights();
    LossTotals totals;
    for (int overflows = 0;; ++overflows) {
      const double before = scale.scale;
      totals = update_step(task, adam, {batch}, TrainOptions().precision(precision), 1e-3, nullptr, nullptr,
                           precision == Precision::fp16 ? &scale : nullptr);
      if (!totals.skipped) break;
      if (precision != Precision::fp16 || !totals.overflow) {
        ADD_FAILURE() << to_string(precision) << ": update skipped for a non-finite loss or gradient";
        break;
      }
      EXPECT_EQ(scale.scale, before / 2);
      EXPECT_TRUE(torch::equal(weights(), initial)) << "a skipped update changed the weights";
      if (overflows == 16) {
        ADD_FAILURE() << "fp16: 17 overflows in a row, loss scale now " << scale.scale;
        break;
      }
    }
    EXPECT_FALSE(torch::equal(weights(), initial)) << to_string(precision) << ": the update left the weights alone";
    for (const auto& p : model->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
    return totals.loss;
  };
  const double fp32 = loss_of(Precision::fp32);
  for (auto precision : {Precision::bf16, Precision::fp16}) EXPECT_NEAR(loss_of(precision), fp32, 0.02 * fp32);
}

// Without a bias or a window, `auto` off the CPU hands the call to PyTorch's
// scaled_dot_product_attention (LibTorch 2.0 and later): the mask aligned at the bottom right for
// cached decoding (Tq < Tk), padding, fp32 and bf16, against the ATen path in double on the CPU.
TEST(Cuda, ScaledDotProductAttentionMatchesTheDoubleReference) {
  const torch::Device device(torch::kCUDA, 0);
  ROPELAB_SKIP_WITHOUT(device);
  if (!sdpa_compiled()) GTEST_SKIP() << "this LibTorch has no scaled_dot_product_attention";
  torch::manual_seed(0);
  const int64_t B = 2, H = 2, Dh = 64;
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    for (auto [tq, tk, padded] :
         {std::tuple<int64_t, int64_t, bool>{33, 33, false}, {33, 33, true}, {7, 40, true}, {1, 40, false}}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " Tq " + std::to_string(tq) + " Tk " + std::to_string(tk) +
                   (padded ? " padded" : ""));
      // the inputs as the device holds them in `dtype`, so that the reference starts from the same values
      auto rounded = [&](std::vector<int64_t> shape) { return torch::randn(shape).to(dtype).to(torch::kDouble); };
      auto q = rounded({B, H, tq, Dh}), k = rounded({B, H, tk, Dh}), v = rounded({B, H, tk, Dh}),
           w = rounded({B, H, tq, Dh});
      torch::Tensor pad;
      if (padded) {
        pad = torch::zeros({B, tk}, torch::kBool);
        pad[1][tk - 2] = true;
      }
      SoftmaxAttention attention{AttentionOptions{}};
      auto run = [&](const torch::Device& on, torch::Dtype type, bool reference) {
        std::vector<torch::Tensor> leaves;
        for (const auto& t : {q, k, v}) leaves.push_back(t.to(on, type).requires_grad_(true));
        const AttentionInputs in{leaves[0], leaves[1], leaves[2], padded ? pad.to(on) : pad, {}, true};
        if (!reference) {
          EXPECT_EQ(attention.path(in), SoftmaxAttention::Path::sdpa);
        }
        const auto out = reference ? attention.reference_forward(in) : attention.forward(in);
        return output_and_gradients(out, w.to(on, type), leaves);
      };
      const auto expected = run(torch::kCPU, torch::kDouble, true);
      // bf16: the output and the gradients rounded once to 8 bits of mantissa
      expect_close_to(run(device, dtype, false), expected, dtype == torch::kFloat ? 2e-4 : 3e-2);
    }
  }
}

TEST(Cuda, PerformerMatchesItsCpuResultAndGradients) {
  const torch::Device device(torch::kCUDA, 0);
  ROPELAB_SKIP_WITHOUT(device);
  torch::manual_seed(0);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    PerformerAttention performer(AttentionOptions().type(AttentionType::performer).num_features(32).chunk_size(5), 16);
    performer.to(torch::kDouble);
    auto make = [] { return (torch::randn({2, 2, 12, 16}, torch::kDouble) * 0.6).requires_grad_(true); };
    auto q = make(), k = make(), v = make();
    auto cpu_out = performer.forward(AttentionInputs{q, k, v, {}, {}, causal});
    auto cpu_grads = torch::autograd::grad({cpu_out.sum()}, {q, k, v});
    performer.to(device);
    auto qd = q.detach().to(device).requires_grad_(true), kd = k.detach().to(device).requires_grad_(true),
         vd = v.detach().to(device).requires_grad_(true);
    auto out = performer.forward(AttentionInputs{qd, kd, vd, {}, {}, causal});
    ASSERT_EQ(out.device(), device);
    auto grads = torch::autograd::grad({out.sum()}, {qd, kd, vd});
    EXPECT_LT(max_diff(out.cpu(), cpu_out), 1e-10);
    for (size_t i = 0; i < 3; ++i) EXPECT_LT(max_diff(grads[i].cpu(), cpu_grads[i]), 1e-9) << "gradient " << i;
  }
}

TEST(Cuda, ASecondGpuComputesWhileTheFirstIsCurrent) {
  const torch::Device second(torch::kCUDA, 1);
  ROPELAB_SKIP_WITHOUT(second);  // needs two GPUs
  torch::manual_seed(0);
  ASSERT_EQ(c10::impl::getDeviceGuardImpl(torch::kCUDA)->getDevice().index(), 0);
  auto x = torch::randn({6, 2, 3, 16}, torch::kDouble);
  auto [cos, sin] = rotary_tables(6, 8);
  auto out = rotary_fused(x.to(second), cos, sin, 0, false);
  EXPECT_EQ(out.device(), second);
  EXPECT_LT(max_diff(out.cpu(), rotary_eager(x, cos, sin, 0, false)), 1e-12);
  EXPECT_EQ(c10::impl::getDeviceGuardImpl(torch::kCUDA)->getDevice().index(), 0);  // restored
  Seq2Seq model(ropelab::testing::tiny_options());
  model->eval();
  auto src = torch::randint(1, 23, {2, 6}), tgt = torch::randint(1, 23, {2, 5});
  auto expected = model(src, tgt);
  model->to(second);
  EXPECT_LT(max_diff(model(src.to(second), tgt.to(second)).cpu(), expected), 1e-4);
  // q and k on two GPUs are refused, not computed in the wrong context
  auto message = ropelab::testing::error_of(
      [&] { rotary_fused_qk(x.to(torch::Device(torch::kCUDA, 0)), x.to(second), cos, sin, 0, false); });
  EXPECT_NE(message.find("q and k must be on one device"), std::string::npos) << message;
}

}  // namespace
