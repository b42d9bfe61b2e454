#pragma once
/// Dropout (Srivastava et al. 2014) with a counter-based mask on the CPU: element i of a
/// call is kept when a 32-bit hash of (i, seed) is at least p * 2^32 (dropout_cpu.h). The
/// seed is drawn from LibTorch's generator, so torch::manual_seed reproduces the masks, and
/// the backward pass recomputes the mask instead of storing it. (Under the profiler,
/// LibTorch 1.13's bernoulli_ masks took ~7.5% of a translator training step here.)
/// The torch::nn module is model/dropout.h.

#include <torch/torch.h>

#include <cstdint>

namespace ropelab {

/// Whether dropout_fused runs for x: a strided CPU tensor of float or double.
bool dropout_fused_supports(const torch::Tensor& x);

/// A call's seed, drawn from LibTorch's default generator.
uint32_t dropout_seed();

/// x with the mask of (seed, p), the kept elements scaled by 1/(1-p), p in [0, 1);
/// differentiable (the gradient goes through the same mask). Without a seed, dropout_seed().
torch::Tensor dropout_fused(const torch::Tensor& x, double p, uint32_t seed);
torch::Tensor dropout_fused(const torch::Tensor& x, double p);

/// The same mask and scale in ATen ops (any device and floating dtype): the reference.
torch::Tensor dropout_reference(const torch::Tensor& x, double p, uint32_t seed);

}  // namespace ropelab
