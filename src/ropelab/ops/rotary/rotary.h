#pragma once
/// Fused rotary position embedding (Su et al. 2021): one pass that reads x and the
/// per-position cos/sin tables and writes the rotated output, for q and k together.
/// x has any layout (..., T, ..., Dh): `time_dim` names the time axis, the last axis is
/// the head dimension. cos and sin are (T, r/2): the angles of each time step's r/2 pairs
/// (the first r dims rotate, the rest pass through). `interleaved` pairs (2i, 2i+1)
/// (GPT-J); otherwise (i, i + r/2) (GPT-NeoX). Autograd: the backward pass is the inverse
/// rotation (sin negated), fused the same way.
///
/// TorchScript operators (registered by ops/register.cpp, in build/libropelab_ops.so):
///   ropelab::rotary(Tensor x, Tensor cos, Tensor sin, int time_dim=-2, bool interleaved=False) -> Tensor
///   ropelab::rotary_qk(Tensor q, Tensor k, Tensor cos, Tensor sin, int time_dim=-2,
///                      bool interleaved=False) -> (Tensor, Tensor)

#include <torch/torch.h>

namespace torch::jit {
struct CompilationUnit;
}

#include <memory>
#include <string>
#include <utility>

namespace ropelab {

/// How RotaryEncoder rotates: `eager` (the GPT-NeoX formula in ATen ops), `script` (the
/// same formula as TorchScript compiled at run time: fused by LibTorch on CUDA, unfused on
/// a CPU build without LLVM such as Debian's), `fused` (this kernel; the default).
enum class RotaryImpl { eager, script, fused };
std::string to_string(RotaryImpl impl);
RotaryImpl parse_rotary_impl(const std::string& name);

/// Whether rotary_fused and rotary_fused_qk run for x: a strided tensor on the CPU (float,
/// double, bfloat16; the CPU loop, ops/rotary/rotary_cpu.h) or, in a CUDA build, on a CUDA
/// device (float, double, fp16, bf16; rotary_cuda.cu). Otherwise rotate with
/// rotary_eager_broadcast.
bool rotary_fused_supports(const torch::Tensor& x);

/// Fused rotation of one tensor, differentiable.
torch::Tensor rotary_fused(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                           int64_t time_dim = -2, bool interleaved = false);

/// Fused rotation of q and k in one parallel pass, differentiable.
std::pair<torch::Tensor, torch::Tensor> rotary_fused_qk(const torch::Tensor& q, const torch::Tensor& k,
                                                        const torch::Tensor& cos, const torch::Tensor& sin,
                                                        int64_t time_dim = -2, bool interleaved = false);

/// The eager GPT-NeoX formula in ATen ops, with cos/sin already broadcastable to the
/// first r dims of x (..., r/2): any layout, per-sequence positions included.
torch::Tensor rotary_eager_broadcast(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     bool interleaved);

/// The eager formula (ATen ops) with the same signature, for reference and benchmarks.
torch::Tensor rotary_eager(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                           int64_t time_dim = -2, bool interleaved = false);

/// The same formula compiled by TorchScript at run time (torch::jit::compile).
torch::Tensor rotary_script(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                            int64_t time_dim = -2, bool interleaved = false);

/// Compiles TorchScript source at run time (torch::jit::compile) with the `ropelab`
/// operator namespace in scope besides `torch`: `ropelab.rotary(x, cos, sin, -2, False)`.
std::shared_ptr<torch::jit::CompilationUnit> compile_script(const std::string& source);

}  // namespace ropelab
