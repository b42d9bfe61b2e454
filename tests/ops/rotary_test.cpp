// The fused rotary operator against the eager formula: layouts, dtypes, gradients, TorchScript.
#include "ropelab/ops/rotary.h"

#include "ropelab/position/encoders.h"

#include "../test_util.h"

#include <torch/script.h>

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

class Rotary : public ropelab::testing::Seeded {};

/// cos/sin tables (T, r/2) for positions offset..offset+T-1.
std::pair<torch::Tensor, torch::Tensor> tables(int64_t T, int64_t half, int64_t offset, torch::Dtype dtype) {
  auto inv = torch::pow(10000.0, -torch::arange(half, torch::kDouble) / static_cast<double>(half));
  auto angles = torch::arange(offset, offset + T, torch::kDouble).unsqueeze(1) * inv;
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

struct Layout {
  std::vector<int64_t> shape;
  int64_t time_dim;
};

// [T, B, H, Dh] as in the seed, [B, H, T, Dh] and [B, T, H, Dh]
const std::vector<Layout> kLayouts = {{{6, 2, 3, 16}, 0}, {{2, 3, 6, 16}, -2}, {{2, 6, 3, 16}, 1}};

}  // namespace

TEST_F(Rotary, FusedScriptAndEagerAgreeOnEveryLayout) {
  for (const auto& layout : kLayouts) {
    for (bool interleaved : {false, true}) {
      for (int64_t half : {8, 4}) {  // full and partial rotary
        SCOPED_TRACE("time_dim " + std::to_string(layout.time_dim) + (interleaved ? " interleaved" : " half") +
                     " r/2=" + std::to_string(half));
        auto x = torch::randn(layout.shape);
        auto [c, s] = tables(6, half, 3, torch::kFloat);
        auto eager = rotary_eager(x, c, s, layout.time_dim, interleaved);
        EXPECT_LT(max_diff(rotary_fused(x, c, s, layout.time_dim, interleaved), eager), 1e-5);
        EXPECT_LT(max_diff(rotary_script(x, c, s, layout.time_dim, interleaved), eager), 1e-5);
      }
    }
  }
}

TEST_F(Rotary, EagerFormulaIsRotaryOfThePositionEncoder) {
  RotaryEncoder enc(PositionOptions().rotary_impl(RotaryImpl::eager), PositionGeometry{48, 3, false}, 1);
  auto x = torch::randn({2, 3, 6, 16});
  auto [c, s] = tables(6, 8, 0, torch::kFloat);
  EXPECT_LT(max_diff(enc.rotate(x, torch::arange(6)), rotary_eager(x, c, s, -2, false)), 1e-5);
}

TEST_F(Rotary, DtypesAndStridedInputs) {
  auto base = torch::randn({2, 6, 3, 3, 16});  // (B, T, 3, H, Dh) like a fused QKV projection
  auto q = base.select(2, 0).permute({0, 2, 1, 3});  // (B, H, T, Dh), strided
  auto [c, s] = tables(6, 8, 0, torch::kFloat);
  auto eager = rotary_eager(q, c, s, -2, false);
  EXPECT_LT(max_diff(rotary_fused(q, c, s, -2, false), eager), 1e-5);
  auto [cd, sd] = tables(6, 8, 0, torch::kDouble);
  auto qd = q.to(torch::kDouble);
  EXPECT_LT(max_diff(rotary_fused(qd, cd, sd, -2, true), rotary_eager(qd, cd, sd, -2, true)), 1e-12);
  auto qb = q.to(torch::kBFloat16);
  auto fused_bf16 = rotary_fused(qb, c, s, -2, false);
  EXPECT_EQ(fused_bf16.scalar_type(), torch::kBFloat16);
  EXPECT_LT(max_diff(fused_bf16, eager), 0.05);  // bfloat16 keeps ~3 significant digits
}

TEST_F(Rotary, QkTogetherEqualsEachAlone) {
  auto q = torch::randn({2, 3, 6, 16}), k = torch::randn({2, 3, 6, 16});
  auto [c, s] = tables(6, 8, 5, torch::kFloat);
  auto [rq, rk] = rotary_fused_qk(q, k, c, s, -2, true);
  EXPECT_LT(max_diff(rq, rotary_fused(q, c, s, -2, true)), 0.0 + 1e-12);
  EXPECT_LT(max_diff(rk, rotary_fused(k, c, s, -2, true)), 0.0 + 1e-12);
}

