// What ropelab hands PyTorch's scaled_dot_product_attention: the boolean mask (or its is_causal
// flag) against the keys every other kernel hides (hidden_keys of chunked_attention.h), for
// causal and full attention, cached decoding (Tq < Tk) and padding, and the calls it is
// offered. The call itself runs only where the LibTorch has it (devices_test.cpp, on a GPU).
#include "ropelab/ops/attention/sdpa_attention.h"

#include "../test_util.h"
#include "ropelab/ops/attention/chunked_attention.h"

using namespace ropelab;

namespace {

/// (B, Tq, Tk) true where SDPA lets query i see key j: the mask, or is_causal's top-left
/// triangle, or every key.
torch::Tensor sdpa_sees(const torch::Tensor& pad, bool causal, int64_t batch, int64_t tq, int64_t tk) {
  const auto mask = sdpa_visible_keys(pad, causal, tq, tk, torch::kCPU);
  if (mask.defined()) {
    EXPECT_FALSE(sdpa_is_causal(pad, causal, tq, tk));
    EXPECT_EQ(mask.size(1), 1);
    return mask.expand({batch, 1, tq, tk}).squeeze(1);
  }
  if (sdpa_is_causal(pad, causal, tq, tk))  // PyTorch's is_causal: key j <= query i
    return torch::ones({tq, tk}, torch::kBool).tril().expand({batch, tq, tk});
  return torch::ones({batch, tq, tk}, torch::kBool);
}

}  // namespace

TEST(SdpaAttention, TheMaskShowsEveryQueryTheKeysTheOtherKernelsShowIt) {
  const int64_t batch = 2;
  for (bool causal : {false, true}) {
    for (bool padded : {false, true}) {
      for (auto [tq, tk] : {std::pair<int64_t, int64_t>{6, 6}, {1, 6}, {3, 7}}) {
        SCOPED_TRACE(std::string(causal ? "causal" : "full") + (padded ? " padded" : "") + " Tq " + std::to_string(tq) +
                     " Tk " + std::to_string(tk));
        torch::Tensor pad;
        if (padded) {
          pad = torch::zeros({batch, tk}, torch::kBool);
          pad[0][tk - 1] = true;
          pad[1][1] = true;
        }
        auto expected = hidden_keys(KeyVisibility{causal}, tq, tk, 0, tq, 0, tk, torch::kCPU).logical_not();
        expected = expected.unsqueeze(0).expand({batch, tq, tk});
        if (padded) expected = expected.logical_and(pad.logical_not().unsqueeze(1));
        EXPECT_TRUE(torch::equal(sdpa_sees(pad, causal, batch, tq, tk), expected));
      }
    }
  }
}

TEST(SdpaAttention, IsOfferedNoBiasNoWindowAndNotTheCpu) {
  auto q = torch::randn({1, 2, 4, 8});
  // the CPU keeps ropelab's kernels, with or without this LibTorch's SDPA
  EXPECT_FALSE(sdpa_attention_available(q, q, q, {}, KeyVisibility{true}));
  if (sdpa_compiled()) GTEST_SKIP() << "this LibTorch has scaled_dot_product_attention; devices_test.cpp runs it";
  EXPECT_THROW(sdpa_attention(q, q, q, {}, true, 0.0), std::logic_error);
}
