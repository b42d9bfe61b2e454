#pragma once
/// The Transformer of Vaswani et al. 2017, section 3, as torch::nn modules: the
/// position-wise FFN (3.3), encoder and decoder layers and stacks (3.1), the
/// encoder-decoder Seq2Seq model with shared, sqrt(D)-scaled embeddings and tied output
/// projection (3.4), and a decoder-only language model built from the same parts.

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "ropelab/model/attention.h"
#include "ropelab/model/dropout.h"

namespace ropelab {

/// Where LayerNorm sits: `post` is the paper's LayerNorm(x + Sublayer(x)); `pre` is
/// x + Sublayer(LayerNorm(x)) with a final LayerNorm after the stack (more stable deep).
enum class NormPosition { post, pre };
std::string to_string(NormPosition norm);
NormPosition parse_norm_position(const std::string& name);

struct LayerOptions {
  TORCH_ARG(int64_t, d_model) = 512;
  TORCH_ARG(int64_t, heads) = 8;
  TORCH_ARG(int64_t, d_ff) = 2048;
  /// Dropout on each sub-layer output before the residual add.
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(NormPosition, norm) = NormPosition::post;
  TORCH_ARG(AttentionOptions, attention);
  /// Causal self-attention with a forget gate (MultiHeadAttentionOptions::forget_gate); set
  /// by the stack from PositionOptions::forget_gate.
  TORCH_ARG(bool, forget_gate) = false;
  TORCH_ARG(double, forget_gate_bias) = 0.0;
  /// Causal self-attention with CoPE's P positions (MultiHeadAttentionOptions::cope_positions);
  /// set by the stack from PositionOptions::cope; 0: none.
  TORCH_ARG(int64_t, cope_positions) = 0;
  /// Causal self-attention with SSMax (MultiHeadAttentionOptions::ssmax) from this s; set by
  /// the stack from PositionOptions::ssmax.
  TORCH_ARG(bool, ssmax) = false;
  TORCH_ARG(double, ssmax_init) = 0.43;
};

/// FFN(x) = max(0, x W1 + b1) W2 + b2 (Vaswani et al. 2017, 3.3). (B, T, D) -> (B, T, D)
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(FeedForward);

/// Inputs of one stack call beside the activations; the stack fills in what is
/// missing (positions, logit bias) and hands the same struct to each layer.
struct StackInputs {
  torch::Tensor padding_mask;         // (B, T) true at padded tokens; optional
  Positions positions;                // this call's token positions; default offset..offset+T-1
  LogitBias logit_bias;               // set by the stack from its position encoder
  torch::Tensor ssmax_log_n;          // SSMax: log of the keys each query sees (T), set by the stack
  torch::Tensor memory;               // decoder: encoder output (B, S, D)
  torch::Tensor memory_padding_mask;  // decoder: (B, S)
  Positions memory_positions;         // decoder: source positions (cross-attention rotation)
  /// Only the last `outputs` positions' outputs are wanted (0: all): a prompt's next token,
  /// the scored end of a sliding window. The last layer then queries, normalises and feeds
  /// forward those rows alone (its keys and values, and its caches, still cover every
  /// token; a backend that cannot take fewer queries than keys, the Performer, computes
  /// every row and drops the rest), and the stack returns (B, outputs, D).
  int64_t outputs = 0;
};

/// Self-attention and FFN sub-layers (encoder layer; also the LM's layer without memory).
/// A decoder layer adds masked self-attention and cross-attention over the memory.
class TransformerLayerImpl : public torch::nn::Module {
 public:
  /// `causal`: masked self-attention; `cross_attention`: attend to a memory.
  TransformerLayerImpl(const LayerOptions& options, bool causal, bool cross_attention, const PositionEncoder& position,
                       bool rotate_cross);
  /// x (B, T, D) -> (B, T', D): T' = in.outputs when 0 < in.outputs < T (the last rows
  /// only), else T. `self_cache`/`cross_cache` for incremental decoding.
  torch::Tensor forward(const torch::Tensor& x, const StackInputs& in, AttentionCachePtr* self_cache = nullptr,
                        AttentionCachePtr* cross_cache = nullptr);

