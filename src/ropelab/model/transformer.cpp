#include "ropelab/model/transformer.h"

#include "ropelab/attention/ssmax.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {
const EnumNames<NormPosition, 2> kNormNames{{{NormPosition::post, "post"}, {NormPosition::pre, "pre"}}};
}
std::string to_string(NormPosition norm) { return enum_name(norm, kNormNames); }
NormPosition parse_norm_position(const std::string& name) { return parse_enum(name, kNormNames, "norm position"); }

// --- feed-forward -------------------------------------------------------------------

FeedForwardImpl::FeedForwardImpl(const LayerOptions& options) {
  fc1 = register_module("fc1", torch::nn::Linear(options.d_model(), options.d_ff()));
  fc2 = register_module("fc2", torch::nn::Linear(options.d_ff(), options.d_model()));
}

// torch::linear folds the bias into the GEMM (model/attention.cpp)
torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return torch::linear(torch::relu(torch::linear(x, fc1->weight, fc1->bias)), fc2->weight, fc2->bias);
}

// --- layer ----------------------------------------------------------------------------

TransformerLayerImpl::TransformerLayerImpl(const LayerOptions& options, bool causal, bool cross_attention,
                                           const PositionEncoder& position, bool rotate_cross)
    : causal_(causal), norm_(options.norm()) {
  TORCH_CHECK((!options.forget_gate() && options.cope_positions() == 0 && !options.ssmax()) || causal,
              "TransformerLayer: a forget gate, CoPE and SSMax need causal self-attention");
  auto mha = MultiHeadAttentionOptions(options.d_model(), options.heads()).attention(options.attention());
  auto rotation = position && position->rotates() ? position : nullptr;
  auto norm = [&] { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.d_model()})); };
  self_attn = register_module("self_attn", MultiHeadAttention(MultiHeadAttentionOptions(mha)
                                                                  .forget_gate(options.forget_gate())
                                                                  .forget_gate_bias(options.forget_gate_bias())
                                                                  .cope_positions(options.cope_positions())
                                                                  .ssmax(options.ssmax())
                                                                  .ssmax_init(options.ssmax_init()),
                                                              rotation));
  self_norm = register_module("self_norm", norm());
  if (cross_attention) {
    cross_attn = register_module("cross_attn", MultiHeadAttention(mha, rotate_cross ? rotation : nullptr));
    cross_norm = register_module("cross_norm", norm());
  }
  ffn = register_module("ffn", FeedForward(options));
  ffn_norm = register_module("ffn_norm", norm());
  dropout = register_module("dropout", Dropout(options.dropout()));
}

template <typename Sublayer>
torch::Tensor TransformerLayerImpl::residual(const torch::Tensor& x, const torch::Tensor& rows,
                                             torch::nn::LayerNorm& norm, Sublayer&& sublayer) {
  // A sublayer's output comes back in the residual stream's type (fp32 when its matrix
  // products ran in bf16: model/precision.h), so dropout, the sum and the norm run in fp32.
  auto out = [&](const torch::Tensor& in) { return dropout(sublayer(in).to(x.scalar_type())); };
  if (norm_ == NormPosition::pre) return rows + out(norm(x));
  return norm(rows + out(x));  // the paper's LayerNorm(x + Sublayer(x))
}

torch::Tensor TransformerLayerImpl::forward(const torch::Tensor& x, const StackInputs& in,
                                            AttentionCachePtr* self_cache, AttentionCachePtr* cross_cache) {
  // only the last `outputs` rows go on past self-attention's keys and values
  const int64_t t = x.size(1), n = in.outputs > 0 && in.outputs < t ? in.outputs : t;
  AttentionCall self_call;
  self_call.key_padding_mask = in.padding_mask;
  self_call.positions = in.positions;
  self_call.logit_bias = in.logit_bias;
  self_call.ssmax_log_n = in.ssmax_log_n;
  self_call.causal = causal_;
  self_call.cache = self_cache;
  self_call.queries = n;
  auto h = residual(x, x.narrow(1, t - n, n), self_norm,
                    [&](const torch::Tensor& y) { return self_attn(y, torch::Tensor(), self_call); });
  if (cross_attn) {
    AttentionCall cross_call;  // no position bias across sequences (Raffel et al. 2020)
    cross_call.key_padding_mask = in.memory_padding_mask;
    cross_call.positions = in.positions.defined() && n < t ? in.positions.last(n) : in.positions;
    cross_call.key_positions = in.memory_positions;
    cross_call.cache = cross_cache;
    h = residual(h, h, cross_norm, [&](const torch::Tensor& y) { return cross_attn(y, in.memory, cross_call); });
  }
  return residual(h, h, ffn_norm, [&](const torch::Tensor& y) { return ffn(y); });
}

