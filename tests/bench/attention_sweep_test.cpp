// `bench attention` names its variants with the attention module's own spellings, and skips
// the cases that hold (B, H, T, T) scores by the softmax backend's own path rule.
#include "ropelab/bench/attention_sweep.h"

#include "../test_util.h"

using namespace ropelab;

TEST(AttentionSweep, VariantsAreBackendsOrSoftmaxKernels) {
  EXPECT_EQ(parse_attention_variant("performer").type, AttentionType::performer);
  const auto softmax = parse_attention_variant("softmax");
  EXPECT_EQ(softmax.type, AttentionType::softmax);
  EXPECT_EQ(softmax.kernel, AttentionKernel::automatic);
  for (auto kernel : {AttentionKernel::streaming, AttentionKernel::chunked, AttentionKernel::materialized}) {
    const auto variant = parse_attention_variant(to_string(kernel));
    EXPECT_EQ(variant.type, AttentionType::softmax);
    EXPECT_EQ(variant.kernel, kernel);
  }
  const auto error = ropelab::testing::error_of([] { parse_attention_variant("flash"); });
  EXPECT_NE(error.find("unknown variant 'flash' (a backend: softmax | performer; or a softmax kernel: auto | "
                       "streaming | chunked | materialized)"),
            std::string::npos)
      << error;
}

TEST(AttentionSweep, MaterializesWhereTheSoftmaxPathDoes) {
  AttentionBenchOptions o;
  o.batch = 1, o.heads = 8;
  const torch::Device cpu(torch::kCPU), gpu(torch::kCUDA, 0);
  auto materializes = [&](const char* name, int64_t length, const torch::Device& device) {
    return variant_materializes(parse_attention_variant(name), o, length, device);
  };
  EXPECT_TRUE(materializes("materialized", 1024, cpu));
  EXPECT_FALSE(materializes("streaming", 1024, cpu));
  EXPECT_FALSE(materializes("softmax", 1024, cpu));  // auto: the streaming kernel
  EXPECT_FALSE(materializes("chunked", 1024, cpu));
  EXPECT_FALSE(materializes("performer", 1024, cpu));
  EXPECT_TRUE(materializes("materialized", 1024, gpu));  // ATen ops
  EXPECT_FALSE(materializes("streaming", 1024, gpu));    // the chunked form
  EXPECT_TRUE(materializes("softmax", 1024, gpu));       // 8M scores: within one chunk, ATen ops
  EXPECT_FALSE(materializes("softmax", 2048, gpu));      // 33M scores: the chunked form
}
