// The fused CPU attention against scaled dot-product attention in ATen ops: outputs and
// the gradients of q, k and v, float and double, with padding and causal masks. One CPU
// build (its matrix products are BLAS calls), so no build parameter.
#include <cmath>

#include "../test_util.h"
#include "ropelab/ops/attention/fused_attention.h"

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

/// softmax(q k^T / sqrt(Dh), hidden keys -inf) v. Query i sees key j when j <= i + Tk - Tq
/// (causal) and key j is not padding.
torch::Tensor attention_reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& pad, bool causal) {
  const int64_t Tq = q.size(2), Tk = k.size(2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  auto hidden = torch::zeros({1, 1, Tq, Tk}, torch::kBool);
  if (causal) hidden = torch::ones({Tq, Tk}, torch::kBool).triu(Tk - Tq + 1).view({1, 1, Tq, Tk});
  if (pad.defined()) hidden = hidden | pad.view({pad.size(0), 1, 1, Tk});
  return torch::matmul(torch::softmax(scores.masked_fill(hidden, -INFINITY), -1), v);
}

class FusedAttentionKernel : public ropelab::testing::Seeded, public ::testing::WithParamInterface<torch::Dtype> {};

}  // namespace

TEST_P(FusedAttentionKernel, MatchesTheAtenFormulaWithGradients) {
  const auto dtype = GetParam();
  const double tol = dtype == torch::kDouble ? 1e-12 : 1e-5;
  for (bool causal : {false, true}) {
    for (bool padded : {false, true}) {
      SCOPED_TRACE(std::string(causal ? "causal" : "full") + (padded ? " padded" : ""));
      // q, k, v as strided views of one (B, T, 3, H, Dh) projection; Tq = 5 < Tk = 7
      auto qkv = torch::randn({2, 7, 3, 3, 8}, torch::TensorOptions().dtype(dtype).requires_grad(true));
      auto views = qkv.permute({2, 0, 3, 1, 4}).unbind(0);
      auto q = views[0].narrow(2, 2, 5), k = views[1], v = views[2];
      ASSERT_TRUE(fused_attention_available(q, k, v));
      auto pad =
          padded ? torch::tensor({{0, 0, 0, 0, 0, 1, 1}, {0, 0, 1, 0, 0, 0, 0}}).to(torch::kBool) : torch::Tensor();
      auto w = torch::randn({2, 3, 5, 8}, dtype);
      auto fused = fused_attention_cpu(q, k, v, pad, {}, {KeyVisibility{causal}});
      auto expected = attention_reference(q, k, v, pad, causal);
      EXPECT_LT(max_diff(fused, expected), tol);
      auto g = torch::autograd::grad({(fused * w).sum()}, {qkv})[0];
      auto g_ref = torch::autograd::grad({(expected * w).sum()}, {qkv})[0];
      EXPECT_LT(max_diff(g, g_ref), tol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, FusedAttentionKernel, ::testing::Values(torch::kFloat, torch::kDouble),
                         [](const ::testing::TestParamInfo<torch::Dtype>& info) {
                           return std::string(c10::toString(info.param));
                         });
