#pragma once
/// Dropout (Srivastava et al. 2014) with a counter-based mask on the CPU: element i of a
/// call is kept when a 32-bit hash of (i, seed) is at least p * 2^32. The seed is drawn
/// from LibTorch's generator, so torch::manual_seed reproduces the masks, and the backward
/// pass recomputes the mask instead of storing it. (Under the profiler, LibTorch 1.13's
/// bernoulli_ masks took ~7.5% of a translator training step here.) Other devices and
/// dtypes use torch::dropout.

#include <torch/torch.h>

namespace ropelab {

class DropoutImpl : public torch::nn::Module {
 public:
  explicit DropoutImpl(double p = 0.1);
  /// Identity in eval mode or with p = 0; else the masked, 1/(1-p)-scaled input.
  torch::Tensor forward(const torch::Tensor& x);
  double p;
};
TORCH_MODULE(Dropout);

}  // namespace ropelab
