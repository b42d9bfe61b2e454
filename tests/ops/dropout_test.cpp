// The counter-based dropout op against its ATen reference (the same hash in tensor ops),
// in both CPU builds (baseline and AVX2), float and double: mask, scale and gradient.
#include "ropelab/ops/dropout/dropout.h"

#include "../test_util.h"
#include "kernel_builds.h"

using namespace ropelab;

namespace {

class DropoutKernel : public ropelab::testing::KernelTest {};

}  // namespace

TEST_P(DropoutKernel, MaskAndScaleAreTheReferences) {
  for (double p : {0.1, 0.5, 0.9}) {
    for (uint32_t seed : {0u, 12345u, 4000000000u}) {
      SCOPED_TRACE("p " + std::to_string(p) + " seed " + std::to_string(seed));
      auto x = torch::randn({7, 13, 50}, options());
      auto y = dropout_fused(x, p, seed);
      EXPECT_TRUE(torch::equal(y, dropout_reference(x, p, seed)));
      const double kept = y.ne(0).to(torch::kDouble).mean().item<double>();
      EXPECT_NEAR(kept, 1.0 - p, 0.03);  // 4550 draws: sd below 0.008
      // a strided input is masked by its elements' logical order
      auto xt = x.transpose(0, 2);
      EXPECT_TRUE(torch::equal(dropout_fused(xt, p, seed), dropout_reference(xt, p, seed)));
    }
  }
}

TEST_P(DropoutKernel, GradientGoesThroughTheSameMask) {
  auto x = torch::randn({300, 40}, options()).requires_grad_();
  auto w = torch::randn({300, 40}, options());
  auto y = dropout_fused(x, 0.3, 777u);
  auto g = torch::autograd::grad({(y * w).sum()}, {x})[0];
  EXPECT_TRUE(torch::equal(g, dropout_reference(w, 0.3, 777u)));
  auto x_ref = x.detach().clone().requires_grad_();
  auto g_ref = torch::autograd::grad({(dropout_reference(x_ref, 0.3, 777u) * w).sum()}, {x_ref})[0];
  EXPECT_TRUE(torch::equal(g, g_ref));
}

TEST_P(DropoutKernel, SeedComesFromTheGenerator) {
  auto x = torch::randn({50, 20}, options());
  torch::manual_seed(11);
  auto a = dropout_fused(x, 0.4);
  torch::manual_seed(11);
  const auto seed = dropout_seed();
  EXPECT_TRUE(torch::equal(a, dropout_reference(x, 0.4, seed)));
  EXPECT_FALSE(torch::equal(a, dropout_fused(x, 0.4)));  // the next call draws a new seed
}

INSTANTIATE_TEST_SUITE_P(Ops, DropoutKernel,
                         ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat, torch::kDouble})),
                         ropelab::testing::kernel_case_name);

TEST(DropoutOp, SupportsStridedCpuFloatAndDouble) {
  EXPECT_TRUE(dropout_fused_supports(torch::randn({3})));
  EXPECT_TRUE(dropout_fused_supports(torch::randn({3}, torch::kDouble)));
  EXPECT_FALSE(dropout_fused_supports(torch::randn({3}, torch::kBFloat16)));
  EXPECT_FALSE(dropout_fused_supports(torch::randn({3, 2}).to_sparse()));
  EXPECT_NE(ropelab::testing::error_of([] { dropout_fused(torch::randn({3}), 1.0, 0u); }).find("p must be in [0, 1)"),
            std::string::npos);
}
