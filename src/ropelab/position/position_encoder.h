#pragma once
/// Position encoders: the seam through which every kind of position information
/// reaches a Transformer (Vaswani et al. 2017, 3.5; Su et al. 2021; Raffel et al. 2020;
/// Press et al. 2022; Sun et al. 2022; Chi et al. 2022; Li et al. 2024).
///
/// An encoder implements up to three hooks, each a no-op by default:
///   embed(x, positions)            additive encodings (sinusoidal, learned)
///   rotate(x, positions)           rotation of queries and keys (rotary, axial rotary, xPos)
///   logit_bias(q_pos, k_pos)       additive attention-logit bias (T5, ALiBi, Kerple, FIRE);
///                                  encoders whose bias depends on key_pos - query_pos
///                                  alone also give it per distance (relative_bias), which
///                                  attention takes as an (H, Tq + Tk - 1) table
/// Positions (position/positions.h) are absolute int64 coordinates, shared by the batch
/// or per sequence, with N coordinates per token for multi-dimensional encoders. Every
/// hook takes positions, so incremental decoding passes the step offset in them.

#include <torch/torch.h>

#include <memory>
#include <string>

#include "ropelab/ops/attention/fire_tile_bias.h"
#include "ropelab/ops/rotary/rotary.h"
#include "ropelab/position/positions.h"
#include "ropelab/position/rope_scaling.h"
#include "ropelab/position/training_positions.h"