// --- stack ----------------------------------------------------------------------------

void DecoderCache::reorder(const torch::Tensor& index) {
  for (auto* caches : {&self, &cross})
    for (auto& c : *caches)
      if (c) c->reorder(index);
  if (key_positions.defined()) key_positions = key_positions.index_select(index);
  if (memory_padding_mask.defined()) memory_padding_mask = memory_padding_mask.index_select(0, index);
}

StackImpl::StackImpl(const StackOptions& options) : options_(options) {
  // the forget gate and CoPE belong to each layer's self-attention
  const auto& p = options.position();
  const auto layer = LayerOptions(options.layer())
                         .forget_gate(p.forget_gate())
                         .forget_gate_bias(p.forget_gate_bias())
                         .cope_positions(p.cope() ? p.cope_positions() : 0)
                         .ssmax(p.ssmax())
                         .ssmax_init(p.ssmax_init());
  PositionGeometry geometry{layer.d_model(), layer.heads(), options.causal(),
                            options.causal() ? last_cache_position(layer.attention()) : 0};
  position_ = register_module("position", make_position_encoder(options.position(), geometry));
  layers = register_module("layers", torch::nn::ModuleList());
  const int64_t nope_every = options.position().nope_every();
  // per-layer windows: the stack's key positions (logit biases) and SSMax's key counts are
  // made once for every layer, so they need one window
  const bool per_layer = !layer.attention().layer_windows().empty();
  TORCH_CHECK(!per_layer || (!position_->has_logit_bias() && !p.ssmax()),
              "Stack: per-layer windows (layer_windows) take no logit-bias encoder and no SSMax");
  for (int64_t i = 0; i < options.layers(); ++i) {
    // RoPE/NoPE interleaving: layers nope_every, 2 nope_every, ... rotate nothing.
    const bool nope = nope_every > 0 && (i + 1) % nope_every == 0;
    auto own = layer;
    if (per_layer) own.attention(layer_attention(layer.attention(), i, options.layers()));
    layers->push_back(TransformerLayer(own, options.causal(), options.cross_attention(), nope ? nullptr : position_,
                                       options.position().rotate_cross_attention()));
  }
  if (layer.norm() == NormPosition::pre)
    final_norm = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({layer.d_model()})));
  dropout_ = register_module("dropout", Dropout(layer.dropout()));
}

bool StackImpl::decodes_incrementally() const {
  const auto& a = options_.layer().attention();
  return !position_->follows_length() ||
         (a.type() == AttentionType::softmax && a.window() == 0 && a.layer_windows().empty() && position_->axes() == 1);
}

namespace {

/// xPos's positions: its scales count from the middle of a sequence's first call (kept by
/// its cache), so that their fp32 exponents stay within half a window of 0, not a window's
/// length.
Positions counted_from_origin(const Positions& positions, bool given, int64_t offset, int64_t tq, DecoderCache* state) {
  if (state && state->origin) return positions.with_origin(*state->origin);
  const int64_t middle = given
                             ? (positions.values().min().item<int64_t>() + positions.values().max().item<int64_t>()) / 2
                             : offset + (tq - 1) / 2;
  if (state) state->origin = middle;
  return positions.with_origin(middle);
}

}  // namespace

