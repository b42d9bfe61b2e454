// The fused rotary operator against the eager formula: layouts, dtypes, gradients, TorchScript;
// its CPU loop in both builds (baseline and AVX2) for float, double and bfloat16.
#include "ropelab/ops/rotary/rotary.h"

#include <torch/script.h>

#include "../test_util.h"
#include "kernel_builds.h"
#include "ropelab/build_config.h"
#include "ropelab/position/encoders.h"

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

class Rotary : public ropelab::testing::Seeded {};

/// cos/sin tables (T, r/2) for positions offset..offset+T-1.
constexpr auto tables = ropelab::testing::rotary_tables;

struct Layout {
  std::vector<int64_t> shape;
  int64_t time_dim;
};

// [T, B, H, Dh] as in Biderman et al. 2021, [B, H, T, Dh] and [B, T, H, Dh]
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
  auto base = torch::randn({2, 6, 3, 3, 16});        // (B, T, 3, H, Dh) like a fused QKV projection
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
    auto f = [&](const torch::Tensor& qq) {
      return (rotary_fused(qq, c, s, -2, interleaved) * wq).sum().item<double>();
    };
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

// (the kernel on CUDA: tests/devices/devices_test.cpp)
TEST_F(Rotary, TensorsOnTwoDevicesAreRefused) {
  // the meta device stands in for a second device: no kernel reads its (absent) data
  auto q = torch::randn({6, 2, 3, 16});
  auto elsewhere = torch::empty({6, 2, 3, 16}, torch::TensorOptions().device(torch::kMeta));
  auto [c, s] = tables(6, 8, 0, torch::kFloat);
  auto message = ropelab::testing::error_of([&] { rotary_fused_qk(q, elsewhere, c, s, 0, false); });
  EXPECT_NE(message.find("rotary: q and k must be on one device, got cpu and meta"), std::string::npos) << message;
  message = ropelab::testing::error_of([&] { rotary_fused(q, c.to(torch::kMeta), s, 0, false); });
  EXPECT_NE(message.find("rotary: cos/sin are on meta but the rotated tensors on cpu"), std::string::npos) << message;
}

TEST_F(Rotary, SupportsNamesWhereTheFusedKernelRuns) {
  EXPECT_TRUE(rotary_fused_supports(torch::randn({2, 3, 4, 8})));
  EXPECT_TRUE(rotary_fused_supports(torch::randn({2, 3, 4, 8}, torch::kDouble)));
  EXPECT_TRUE(rotary_fused_supports(torch::randn({2, 3, 4, 8}, torch::kBFloat16)));
  EXPECT_FALSE(rotary_fused_supports(torch::randn({2, 3, 4, 8}, torch::kHalf)));
  EXPECT_FALSE(rotary_fused_supports(torch::ones({2, 3, 4, 8}, torch::kInt)));
  EXPECT_FALSE(rotary_fused_supports(torch::randn({2, 8}).to_sparse()));
  EXPECT_FALSE(rotary_fused_supports(torch::empty({2, 3, 4, 8}, torch::TensorOptions().device(torch::kMeta))));
  // where it says no, the kernel refuses too
  auto [c, s] = tables(4, 4, 0, torch::kFloat);
  EXPECT_NE(ropelab::testing::error_of([&] { rotary_fused(torch::randn({2, 3, 4, 8}, torch::kHalf), c, s); }), "");
  if (!torch::cuda::is_available()) return;
  EXPECT_EQ(rotary_fused_supports(torch::randn({2, 3, 4, 8}, torch::kCUDA)), bool(ROPELAB_WITH_CUDA));
  EXPECT_FALSE(
      rotary_fused_supports(torch::randn({2, 3, 4, 8}, torch::TensorOptions(torch::kCUDA).dtype(torch::kBFloat16))));
}

// --- the CPU loop in each build --------------------------------------------------------

