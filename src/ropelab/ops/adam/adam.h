#pragma once
/// Adam's update in one pass per parameter (Kingma and Ba 2015, as torch::optim::Adam
/// computes it), on the optimizer's own state: checkpoints and resumed runs see an ordinary
/// torch::optim::Adam.

#include <torch/torch.h>

#include <type_traits>

namespace ropelab {

/// One update of every parameter of `optimizer` that has a gradient, the gradient multiplied
/// by `grad_scale` first (the per-token mean and the clipping factor, so that no pass over
/// the gradients is needed for them). fp32 CPU parameters without amsgrad take the fused
/// loop (ops/adam/adam_cpu.h); any other parameter set scales its gradients and calls
/// optimizer.step().
void adam_step(torch::optim::Adam& optimizer, double grad_scale);

/// The key under which torch::optim::Adam keeps a parameter's state: its TensorImpl's
/// address, printed as a string in LibTorch 1.x, the pointer itself in 2.x.
using AdamStateKey = std::decay_t<decltype(std::declval<torch::optim::Adam&>().state())>::key_type;
AdamStateKey adam_state_key(const at::Tensor& p);

}  // namespace ropelab