torch::Tensor StackImpl::forward(const torch::Tensor& x, StackInputs in, DecoderCache* state) {
  TORCH_CHECK(!state || options_.causal(), "Stack: incremental decoding needs a causal stack");
  TORCH_CHECK(!state || decodes_incrementally(), "Stack: this position encoder follows the sequence's length ",
              "(dynamic NTK) and its keys cannot all be kept (a window, the Performer); decode it by recomputing the "
              "prefix");
  TORCH_CHECK(!state || !in.padding_mask.defined(), "Stack: incremental decoding takes no target padding mask");
  const int64_t offset = state ? state->offset : 0, tq = x.size(1);
  bool given = in.positions.defined();
  if (!given && !state && drawn_positions()) {
    in.positions = training_positions(x.size(0), tq, x.device());
    given = true;  // not 0 ... T - 1: no table of distances
  }
  if (!given) in.positions = Positions::range(offset, tq, position_->axes(), x.device());
  if (position_->counts_from_origin()) in.positions = counted_from_origin(in.positions, given, offset, tq, state);
  auto h = dropout_(position_->embed(x, in.positions));
  // the last layer's inputs: with fewer outputs than tokens, its queries are the last ones
  const int64_t outputs = in.outputs > 0 && in.outputs < tq ? in.outputs : tq;
  const int64_t n_layers = static_cast<int64_t>(layers->size());
  StackInputs last = in;
  last.outputs = outputs;
  in.outputs = 0;
  const auto& a = options_.layer().attention();
  if (options_.position().ssmax())  // the keys each query sees: the token index counts, not its position
    in.ssmax_log_n = last.ssmax_log_n =
        ssmax_log_key_counts(offset, tq, KeyVisibility{true, a.window(), a.sinks()}, x.device());
  if (position_->has_logit_bias()) {
    auto key_positions = in.positions;
    bool windowed = false;  // a window dropped cached keys: key index and position differ
    if (state) {
      key_positions = state->key_positions = state->key_positions.cat(in.positions);
      given = state->given_positions = state->given_positions || given;
      windowed = key_positions.length() < offset + tq;
    }
    const bool sinks_at_cache = options_.causal() && a.sinks() > 0 && last_cache_position(a) > 0;
    auto bias = [&](int64_t rows) -> LogitBias {  // for the last `rows` of this call's queries
      const auto queries = rows < tq ? in.positions.last(rows) : in.positions;
      auto made = [&]() -> LogitBias {
        // default positions and a bias of the distance alone: an (H, Tq + Tk - 1) table
        FireTileBias factored;
        if (position_->bias_is_relative() && !given && !windowed)
          return LogitBias::relative_table(
              relative_bias_table(*position_, rows, offset + tq, x.device()).to(x.dtype()));
        if (!given && !windowed && (factored = position_->factored_bias(rows, offset + tq)).defined())
          return LogitBias::factored(std::move(factored));  // FIRE: evaluated per tile
        // contiguous once here, not in each layer's attention
        return position_->logit_bias(queries, key_positions).to(x.dtype()).contiguous();
      }();
      if (sinks_at_cache) {  // each query, at its cache position, to the sinks (the first keys kept)
        const auto sink_keys = key_positions.index_time(
            torch::arange(std::min(a.sinks(), key_positions.length()), torch::dtype(torch::kLong).device(x.device())));
        made.sinks = position_->logit_bias(queries.capped(last_cache_position(a)), sink_keys).to(x.dtype());
      }
      return made;
    };
    if (n_layers > 1 || outputs == tq) in.logit_bias = bias(tq);
    last.logit_bias = outputs == tq ? in.logit_bias : bias(outputs);
  }
  if (state && state->self.empty()) {
    state->self.resize(layers->size());
    state->cross.resize(layers->size());
  }
  for (int64_t i = 0; i < n_layers; ++i) {
    const auto l = static_cast<size_t>(i);
    auto layer = layers[l]->as<TransformerLayerImpl>();
    h = layer->forward(h, i + 1 < n_layers ? in : last, state ? &state->self[l] : nullptr,
                       state ? &state->cross[l] : nullptr);
  }
  if (h.size(1) > outputs) h = h.narrow(1, tq - outputs, outputs);  // a stack without layers
  if (state) {
    state->offset += x.size(1);
    // the keys a windowed self-attention dropped from its caches (forward_cached)
    if (state->key_positions.defined())
      if (auto keep = windowed_cache_keep(state->key_positions.length(), a.window(), a.sinks(), x.device());
          keep.defined())
        state->key_positions = state->key_positions.index_time(keep);
  }
  return final_norm ? final_norm(h) : h;
}

bool StackImpl::drawn_positions() const {
  const auto& t = options_.position().train_positions();
  return t.drawn() && (is_training() || t.draws_at_eval());
}

Positions StackImpl::training_positions(int64_t rows, int64_t length, const torch::Device& device) const {
  TORCH_CHECK(drawn_positions(),
              "Stack: positions are drawn in training with train_positions set (in evaluation "
              "with drawn_at_eval)");
  return draw_training_positions(options_.position().train_positions(), rows, length, device);
}

// --- embedding ------------------------------------------------------------------------

