// The fused label-smoothed cross-entropy against its ATen reference, in both CPU builds
// (baseline and AVX2), float, double and bfloat16 (read as it is, computed in fp32: the
// loss fp32, the gradient bfloat16): loss, NLL and the gradient.
#include "ropelab/ops/cross_entropy/cross_entropy.h"

#include "../test_util.h"
#include "kernel_builds.h"

using ropelab::smoothed_loss;
using ropelab::smoothed_loss_reference;
using ropelab::testing::max_diff;

namespace {

class CrossEntropyKernel : public ropelab::testing::KernelTest {};

}  // namespace

TEST_P(CrossEntropyKernel, MatchesTheReferenceWithGradients) {
  const bool bf16 = dtype() == torch::kBFloat16;
  const double tol = dtype() == torch::kDouble ? 1e-12 : 1e-5;
  const double grad_tol = bf16 ? 8e-3 : tol;  // a bfloat16 gradient: 8 bits of mantissa, |g| < 1.7
  for (int64_t V : {37, 1000}) {              // odd, and long enough for the vector loops
    for (double eps : {0.0, 0.1}) {
      SCOPED_TRACE("V " + std::to_string(V) + " eps " + std::to_string(eps));
      auto logits = (3.0 * torch::randn({3, 5, V}, options())).requires_grad_();
      auto target = torch::randint(1, V, {3, 5});
      target[0][4] = 0, target[2][1] = 0;  // pads
      auto [loss, nll] = smoothed_loss(logits, target, eps, 0);
      auto reference_logits = logits.detach().to(torch::kDouble).requires_grad_();
      auto [ref_loss, ref_nll] = smoothed_loss_reference(reference_logits, target, eps, 0);
      EXPECT_EQ(loss.scalar_type(), bf16 ? torch::kFloat : dtype());
      EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), tol * std::abs(ref_loss.item<double>()));
      EXPECT_NEAR(nll.item<double>(), ref_nll.item<double>(), tol * std::abs(ref_nll.item<double>()));
      auto g = torch::autograd::grad({loss * 1.7}, {logits})[0];
      auto g_ref = torch::autograd::grad({ref_loss * 1.7}, {reference_logits})[0];
      EXPECT_EQ(g.scalar_type(), dtype());
      EXPECT_LT(max_diff(g.to(torch::kDouble), g_ref), grad_tol);
      EXPECT_EQ(g[0][4].abs().sum().item<double>(), 0.0);  // pad rows get no gradient
    }
  }
}

// Each row on its own: a sum over rows would hide a wrong row under a small tolerance.
TEST_P(CrossEntropyKernel, EveryRowMatches) {
  const double tol = dtype() == torch::kDouble ? 1e-12 : 1e-5;
  auto logits = torch::randn({40, 1, 29}, options());
  auto target = torch::randint(0, 29, {40, 1});  // some rows are pads (target 0)
  for (int64_t n = 0; n < 40; ++n) {
    auto row = logits.narrow(0, n, 1), t = target.narrow(0, n, 1);
    auto [loss, nll] = smoothed_loss(row, t, 0.2, 0);
    auto [ref_loss, ref_nll] = smoothed_loss_reference(row.to(torch::kDouble), t, 0.2, 0);
    EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), tol * (1.0 + std::abs(ref_loss.item<double>()))) << n;
    EXPECT_NEAR(nll.item<double>(), ref_nll.item<double>(), tol * (1.0 + std::abs(ref_nll.item<double>()))) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CrossEntropyKernel,
                         ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat, torch::kDouble,
                                                                             torch::kBFloat16})),
                         ropelab::testing::kernel_case_name);