namespace ropelab {

enum class PositionType {
  none,
  sinusoidal,
  learned,
  t5_bias,
  rotary,
  rotary_nd,
  alibi,
  xpos,
  kerple,
  kerple_power,
  fire
};
/// Sinusoid layout: `interleaved` is the paper's (sin at even dims, cos at odd);
/// `concat` is fairseq / tensor2tensor's [sin | cos].
enum class SinusoidLayout { interleaved, concat };
/// Rotary pairing: `half` pairs (i, i + r/2) as GPT-NeoX; `interleaved` pairs
/// (2i, 2i + 1) as GPT-J, Mesh-TF-JAX and roformer.
enum class RotaryLayout { half, interleaved };
/// Kerple's positivity bounds (r1, r2 >= 0.01; the power's r2 <= 2): `reset` sets a value
/// past a bound back to it before use, as the authors' code does, and the gradient is the
/// kernel's own, so a parameter at a bound can move back; `clamp` uses the clamped value,
/// whose gradient is 0 past the bound (a parameter there stays frozen).
enum class KerpleBound { reset, clamp };

struct PositionOptions {
  /// Which encoder.
  TORCH_ARG(PositionType, type) = PositionType::sinusoidal;
  /// learned: table size; other absolute encoders accept any position. This and the
  /// other length-dependent settings (max_distance, scale_base, fire_threshold) are set
  /// relative to the training context in a Config (position/context_defaults.h).
  TORCH_ARG(int64_t, max_len) = 1024;
  /// learned: the standard deviation of the table's normal initialisation. 0.02, GPT-2's
  /// and BERT's (Radford et al. 2019; Devlin et al. 2019): at a 512-token context it trains
  /// faster than the token embeddings' unit scale in each of three seeds
  /// (experiments/results/ablate_learned_init_512/).
  TORCH_ARG(double, learned_init_std) = 0.02;
  /// sinusoidal: dimension layout.
  TORCH_ARG(SinusoidLayout, sinusoid_layout) = SinusoidLayout::interleaved;
  /// sinusoidal, rotary, rotary_nd: frequency base (inv_freq_i = base^(-2i/r)).
  TORCH_ARG(double, base) = 10000.0;
  /// rotary, rotary_nd: pairing of rotated dimensions.
  TORCH_ARG(RotaryLayout, layout) = RotaryLayout::half;
  /// rotary, rotary_nd: fraction of the head dimension rotated (GPT-NeoX rotary_pct).
  TORCH_ARG(double, fraction) = 1.0;
  /// rotary, rotary_nd: the fraction of the rotated pairs, the lowest frequencies, left
  /// unrotated (their frequency is 0): p-RoPE with p = 1 - unrotated (Barbero et al. 2025).
  TORCH_ARG(double, unrotated) = 0.0;
  /// rotary, rotary_nd, xpos: every `nope_every`-th layer (layers N, 2N, ...) rotates
  /// nothing: RoPE interleaved with NoPE layers (Yang et al. 2025); 0: every layer rotates.
  TORCH_ARG(int64_t, nope_every) = 0;
  /// Any type, causal stacks: each layer's self-attention adds the Forgetting Transformer's
  /// data-dependent decay, the sum of log forget gates between key and query (Lin et al.
  /// 2025; model/attention.h). FoX as published is `none` with it.
  TORCH_ARG(bool, forget_gate) = false;
  /// With forget_gate: the gates' bias b starts here (its weights at N(0, 0.02^2)); 0, as the
  /// authors' code, starts every gate at sigmoid(0) = 1/2, a decay of ln 2 nats per token.
  TORCH_ARG(double, forget_gate_bias) = 0.0;
  /// Causal stacks, encoders without a logit bias: each layer's self-attention counts
  /// positions with gates the content sets, CoPE (Golovneva et al. 2024; attention/contextual.h),
  /// over `cope_positions` learned positions P, counts past P - 1 clamped to it. P is a
  /// length: unset (0) in a Config it is C / 16, at least 2 (position/context_defaults.h).
  TORCH_ARG(bool, cope) = false;
  TORCH_ARG(int64_t, cope_positions) = 64;
  /// Any type, causal stacks: Scalable-Softmax (Nakanishi 2025) in each layer's
  /// self-attention: a query's logits q.k / sqrt(Dh) are multiplied by s_h log n, n the keys
  /// it sees (its prefix, or its window and sinks; attention/ssmax.h), s learnable per head
  /// and per layer, starting at `ssmax_init`.
  TORCH_ARG(bool, ssmax) = false;
  TORCH_ARG(double, ssmax_init) = 0.43;
  /// rotary, rotary_nd: implementation (eager | script | fused); all give the same values.
  TORCH_ARG(RotaryImpl, rotary_impl) = RotaryImpl::fused;
  /// rotary: also rotate queries and keys in cross-attention. Off by default: source
  /// and target positions are not one coordinate system.
  TORCH_ARG(bool, rotate_cross_attention) = false;
  /// rotary_nd: number of coordinate axes per token.
  TORCH_ARG(int64_t, axes) = 2;
  /// t5_bias: bucket count and the distance beyond which buckets saturate.
  TORCH_ARG(int64_t, num_buckets) = 32;
  TORCH_ARG(int64_t, max_distance) = 128;
  /// t5_bias: the standard deviation of the table's normal initialisation; 0: d_model^-0.5,
  /// as T5's reference implementations initialise it (Raffel et al. 2020).
  TORCH_ARG(double, t5_init_std) = 0.0;
  /// xpos: positions over which the per-dimension decay zeta_i acts (zeta_i^(n/scale_base)).
  TORCH_ARG(double, scale_base) = 512.0;
  /// fire: hidden width of the MLP f_theta, and the initial threshold L of the
  /// normaliser psi(max(L, i)) (learned from there).
  TORCH_ARG(int64_t, fire_hidden) = 32;
  TORCH_ARG(double, fire_threshold) = 512.0;
  /// kerple, kerple_power: how the parameters keep their bounds.
  TORCH_ARG(KerpleBound, kerple_bound) = KerpleBound::reset;
  /// rotary, rotary_nd: RoPE scaling for contexts past the training context.
  TORCH_ARG(RopeScalingOptions, scaling);
  /// Every type but none, rotary_nd and xpos: the positions a stack trains on, drawn from a range
  /// past the training context (randomized, PoSE; position/training_positions.h).
  TORCH_ARG(TrainPositionsOptions, train_positions);
};

/// Shapes an encoder is built for; fixed by the stack that owns it.
struct PositionGeometry {
  int64_t d_model = 0;
  int64_t heads = 0;
  bool causal = false;  // a decoder stack: T5 buckets are one-directional
  /// A causal sliding window at cache positions (attention/backend.h, WindowPositions): the
  /// last position a query takes in the cache, which a normaliser of the query's position
  /// (FIRE's) reads instead of a later one; 0: none.
  int64_t last_cache_position = 0;
};

class PositionEncoderImpl : public torch::nn::Module {
 public:
  ~PositionEncoderImpl() override = default;