namespace {

class RotaryKernel : public ropelab::testing::KernelTest {
 protected:
  /// fused (in dtype()) against the reference computed in double (float for bfloat16, the
  /// loop's arithmetic, then rounded to bfloat16 as c10 rounds).
  void expect_matches(const torch::Tensor& fused, const torch::Tensor& reference) {
    ASSERT_EQ(fused.scalar_type(), dtype());
    if (dtype() != torch::kBFloat16) {
      EXPECT_LT(max_diff(fused, reference), dtype() == torch::kDouble ? 1e-12 : 1e-5);
      return;
    }
    auto expected = reference.to(torch::kFloat).to(torch::kBFloat16).to(torch::kFloat);
    auto error = (fused.to(torch::kFloat) - expected).abs();
    if (build() == ropelab::CpuKernels::baseline) {
      // no FMA in the baseline build: the same float operations as ATen's, the same rounding
      EXPECT_EQ(error.max().item<float>(), 0.0f);
    } else {
      // FMA contractions may move a float result across a rounding boundary: 1 bfloat16 ulp,
      // and rarely (a rounding other than to nearest even would move half the elements)
      EXPECT_TRUE(error.le(expected.abs() * std::ldexp(1.0, -7)).all().item<bool>()) << error.max();
      EXPECT_LT(error.ne(0).to(torch::kDouble).mean().item<double>(), 0.01);
    }
  }
  /// The reference's working precision: double, or float for bfloat16.
  torch::Dtype reference_dtype() const { return dtype() == torch::kBFloat16 ? torch::kFloat : torch::kDouble; }
  torch::Tensor reference_of(const torch::Tensor& x) const { return x.detach().to(reference_dtype()); }
};

}  // namespace

TEST_P(RotaryKernel, MatchesTheEagerFormulaOnEveryLayout) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t time_dim;
    std::vector<int64_t> permutation;  // of a contiguous tensor: a strided input
  };
  const std::vector<Case> cases = {
      {{6, 2, 3, 16}, 0, {}},             // (T, B, H, Dh)
      {{2, 3, 6, 16}, -2, {}},            // (B, H, T, Dh)
      {{2, 6, 3, 16}, 1, {}},             // (B, T, H, Dh)
      {{2, 6, 3, 16}, -2, {0, 2, 1, 3}},  // (B, H, T, Dh) view of (B, T, H, Dh): the odometer path
      {{2, 3, 16, 6}, -2, {0, 1, 3, 2}},  // last stride not 1: a contiguous copy
      {{3, 6, 1, 2, 10}, 1, {}},          // 5 dims, odd Dh
  };
  for (const auto& c : cases) {
    for (bool interleaved : {false, true}) {
      for (int64_t half : {4, 3}) {  // partial rotary: 8 or 6 of the last dims rotate
        SCOPED_TRACE("shape " + c10::str(c10::IntArrayRef(c.shape)) + " time_dim " + std::to_string(c.time_dim) +
                     (interleaved ? " interleaved" : " half") + " r/2=" + std::to_string(half));
        auto x = torch::randn(c.shape, options());
        if (!c.permutation.empty()) x = x.permute(c.permutation);
        const int64_t T = x.size(c.time_dim);
        auto [cd, sd] = tables(T, half, 2, reference_dtype());
        auto expected = rotary_eager(reference_of(x), cd, sd, c.time_dim, interleaved);
        expect_matches(rotary_fused(x, cd, sd, c.time_dim, interleaved), expected);
        auto k = torch::randn(x.sizes(), options());
        auto [rq, rk] = rotary_fused_qk(x, k, cd, sd, c.time_dim, interleaved);
        expect_matches(rq, expected);
        expect_matches(rk, rotary_eager(reference_of(k), cd, sd, c.time_dim, interleaved));
      }
    }
  }
}

// Backward is the inverse rotation: compare with autograd through the eager formula.
TEST_P(RotaryKernel, GradientsMatchAutogradOfTheEagerFormula) {
  for (bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved" : "half");
    auto q = torch::randn({2, 3, 5, 16}, options()).requires_grad_();
    auto k = torch::randn({2, 5, 3, 16}, options()).permute({0, 2, 1, 3}).detach().requires_grad_();
    auto [c, s] = tables(5, 6, 2, reference_dtype());  // partial: 12 of 16 dims
    auto wq = torch::randn({2, 3, 5, 16}, options()), wk = torch::randn({2, 3, 5, 16}, options());
    auto [rq, rk] = rotary_fused_qk(q, k, c, s, -2, interleaved);
    auto fused = torch::autograd::grad({(rq * wq).sum() + (rk * wk).sum()}, {q, k});
    auto q_ref = reference_of(q).requires_grad_(), k_ref = reference_of(k).requires_grad_();
    auto loss = (rotary_eager(q_ref, c, s, -2, interleaved) * reference_of(wq)).sum() +
                (rotary_eager(k_ref, c, s, -2, interleaved) * reference_of(wk)).sum();
    auto expected = torch::autograd::grad({loss}, {q_ref, k_ref});
    expect_matches(fused[0], expected[0]);
    expect_matches(fused[1], expected[1]);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, RotaryKernel,
                         ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat, torch::kDouble,
                                                                             torch::kBFloat16})),
                         ropelab::testing::kernel_case_name);
