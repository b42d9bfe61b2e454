#pragma once
/// The Dropout module: the counter-based CPU op (ops/dropout/dropout.h) where it runs,
/// torch::dropout on other devices and dtypes.

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