  /// x (B, T, D) -> x plus the encoding of `positions`. Default: x unchanged.
  virtual torch::Tensor embed(const torch::Tensor& x, const Positions& positions) { return x; }

  /// Whether rotate() changes its input (lets attention skip the call).
  virtual bool rotates() const { return false; }
  /// x (B, H, T, Dh) -> x rotated by `positions`. Default: x unchanged.
  virtual torch::Tensor rotate(const torch::Tensor& x, const Positions& positions) { return x; }
  /// Queries and keys of the same positions together (self-attention); an encoder may
  /// fuse the two. Default: rotate() on each.
  virtual std::pair<torch::Tensor, torch::Tensor> rotate_pair(const torch::Tensor& q, const torch::Tensor& k,
                                                              const Positions& positions) {
    return {rotate(q, positions), rotate(k, positions)};
  }

  /// Whether the encoder's tables depend on where positions count from (xPos's scales,
  /// Positions::origin): its stack then sets the origin, which changes no logit.
  virtual bool counts_from_origin() const { return false; }

  /// Whether every token's encoding depends on the length of the whole sequence (dynamic
  /// NTK scaling). Incremental decoding then recomputes the prefix at each step: a cache
  /// would keep keys and hidden states computed for a shorter sequence.
  virtual bool follows_length() const { return false; }

  /// Whether logit_bias() returns a tensor.
  virtual bool has_logit_bias() const { return false; }
  /// Additive logit bias, broadcastable to (B, H, Tq, Tk); undefined when the
  /// encoder has none. Computed once per stack and shared by its layers.
  virtual torch::Tensor logit_bias(const Positions& q_positions, const Positions& k_positions) { return {}; }
  /// Whether the bias depends on key_pos - query_pos alone: relative_bias() then gives it.
  virtual bool bias_is_relative() const { return false; }
  /// relative (any shape, int64 key_pos - query_pos) -> bias (H, ...). Relative encoders only.
  virtual torch::Tensor relative_bias(const torch::Tensor& relative) {
    TORCH_INTERNAL_ASSERT(false, "relative_bias on an encoder without a relative bias");
  }
  /// The bias of Tq queries at positions Tk - Tq, ..., Tk - 1 and Tk keys at 0, ..., Tk - 1
  /// in FIRE's factored form (ops/attention/fire_tile_bias.h), which the streaming kernel
  /// evaluates per tile; undefined for the other encoders.
  virtual FireTileBias factored_bias(int64_t tq, int64_t tk) { return {}; }

  /// Number of coordinates per token the encoder expects (1 for sequences).
  virtual int64_t axes() const { return 1; }
};

using PositionEncoder = std::shared_ptr<PositionEncoderImpl>;

/// Builds the encoder named by `options.type()` (a plain switch; see position_encoder.cpp).
PositionEncoder make_position_encoder(const PositionOptions& options, const PositionGeometry& geometry);

/// Converts between enum values and their YAML spellings; throws on an unknown name.
/// The (H, Tq + Tk - 1) table of a relative encoder for Tq queries aligned with the last
/// Tq of Tk keys: column c holds the bias of key_pos - query_pos = c - (Tk - 1).
torch::Tensor relative_bias_table(PositionEncoderImpl& encoder, int64_t tq, int64_t tk, const torch::Device& device);

std::string to_string(PositionType type);
std::string to_string(SinusoidLayout layout);
std::string to_string(RotaryLayout layout);
std::string to_string(KerpleBound bound);
PositionType parse_position_type(const std::string& name);
SinusoidLayout parse_sinusoid_layout(const std::string& name);
RotaryLayout parse_rotary_layout(const std::string& name);
KerpleBound parse_kerple_bound(const std::string& name);

}  // namespace ropelab
