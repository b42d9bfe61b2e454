// Adam in one pass (ops/adam/adam.h) against torch::optim::Adam, in both CPU builds: the
// same parameters and moments after several updates, with weight decay and a gradient
// scale, on the optimizer's own state (so a checkpoint of it is an ordinary Adam's).
#include "ropelab/ops/adam/adam.h"

#include "../test_util.h"
#include "kernel_builds.h"

using ropelab::adam_step;
using ropelab::testing::max_diff;

namespace {

class AdamKernel : public ropelab::testing::KernelTest {};

std::vector<torch::Tensor> parameters() {
  // odd sizes, and one long enough for the vector loop and several threads' blocks
  return {torch::randn({70001}), torch::randn({3, 5}), torch::randn({17})};
}

}  // namespace

TEST_P(AdamKernel, EqualsTorchAdamOnItsOwnState) {
  for (double decay : {0.0, 0.01}) {
    SCOPED_TRACE("weight decay " + std::to_string(decay));
    auto ours = parameters(), theirs = std::vector<torch::Tensor>();
    for (auto& p : ours) theirs.push_back(p.clone().requires_grad_()), p.requires_grad_();
    const auto options = torch::optim::AdamOptions(1e-2).betas({0.9, 0.98}).eps(1e-9).weight_decay(decay);
    torch::optim::Adam fused(ours, options), reference(theirs, options);
    const double scale = 0.25;  // e.g. the mean over 4 tokens
    for (int step = 0; step < 5; ++step) {
      for (size_t i = 0; i < ours.size(); ++i) {
        auto g = torch::randn(ours[i].sizes());
        ours[i].mutable_grad() = g.clone();
        theirs[i].mutable_grad() = g * scale;
      }
      adam_step(fused, scale);
      reference.step();
    }
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_LT(max_diff(ours[i], theirs[i]), 1e-5) << i;
      const auto key = ropelab::adam_state_key(ours[i]);
      const auto key_ref = ropelab::adam_state_key(theirs[i]);
      auto& a = static_cast<torch::optim::AdamParamState&>(*fused.state().at(key));
      auto& b = static_cast<torch::optim::AdamParamState&>(*reference.state().at(key_ref));
      EXPECT_EQ(a.step(), b.step());
      EXPECT_LT(max_diff(a.exp_avg(), b.exp_avg()), 1e-6);
      EXPECT_LT(max_diff(a.exp_avg_sq(), b.exp_avg_sq()), 1e-6);
    }
  }
}

// Second moments in float's denormal range (one tiny gradient, then none, as a CoPE
// position that a batch seldom reaches gets): the update stays finite and equals
// torch::optim::Adam's. An approximate reciprocal square root reads a denormal as 0 and
// gives NaN there.
TEST_P(AdamKernel, DenormalMomentsStayFinite) {
  auto ours = torch::randn({70001}).requires_grad_();
  auto theirs = ours.detach().clone().requires_grad_();
  const auto options = torch::optim::AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8);
  torch::optim::Adam fused({ours}, options), reference({theirs}, options);
  for (int step = 0; step < 30; ++step) {
    auto g = step == 0 ? torch::randn({70001}) * 1e-19 : torch::zeros({70001});  // v = 1e-3 g^2: denormal
    ours.mutable_grad() = g.clone();
    theirs.mutable_grad() = g.clone();
    adam_step(fused, 1.0);
    reference.step();
  }
  EXPECT_TRUE(torch::isfinite(ours).all().item<bool>());
  EXPECT_LT(max_diff(ours, theirs), 1e-5);
}

// Parameters the loop does not take (double here) go through torch::optim::Adam with their
// gradients scaled: the same result.
TEST_P(AdamKernel, OtherParametersFallBackToTorchAdam) {
  auto p = torch::randn({9}, torch::kDouble).requires_grad_();
  auto q = p.detach().clone().requires_grad_();
  torch::optim::Adam fused({p}, torch::optim::AdamOptions(1e-2)), reference({q}, torch::optim::AdamOptions(1e-2));
  auto g = torch::randn({9}, torch::kDouble);
  p.mutable_grad() = g.clone();
  q.mutable_grad() = g * 0.5;
  adam_step(fused, 0.5);
  reference.step();
  EXPECT_LT(max_diff(p, q), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Ops, AdamKernel, ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat})),
                         ropelab::testing::kernel_case_name);
