#pragma once
// The streaming kernel's two passes (streaming_forward.cpp, streaming_backward.cpp), as its
// autograd Function (streaming_attention.cpp) calls them. Internal to ops/attention.

#include <torch/torch.h>

#include <utility>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/operands.h"

namespace ropelab::streaming {

/// The forward pass: -> the output (B, Tq, H, Dh), contiguous, and each row's log-sum-exp
/// (B, H, Tq).
std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                const AttentionExtras& x, const KernelOptions& options);

/// The backward pass from the forward's output and log-sum-exp: -> the gradients of q, k, v
/// and of AttentionExtras's tensors in their order (undefined where the context does not
/// need one, and for the padding mask).
torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                                        const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& out,
                                        const torch::Tensor& lse, const torch::Tensor& grad_out,
                                        const AttentionExtras& x, const KernelOptions& options);

}  // namespace ropelab::streaming
