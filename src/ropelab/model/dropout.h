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
  /// How many times forward has dropped (training, p > 0): a module may serve several sites
  /// (a layer's residual dropout runs after each of its sublayers), so `bench train` counts
  /// the drops per step here to compare work with a peer.
  int64_t drops = 0;
};
TORCH_MODULE(Dropout);

}  // namespace ropelab
