#pragma once
/// Attention backends: the seam that computes attention from projected, head-split
/// queries, keys and values. Backends know nothing of projections or positions beyond
/// an optional additive logit bias; MultiHeadAttention owns those.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/score_bias.h"

namespace ropelab {

/// `softmax`: exact scaled dot-product attention. `performer`: FAVOR+ linear attention
/// with positive orthogonal random features (Choromanski et al. 2021).
enum class AttentionType { softmax, performer };

/// How the softmax backend computes. `streaming`: the streaming algorithm, memory linear in
/// the length: on the CPU the tiled kernel (ops/attention/streaming_attention.h), on other
/// devices the same algorithm in chunks of device operations (ops/attention/chunked_attention.h).
/// `chunked`: the chunked form on every device, the CPU included. `materialized`: the whole
/// (Tq, Tk) score matrix per head, by the CPU kernel of ops/attention/fused_attention.h (the
/// reference) or by ATen ops elsewhere. `automatic` ("auto"): the streaming kernel on the
/// CPU; on other devices the chunked form when one call's scores (B x H x Tq x Tk) exceed one
/// chunk (AttentionChunks::budget), ATen ops otherwise. Attention dropout in training and
/// other dtypes take the ATen path (SoftmaxAttention::reference_forward; attention/softmax.h) under any setting.
enum class AttentionKernel { automatic, streaming, chunked, materialized };

/// Where a causal sliding window with sinks places positions. `cache`: as StreamingLLM
/// (Xiao et al. 2024), within the cache of kept keys: with S sinks and a window of W keys,
/// P = S + W - 1 is the last cache position, a query i past it scores the sinks as if it
/// stood at min(i, P) (distance min(i, P) - j to sink j), the window keys keep their distance
/// i - j, and a normaliser of the query's position (FIRE's) reads min(i, P). `sequence`: every
/// key keeps its position in the sequence (a sink j at distance i - j). Rotations and logit
/// biases follow the rule; additive encodings (sinusoidal, learned) are in the tokens' states
/// and keep sequence positions; the forget gate's decay sums the gates of every token between
/// key and query, kept or not; CoPE counts its positions over the kept keys in either.
enum class WindowPositions { cache, sequence };

struct AttentionOptions {
  /// Which backend.
  TORCH_ARG(AttentionType, type) = AttentionType::softmax;
  /// Dropout on attention probabilities (softmax backend).
  TORCH_ARG(double, dropout) = 0.0;
  /// Performer: random features m per layer (shared by its heads).
  TORCH_ARG(int64_t, num_features) = 256;
  /// Performer: redraw the features every N optimizer updates in training; 0 never.
  TORCH_ARG(int64_t, redraw_every) = 1000;
  /// Performer, causal: positions per chunk of the prefix-sum evaluation.
  TORCH_ARG(int64_t, chunk_size) = 128;
  /// Softmax: which kernel.
  TORCH_ARG(AttentionKernel, kernel) = AttentionKernel::automatic;
  /// Softmax self-attention: each query sees only keys within this distance (the W most
  /// recent in a causal stack, itself included); 0 for every key. Not in cross-attention.
  TORCH_ARG(int64_t, window) = 0;
  /// Softmax self-attention: a window per layer, "W1,W2,...", one per layer of each stack
  /// (0: every key), instead of `window` for all; e.g. RNoPE-SWA (Yang et al. 2025). The
  /// sinks and window positions apply to every layer with a window. "": `window` everywhere.
  TORCH_ARG(std::string, layer_windows) = "";
  /// Softmax self-attention with a window: the first `sinks` keys of the sequence stay
  /// visible to every query (Xiao et al. 2023, "StreamingLLM").
  TORCH_ARG(int64_t, sinks) = 0;
  /// Softmax self-attention with a causal window: the positions the sinks and the query take.
  TORCH_ARG(WindowPositions, window_positions) = WindowPositions::cache;
  /// The streaming kernel's queries x keys per tile (measured: bench/README.md); not a
  /// config key, `ropelab bench attention --tiles` sets it.
  TORCH_ARG(StreamingTiles, tiles);
};

/// An additive attention-logit bias from a position encoder: the kernels' ScoreBias
/// (ops/attention/score_bias.h: dense, relative table, FIRE's factored form, a forget gate's
/// cumulative log values, summed where several are set), and `sinks` (1|B, H, Tq, S), the
/// bias of each query, at its cache position, to the S sinks (WindowPositions::cache), which
/// replaces the other forms' bias for the sinks a query sees beyond its window; set only with
/// sinks at cache positions.
struct LogitBias : ScoreBias {
  LogitBias(torch::Tensor dense = {}) : ScoreBias(std::move(dense)) {}  // NOLINT: a dense bias converts
  static LogitBias relative_table(torch::Tensor table);
  static LogitBias factored(FireTileBias fire);
  torch::Tensor sinks;
};

/// Everything a backend needs for one call. Query i is aligned with key i + (Tk - Tq),
/// so a causal call with cached keys (Tk > Tq) lets the new queries see the whole past.
struct AttentionInputs {
  torch::Tensor q;                 // (B, H, Tq, Dh)
  torch::Tensor k;                 // (B, H, Tk, Dh)
  torch::Tensor v;                 // (B, H, Tk, Dh)
  torch::Tensor key_padding_mask;  // (B, Tk) bool, true at padded keys; optional
  LogitBias logit_bias;            // optional
  bool causal = false;
  int64_t window = 0;  // self-attention's sliding window (AttentionOptions::window); 0: none
  int64_t sinks = 0;   // with a window: keys [0, sinks) always visible
  /// CoPE's position embeddings (Dh, P) (attention/contextual.h); undefined: no CoPE.
  torch::Tensor contextual = {};
  /// Causal, with a window and sinks: where they take positions (WindowPositions). At `cache`
  /// the sinks a query sees beyond its window are scored with `sink_queries`, the queries
  /// rotated at their cache positions (undefined: q, for an encoder that rotates nothing),
  /// plus logit_bias.sinks.
  WindowPositions window_positions = WindowPositions::sequence;
  torch::Tensor sink_queries = {};
  /// Cached decoding of an encoder that follows the length (dynamic NTK per call): k holds
  /// the new keys unrotated, the cache keeps them so, and this rotates every cached and new
  /// key (B, H, Tk, Dh) at the step's length before attention. Undefined: keys come rotated.
  std::function<torch::Tensor(const torch::Tensor&)> rotate_keys = {};
  /// Whether the sinks take cache positions in this call: causal, window and sinks, no CoPE.
  bool sinks_at_cache_positions() const {
    return causal && window > 0 && sinks > 0 && window_positions == WindowPositions::cache && !contextual.defined();
  }
};

/// What a backend keeps between incremental decoding steps of one attention, per layer.
/// Each backend defines its own: keys and values for softmax, running sums for the
/// Performer; callers only hold it and reorder its rows.
class AttentionCache {
 public:
  virtual ~AttentionCache() = default;
  /// Keeps the rows `index` (beam search reorders hypotheses).
  virtual void reorder(const torch::Tensor& index) = 0;
};
using AttentionCachePtr = std::unique_ptr<AttentionCache>;

/// Keys and values (B, H, T, Dh) as given (rotated already, or not with
/// AttentionInputs::rotate_keys): the default cache. With a
/// forget gate also its cumulative log values (B, H, T), which new tokens continue.
struct KeyValueCache : AttentionCache {
  torch::Tensor k, v, forget;
  void reorder(const torch::Tensor& index) override;
};

/// Keys and values of a fixed memory (cross-attention), made on the first decoding step.
using MemoryKeyValues = std::function<std::pair<torch::Tensor, torch::Tensor>()>;

class AttentionBackendImpl : public torch::nn::Module {
 public:
  ~AttentionBackendImpl() override = default;
  /// -> (B, H, Tq, Dh)
  virtual torch::Tensor forward(const AttentionInputs& inputs) = 0;
  /// Causal self-attention of new tokens (q, k, v hold only them) after the tokens
  /// summarised in `cache` (the backend makes it on the first call), which is updated.
  /// The default keeps keys and values.
  virtual torch::Tensor forward_cached(AttentionInputs inputs, AttentionCachePtr& cache);
  /// Attention of new queries (inputs.k and .v undefined) to a fixed memory whose keys
  /// and values `memory` gives, called on the first step only; the backend keeps what
  /// later steps need in `cache`. The default keeps keys and values.
  virtual torch::Tensor forward_memory(AttentionInputs inputs, AttentionCachePtr& cache, const MemoryKeyValues& memory);
  /// Whether the backend can add a logit bias (T5, ALiBi, Kerple, FIRE, a forget gate);
  /// validated at config time.
  virtual bool accepts_logit_bias() const = 0;
  /// Whether a self-attention call may hold fewer new queries than new keys (the last
  /// ones, query i aligned with key i + Tk - Tq), so that only the outputs wanted are
  /// computed (StackInputs::outputs); otherwise every query runs and the rest are dropped.
  virtual bool takes_last_queries() const { return true; }
  /// Called in training before each optimizer update with the number of updates done so
  /// far (0 before the first). Nothing is called after the last update, so validation and
  /// checkpoints see the state the last update trained with.
  virtual void before_update(int64_t done) { (void)done; }
};

using AttentionBackend = std::shared_ptr<AttentionBackendImpl>;

/// The configured backend for heads of dimension `head_dim`.
AttentionBackend make_attention_backend(const AttentionOptions& options, int64_t head_dim);

/// Calls before_update(done) on every attention backend inside `model`.
void attention_before_update(torch::nn::Module& model, int64_t done);

/// Mixed precision (model/precision.h): the projections run in bf16 or fp16, attention itself
/// in fp32. Calls `attend` with q, k and v of `in` upcast from bf16 or fp16 and autocast off,
/// so that whatever the backend and device, its scores, masks, softmax and weighted sum (the
/// Performer's features and sums; the decoding caches, which keep what they are given) are
/// fp32. Without reduced inputs it calls `attend(in)` as it is.
torch::Tensor attend_in_fp32(AttentionInputs in, const std::function<torch::Tensor(const AttentionInputs&)>& attend);

/// The window of each of `layers` layers: `layer_windows` read (whole numbers >= 0 separated
/// by commas, exactly `layers` of them; c10::Error otherwise), or `window` for every layer.
std::vector<int64_t> layer_windows(const AttentionOptions& options, int64_t layers);
/// The most distant keys any layer sees: 0 (every key) when some layer has no window, else
/// the widest window.
int64_t widest_window(const AttentionOptions& options);
/// The options of layer `index` of `layers`: its own window, and no list.
AttentionOptions layer_attention(const AttentionOptions& options, int64_t index, int64_t layers);

/// The last position a query takes in a causal sliding window's cache at
/// WindowPositions::cache, P = sinks + window - 1; 0 without a window or at `sequence`.
int64_t last_cache_position(const AttentionOptions& options);

/// Incremental decoding under a sliding window: of `length` cached keys, the indices that a
/// later query can still see (keys [0, sinks) and the window - 1 most recent; the next
/// query's own key makes the window whole), or undefined when every key stays. Caches
/// keep sinks + window keys at most, however long the decoding.
torch::Tensor windowed_cache_keep(int64_t length, int64_t window, int64_t sinks, const torch::Device& device);

/// (Tq, Tk) bool mask, true where query i may not see key j (j > i + Tk - Tq).
torch::Tensor causal_mask(int64_t tq, int64_t tk, const torch::Device& device);
/// (Tq, Tk) bool mask, true where query i may not see key j under `causal`, `window` and
/// `sinks` (ops/attention/key_visibility.h); undefined when every key is visible.
torch::Tensor visibility_mask(int64_t tq, int64_t tk, bool causal, int64_t window, int64_t sinks,
                              const torch::Device& device);

std::string to_string(AttentionType type);
AttentionType parse_attention_type(const std::string& name);
/// "softmax | performer": the valid spellings, for messages.
std::string attention_type_choices();
std::string to_string(AttentionKernel kernel);
AttentionKernel parse_attention_kernel(const std::string& name);
/// "auto | streaming | chunked | materialized".
std::string attention_kernel_choices();
std::string to_string(WindowPositions positions);
WindowPositions parse_window_positions(const std::string& name);

}  // namespace ropelab