// Backward is the inverse rotation: compare with autograd through the eager formula.
TEST_F(Rotary, GradientsMatchAutogradOfTheEagerFormula) {
  for (bool interleaved : {false, true}) {
    auto q = torch::randn({2, 3, 5, 16}, torch::TensorOptions().dtype(torch::kDouble).requires_grad(true));
    auto k = torch::randn({2, 3, 5, 16}, torch::TensorOptions().dtype(torch::kDouble).requires_grad(true));
    auto [c, s] = tables(5, 6, 2, torch::kDouble);  // partial: 12 of 16 dims
    auto wq = torch::randn({2, 3, 5, 16}, torch::kDouble), wk = torch::randn({2, 3, 5, 16}, torch::kDouble);
    auto [rq, rk] = rotary_fused_qk(q, k, c, s, -2, interleaved);
    auto fused = torch::autograd::grad({(rq * wq).sum() + (rk * wk).sum()}, {q, k});
    auto eager = torch::autograd::grad(
        {(rotary_eager(q, c, s, -2, interleaved) * wq).sum() + (rotary_eager(k, c, s, -2, interleaved) * wk).sum()},
        {q, k});
    EXPECT_LT(max_diff(fused[0], eager[0]), 1e-12);
    EXPECT_LT(max_diff(fused[1], eager[1]), 1e-12);
    // and a central finite difference on one element
    auto f = [&](const torch::Tensor& qq) { return (rotary_fused(qq, c, s, -2, interleaved) * wq).sum().item<double>(); };
    auto plus = q.detach().clone(), minus = q.detach().clone();
    plus[1][2][3][4] += 1e-6;
    minus[1][2][3][4] -= 1e-6;
    EXPECT_NEAR(fused[0][1][2][3][4].item<double>(), (f(plus) - f(minus)) / 2e-6, 1e-6);
  }
}

TEST_F(Rotary, CallableFromTorchScriptCompiledAtRunTime) {
  auto unit = compile_script(R"JIT(
def f(x: Tensor, cos: Tensor, sin: Tensor):
    return ropelab.rotary(x, cos, sin, -2, False)

def g(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor):
    return ropelab.rotary_qk(q, k, cos, sin, 0, True)
)JIT");
  auto x = torch::randn({2, 3, 6, 16});
  auto [c, s] = tables(6, 8, 0, torch::kFloat);
  EXPECT_LT(max_diff(unit->run_method("f", x, c, s).toTensor(), rotary_eager(x, c, s, -2, false)), 1e-5);
  auto seed_layout = torch::randn({6, 2, 3, 16});
  auto out = unit->run_method("g", seed_layout, seed_layout, c, s).toTuple();
  EXPECT_LT(max_diff(out->elements()[0].toTensor(), rotary_eager(seed_layout, c, s, 0, true)), 1e-5);
}

TEST_F(Rotary, EncoderImplementationsAgree) {
  auto x = torch::randn({2, 4, 7, 16});
  std::vector<torch::Tensor> outs;
  for (auto impl : {RotaryImpl::eager, RotaryImpl::script, RotaryImpl::fused}) {
    RotaryEncoder enc(PositionOptions().rotary_impl(impl).fraction(0.5), PositionGeometry{64, 4, false}, 1);
    outs.push_back(enc.rotate(x, torch::arange(3, 10)));
    auto [q, k] = enc.rotate_pair(x, x, torch::arange(3, 10));
    EXPECT_LT(max_diff(q, outs.back()), 1e-6);
  }
  EXPECT_LT(max_diff(outs[0], outs[1]), 1e-5);
  EXPECT_LT(max_diff(outs[0], outs[2]), 1e-5);
}

TEST_F(Rotary, BadArgumentsAreNamed) {
  auto x = torch::randn({2, 3, 6, 16});
  auto [c, s] = tables(5, 8, 0, torch::kFloat);
  auto message = ropelab::testing::error_of([&] { rotary_fused(x, c, s, -2, false); });
  EXPECT_NE(message.find("cos/sin must be (T, r/2) with T = 6, got [5, 8]"), std::string::npos) << message;
}

TEST_F(Rotary, CudaKernelMatchesEager) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto x = torch::randn({6, 2, 3, 16}, torch::kCUDA);
  auto [c, s] = tables(6, 6, 1, torch::kFloat);
  for (bool interleaved : {false, true}) {
    auto eager = rotary_eager(x, c.cuda(), s.cuda(), 0, interleaved);
    EXPECT_LT(max_diff(rotary_fused(x, c, s, 0, interleaved).cpu(), eager.cpu()), 1e-5);
  }
}