  MultiHeadAttention self_attn{nullptr}, cross_attn{nullptr};
  FeedForward ffn{nullptr};
  torch::nn::LayerNorm self_norm{nullptr}, cross_norm{nullptr}, ffn_norm{nullptr};
  Dropout dropout{nullptr};

 private:
  /// The sub-layer's output added to `rows` (x's last rows, or x) and normalised as the
  /// norm position says; the sub-layer reads all of x (normalised first with pre-LN).
  template <typename Sublayer>
  torch::Tensor residual(const torch::Tensor& x, const torch::Tensor& rows, torch::nn::LayerNorm& norm,
                         Sublayer&& sublayer);
  bool causal_;
  NormPosition norm_;
};
TORCH_MODULE(TransformerLayer);

struct StackOptions {
  TORCH_ARG(LayerOptions, layer);
  TORCH_ARG(int64_t, layers) = 6;
  TORCH_ARG(PositionOptions, position);
  /// Decoder-style: causal self-attention.
  TORCH_ARG(bool, causal) = false;
  /// Decoder of a Seq2Seq model: cross-attention to the encoder output.
  TORCH_ARG(bool, cross_attention) = false;
};

/// Caches for incremental decoding, one entry per layer.
struct DecoderCache {
  std::vector<AttentionCachePtr> self, cross;  // one per layer, filled by its attention backend
  int64_t offset = 0;                          // tokens decoded so far: the next token's position
  Positions key_positions;                     // the cached keys' (logit-bias encoders); a window drops some
  bool given_positions = false;                // a call passed its own positions (no relative bias table)
  std::optional<int64_t> origin;               // xPos: the position its scales count from (the first call's middle)
  torch::Tensor memory_padding_mask;
  /// Keeps rows `index` of every cache (beam search).
  void reorder(const torch::Tensor& index);
};

/// N layers plus the stack's position encoder (shared by all its layers) and, with
/// pre-LN, a final LayerNorm. Input is embedded tokens: embedding belongs to the model.
class StackImpl : public torch::nn::Module {
 public:
  explicit StackImpl(const StackOptions& options);
  /// x (B, T, D) embedded tokens -> (B, T, D), or (B, in.outputs, D) for the last rows
  /// (StackInputs::outputs). `state`: incremental decoding caches (causal stacks only);
  /// their offset sets the default positions.
  torch::Tensor forward(const torch::Tensor& x, StackInputs in = {}, DecoderCache* state = nullptr);

  const PositionEncoder& position() const { return position_; }
  /// Whether incremental decoding (a DecoderCache) is available. An encoder that follows the
  /// sequence's length (dynamic NTK per call) has its keys cached unrotated and rotated at
  /// each step's length, which needs every key kept (softmax attention, no window) and 1-D
  /// positions; otherwise decoding recomputes the prefix.
  bool decodes_incrementally() const;
  /// Whether a call without positions of its own (and without a cache) uses drawn ones:
  /// train_positions set, in training mode, or in evaluation too with drawn_at_eval;
  /// otherwise it counts 0, ..., T - 1.
  bool drawn_positions() const;
  /// Positions for `rows` sequences of `length` tokens drawn as train_positions says
  /// (position/training_positions.h); only while drawn_positions().
  Positions training_positions(int64_t rows, int64_t length, const torch::Device& device) const;
  const StackOptions& options() const { return options_; }
  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};

 private:
  StackOptions options_;
  PositionEncoder position_;
  Dropout dropout_{nullptr};
};
TORCH_MODULE(Stack);

