// CoPE's fused probability loops against their ATen reference (autograd through sigmoid,
// suffix cumsum, gather and softmax), in both CPU builds, float and double: probabilities
// and both gradients, with causal, windowed, padded and key-less rows, with positions that
// reach the cap P - 1 and that do not (and a single column), and logits far enough below
// their rows' maxima that exp underflows.
#include "ropelab/ops/cope/cope.h"

#include <limits>

#include "../test_util.h"
#include "kernel_builds.h"
#include "ropelab/ops/attention/chunked_attention.h"

using ropelab::cope_probabilities;
using ropelab::cope_probabilities_reference;
using ropelab::KeyVisibility;
using ropelab::testing::max_diff;

namespace {

class CopeKernel : public ropelab::testing::KernelTest {};

struct Case {
  const char* name;
  KeyVisibility visibility;
  int64_t P;
  bool padded;
};

}  // namespace

TEST_P(CopeKernel, MatchesTheReferenceWithGradients) {
  const double tol = dtype() == torch::kDouble ? 1e-12 : 2e-6;
  const int64_t B = 2, H = 3, tq = 11, tk = 37;  // Tq < Tk: queries aligned with the last keys
  for (const auto& c :
       {Case{"causal", {true, 0, 0}, 38, false}, Case{"causal capped", {true, 0, 0}, 4, false},
        Case{"one column", {true, 0, 0}, 1, false}, Case{"window, sinks, padded", {true, 6, 2}, 5, true},
        Case{"bidirectional padded", {false, 0, 0}, 9, true}}) {
    SCOPED_TRACE(c.name);
    auto scores = (2.0 * torch::randn({B, H, tq, tk}, options()));
    scores.select(-1, 30).sub_(150.0);  // logits far below the rows' maxima: exp underflows
    scores.requires_grad_();
    auto columns = torch::randn({B, H, tq, c.P}, options()).requires_grad_();
    auto hidden = ropelab::hidden_keys(c.visibility, tq, tk, 0, tq, 0, tk, torch::kCPU);  // (Tq, Tk)
    if (c.padded) {
      auto pad = torch::zeros({B, 1, 1, tk}, torch::kBool);
      pad[1][0][0].narrow(0, 20, 17).fill_(true);  // every key of batch 1's late queries but the sinks
      pad[0][0][0][28] = true;                     // inside batch 0's windows
      hidden = hidden | pad;
    }
    const auto probs = cope_probabilities(scores, columns, hidden);
    ASSERT_NE(probs.grad_fn()->name().find("CopeProbabilities"), std::string::npos) << probs.grad_fn()->name();
    auto ref_scores = scores.detach().to(torch::kDouble).requires_grad_();
    auto ref_columns = columns.detach().to(torch::kDouble).requires_grad_();
    const auto ref = cope_probabilities_reference(ref_scores, ref_columns, hidden);
    EXPECT_EQ(probs.scalar_type(), dtype());
    EXPECT_LT(max_diff(probs.to(torch::kDouble), ref), tol);
    const auto weights = torch::randn({B, H, tq, tk}, torch::kDouble);
    const auto grads = torch::autograd::grad({(probs.to(torch::kDouble) * weights).sum()}, {scores, columns});
    const auto ref_grads = torch::autograd::grad({(ref * weights).sum()}, {ref_scores, ref_columns});
    EXPECT_GT(grads[0].abs().max().item<double>(), 1e-3);  // both gradients are exercised
    if (c.P > 1) {                                         // one column: a constant, no gradient
      EXPECT_GT(grads[1].abs().max().item<double>(), 1e-3);
    }
    EXPECT_LT(max_diff(grads[0].to(torch::kDouble), ref_grads[0]), 5 * tol);
    EXPECT_LT(max_diff(grads[1].to(torch::kDouble), ref_grads[1]), 5 * tol);
    // the hidden keys: no probability, no gradient
    const auto h = hidden.expand({B, H, tq, tk});
    EXPECT_EQ(probs.masked_select(h).abs().sum().item<double>(), 0.0);
    EXPECT_EQ(grads[0].masked_select(h).abs().sum().item<double>(), 0.0);
  }
}

// A query that sees no key at all gets zeros, and no gradient.
TEST_P(CopeKernel, AQueryThatSeesNoKeyGetsZeros) {
  auto scores = torch::randn({1, 2, 3, 5}, options()).requires_grad_();
  auto columns = torch::randn({1, 2, 3, 4}, options()).requires_grad_();
  auto hidden = torch::zeros({3, 5}, torch::kBool);
  hidden[1].fill_(true);
  const auto probs = cope_probabilities(scores, columns, hidden);
  EXPECT_LT(max_diff(probs, cope_probabilities_reference(scores, columns, hidden)), 1e-6);
  EXPECT_EQ(probs.select(2, 1).abs().sum().item<double>(), 0.0);
  EXPECT_NEAR(probs.select(2, 0).sum(-1).sub(1).abs().max().item<double>(), 0.0, 1e-6);
  (probs * torch::randn_like(probs)).sum().backward();
  EXPECT_EQ(scores.grad().select(2, 1).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(columns.grad().select(2, 1).abs().sum().item<double>(), 0.0);
  EXPECT_GT(columns.grad().select(2, 0).abs().sum().item<double>(), 0.0);
}

// A NaN score (a diverged model) touches its own row only: every other row, of its head
// and of the other head, is as without it, and nothing reads outside a row.
TEST_P(CopeKernel, ANanScoreStaysInItsRow) {
  auto scores = torch::randn({1, 2, 6, 6}, options());
  scores[0][1][5][2] = std::numeric_limits<double>::quiet_NaN();
  auto columns = torch::randn({1, 2, 6, 3}, options()).requires_grad_();
  scores.requires_grad_();
  const auto hidden = ropelab::hidden_keys({true, 0, 0}, 6, 6, 0, 6, 0, 6, torch::kCPU);
  const auto probs = cope_probabilities(scores, columns, hidden);
  (probs * torch::randn_like(probs)).nan_to_num(0.0).sum().backward();
  const auto ref = cope_probabilities_reference(scores.detach().select(1, 0).unsqueeze(1),
                                                columns.detach().select(1, 0).unsqueeze(1), hidden);
  EXPECT_LT(max_diff(probs.select(1, 0).unsqueeze(1), ref), 1e-6);  // the other head
  EXPECT_LT(max_diff(probs.select(1, 1).narrow(1, 0, 5),
                     cope_probabilities_reference(scores.detach().select(1, 1).narrow(1, 0, 5).unsqueeze(0),
                                                  columns.detach().select(1, 1).narrow(1, 0, 5).unsqueeze(0),
                                                  hidden.narrow(0, 0, 5))[0]),
            1e-6);  // the other rows of its head
}

TEST_P(CopeKernel, RejectsAMaskOfOtherShape) {
  const auto scores = torch::randn({2, 2, 3, 5}, options()), columns = torch::randn({2, 2, 3, 4}, options());
  const auto message = ropelab::testing::error_of([&] {
    cope_probabilities(scores, columns, torch::zeros({2, 2, 3, 5}, torch::kBool));
  });
  EXPECT_NE(message.find("hidden must broadcast to (B, 1, n, Tk) = (2, 1, 3, 5), got [2, 2, 3, 5]"), std::string::npos)
      << message;
}

INSTANTIATE_TEST_SUITE_P(Ops, CopeKernel,
                         ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat, torch::kDouble})),
                         ropelab::testing::kernel_case_name);
