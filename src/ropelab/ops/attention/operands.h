#pragma once
/// What the CPU attention kernels (fused_attention.h, streaming_attention.h) accept.

#include <torch/torch.h>

namespace ropelab {

/// Whether q (B, H, Tq, Dh), k and v (B, H, Tk, Dh) are CPU tensors of float or double
/// (with the BLAS routine for that type loaded) with unit last strides, and the biases,
/// where defined, of q's type on the CPU in the shapes the kernels take: dense
/// (1|B, H, Tq, Tk), relative (H, Tq + Tk - 1).
bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& dense_bias, const torch::Tensor& relative_bias);

}  // namespace ropelab
