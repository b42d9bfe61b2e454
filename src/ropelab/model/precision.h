#pragma once
/// Mixed-precision arithmetic for a model's forward computations (train.precision).
///
/// bf16 (CPU and CUDA) and fp16 (CUDA only: LibTorch 1.13's CPU autocast runs bfloat16 only;
/// with dynamic loss scaling, train/trainer.h) run the matrix products in reduced precision
/// through LibTorch's autocast (at::autocast:
/// linear, matmul and bmm cast their operands, with the casts of the fp32 weights cached
/// for the scope) and keeps everything else in fp32. Autocast alone does not do that in
/// LibTorch 1.13 on the CPU: softmax and log_softmax of bfloat16 stay bfloat16, and
/// layer_norm of a bfloat16 input with fp32 weights fails. So the model keeps the fp32 parts
/// itself:
///   * the residual stream stays fp32: each sublayer's output is cast back before dropout
///     and the residual sum (model/transformer.cpp), so every LayerNorm sees fp32;
///   * attention itself runs in fp32 with autocast off, whatever the backend and device:
///     scores, masks, softmax and weighted sum, the Performer's features and sums, the
///     decoding caches (attend_in_fp32, attention/backend.h); only its projections are bf16;
///   * rotary angles and cos/sin tables are fp32 for bfloat16 queries and keys
///     (position/position_encoder.cpp): a bfloat16 table has 8 bits of mantissa, so its
///     angles are wrong by whole radians at long contexts;
///   * the label-smoothed cross-entropy reads bfloat16 logits as they are and computes in
///     fp32 (the fused CPU kernel; elsewhere the reference upcasts them first), so the loss
///     is fp32 and the logits' gradient bfloat16 (ops/cross_entropy/cross_entropy.cpp).
/// Parameters, gradients and Adam's state stay fp32 (master weights), and checkpoints are
/// fp32 whatever the precision they were trained or evaluated in.

#include <torch/torch.h>

#include <string>

namespace ropelab {

/// The arithmetic of a model's forward computations (train.precision): fp32 throughout, or
/// bf16 (CPU and CUDA) or fp16 (CUDA only, with dynamic loss scaling: train/trainer.h)
/// matrix products with fp32 master weights, optimizer state, softmax, layer norm, loss and
/// rotary tables. `automatic` (train.precision: auto) is a request, not an arithmetic: the
/// trainer times fp32 and bf16 on the run's model and first batch and writes the faster into
/// the run's config (train/precision_choice.h); nothing computes in it.
enum class Precision { fp32, bf16, fp16, automatic };

/// train.precision's and --precision's spelling ("fp32", "bf16", "fp16", "auto").
std::string to_string(Precision precision);
Precision parse_precision(const std::string& name);

/// The type of the matrix products under `precision`: kFloat, kBFloat16 or kHalf (throws
/// for `automatic`, which must be resolved first).
torch::Dtype matmul_dtype(Precision precision);

/// Turns autocast on for `device`'s kind with the precision's type for its lifetime, then
/// restores what was there (a no-op for fp32). Thread-local, as autocast is: the backward
/// pass needs no scope (autograd replays the casts it recorded).
class PrecisionScope {
 public:
  PrecisionScope(Precision precision, const torch::Device& device);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  bool active_ = false, was_enabled_ = false;
  at::DeviceType type_ = at::kCPU;  // autocast's device: CUDA or CPU
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace ropelab