TiedEmbeddingImpl::TiedEmbeddingImpl(int64_t vocab_size, int64_t d_model, int64_t pad_id)
    : scale_(std::sqrt(static_cast<double>(d_model))) {
  TORCH_CHECK(vocab_size > 0, "TiedEmbedding: vocab_size must be positive, got ", vocab_size);
  TORCH_CHECK(pad_id >= 0 && pad_id < vocab_size, "TiedEmbedding: pad_id ", pad_id, " outside vocabulary of ",
              vocab_size);
  // N(0, D^-1/2): after the sqrt(D) input scale, embeddings have unit scale.
  weight = register_parameter("weight", torch::randn({vocab_size, d_model}) / scale_);
  torch::NoGradGuard no_grad;
  weight[pad_id].zero_();
}

torch::Tensor TiedEmbeddingImpl::forward(const torch::Tensor& tokens) {
  return torch::embedding(weight, tokens) * scale_;
}

torch::Tensor TiedEmbeddingImpl::logits(const torch::Tensor& hidden) { return torch::linear(hidden, weight); }

// --- models ---------------------------------------------------------------------------

LayerOptions TransformerOptions::layer() const {
  return LayerOptions().d_model(d_model()).heads(heads()).d_ff(d_ff()).dropout(dropout()).norm(norm()).attention(
      attention());
}

Memory Memory::index_select(const torch::Tensor& index) const {
  return {out.index_select(0, index), padding_mask.index_select(0, index), positions.index_select(index)};
}

Seq2SeqImpl::Seq2SeqImpl(const TransformerOptions& options_) : options(options_) {
  embedding = register_module("embedding", TiedEmbedding(options.vocab_size(), options.d_model(), options.pad_id()));
  encoder = register_module(
      "encoder",
      Stack(
          StackOptions().layer(options.layer()).layers(options.encoder_layers()).position(options.encoder_position())));
  decoder = register_module("decoder", Stack(StackOptions()
                                                 .layer(options.layer())
                                                 .layers(options.decoder_layers())
                                                 .position(options.decoder_position())
                                                 .causal(true)
                                                 .cross_attention(true)));
}

Memory Seq2SeqImpl::encode(const torch::Tensor& src, const Positions& src_positions) {
  StackInputs in;
  in.padding_mask = src.eq(options.pad_id());
  const int64_t length = src.size(1);
  in.positions = src_positions.defined()      ? src_positions
                 : encoder->drawn_positions() ? encoder->training_positions(src.size(0), length, src.device())
                                              : Positions::range(0, length, encoder->position()->axes(), src.device());
  auto out = encoder(embedding(src), in);
  return {out, in.padding_mask, in.positions};
}

torch::Tensor Seq2SeqImpl::decode(const torch::Tensor& tgt_in, const Memory& memory, DecoderCache* state,
                                  const Positions& tgt_positions, int64_t outputs) {
  return embedding->logits(decode_hidden(tgt_in, memory, state, tgt_positions, outputs));
}

torch::Tensor Seq2SeqImpl::decode_hidden(const torch::Tensor& tgt_in, const Memory& memory, DecoderCache* state,
                                         const Positions& tgt_positions, int64_t outputs) {
  StackInputs in;
  in.outputs = outputs;
  if (!state) in.padding_mask = tgt_in.eq(options.pad_id());
  in.positions = tgt_positions;
  in.memory = memory.out;
  in.memory_padding_mask = memory.padding_mask;
  in.memory_positions = memory.positions;
  return decoder(embedding(tgt_in), in, state);
}

torch::Tensor Seq2SeqImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in) {
  return decode(tgt_in, encode(src));
}

LanguageModelImpl::LanguageModelImpl(const TransformerOptions& options_) : options(options_) {
  embedding = register_module("embedding", TiedEmbedding(options.vocab_size(), options.d_model(), options.pad_id()));
  decoder = register_module("decoder", Stack(StackOptions()
                                                 .layer(options.layer())
                                                 .layers(options.decoder_layers())
                                                 .position(options.decoder_position())
                                                 .causal(true)));
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& tokens, DecoderCache* state, const Positions& positions,
                                         int64_t outputs) {
  return embedding->logits(hidden(tokens, state, positions, outputs));
}

torch::Tensor LanguageModelImpl::hidden(const torch::Tensor& tokens, DecoderCache* state, const Positions& positions,
                                        int64_t outputs) {
  StackInputs in;
  in.outputs = outputs;
  if (!state) in.padding_mask = tokens.eq(options.pad_id());
  in.positions = positions;
  return decoder(embedding(tokens), in, state);
}

}  // namespace ropelab