struct TransformerOptions {
  /// Shared source/target vocabulary.
  TORCH_ARG(int64_t, vocab_size) = 0;
  TORCH_ARG(int64_t, pad_id) = 0;
  TORCH_ARG(int64_t, d_model) = 512;
  TORCH_ARG(int64_t, heads) = 8;
  TORCH_ARG(int64_t, d_ff) = 2048;
  TORCH_ARG(int64_t, encoder_layers) = 6;
  TORCH_ARG(int64_t, decoder_layers) = 6;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(NormPosition, norm) = NormPosition::post;
  TORCH_ARG(PositionOptions, encoder_position);
  TORCH_ARG(PositionOptions, decoder_position);
  TORCH_ARG(AttentionOptions, attention);

 public:
  LayerOptions layer() const;
};

/// Token embedding shared by source, target and the output projection, scaled by
/// sqrt(D) on input (Vaswani et al. 2017, 3.4).
class TiedEmbeddingImpl : public torch::nn::Module {
 public:
  TiedEmbeddingImpl(int64_t vocab_size, int64_t d_model, int64_t pad_id);
  /// tokens (B, T) -> (B, T, D)
  torch::Tensor forward(const torch::Tensor& tokens);
  /// hidden (B, T, D) -> logits (B, T, V) through the same matrix.
  torch::Tensor logits(const torch::Tensor& hidden);
  torch::Tensor weight;  // (V, D)

 private:
  double scale_;
};
TORCH_MODULE(TiedEmbedding);

/// Encoder output plus what the decoder needs alongside it.
struct Memory {
  torch::Tensor out;           // (B, S, D)
  torch::Tensor padding_mask;  // (B, S)
  Positions positions;         // source positions used
  /// Keeps rows `index` (beam expansion).
  Memory index_select(const torch::Tensor& index) const;
};

/// Encoder-decoder Transformer.
class Seq2SeqImpl : public torch::nn::Module {
 public:
  explicit Seq2SeqImpl(const TransformerOptions& options);
  /// src (B, S) -> Memory
  Memory encode(const torch::Tensor& src, const Positions& src_positions = {});
  /// tgt_in (B, T), the target shifted right -> logits (B, T, V); with `outputs` in
  /// (0, T), those of the last `outputs` positions alone (StackInputs::outputs).
  torch::Tensor decode(const torch::Tensor& tgt_in, const Memory& memory, DecoderCache* state = nullptr,
                       const Positions& tgt_positions = {}, int64_t outputs = 0);
  /// The decoder's output (B, T, D) that decode() projects: decode = embedding->logits(this).
  torch::Tensor decode_hidden(const torch::Tensor& tgt_in, const Memory& memory, DecoderCache* state = nullptr,
                              const Positions& tgt_positions = {}, int64_t outputs = 0);
  /// Teacher-forced logits (B, T, V).
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in);

  TransformerOptions options;
  TiedEmbedding embedding{nullptr};
  Stack encoder{nullptr}, decoder{nullptr};
};
TORCH_MODULE(Seq2Seq);

/// Decoder-only language model from the same parts: causal stack, no cross-attention.
class LanguageModelImpl : public torch::nn::Module {
 public:
  /// Uses vocab_size, d_model, heads, d_ff, decoder_layers, dropout, norm,
  /// decoder_position and attention.
  explicit LanguageModelImpl(const TransformerOptions& options);
  /// tokens (B, T) -> logits (B, T, V); with `outputs` in (0, T), those of the last
  /// `outputs` positions alone (StackInputs::outputs).
  torch::Tensor forward(const torch::Tensor& tokens, DecoderCache* state = nullptr, const Positions& positions = {},
                        int64_t outputs = 0);
  /// The stack's output (B, T, D) that forward() projects: forward = embedding->logits(this).
  torch::Tensor hidden(const torch::Tensor& tokens, DecoderCache* state = nullptr, const Positions& positions = {},
                       int64_t outputs = 0);

  TransformerOptions options;
  TiedEmbedding embedding{nullptr};
  Stack decoder{nullptr};
};
TORCH_MODULE(LanguageModel);

}  // namespace ropelab
