#pragma once
/// The decoder-state seam: what a search needs of a model, whatever the task. A state
/// holds R rows (sentences x beams); each step feeds the tokens the rows appended and
/// returns next-token logits; select() keeps, repeats or reorders rows.

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "ropelab/model/transformer.h"

namespace ropelab {

class DecoderState {
 public:
  virtual ~DecoderState() = default;
  /// tokens (R, T): what each row appended since the last call (its start tokens on the
  /// first) -> logits of the next token (R, V).
  virtual torch::Tensor step(const torch::Tensor& tokens) = 0;
  /// Keeps rows `index` (R') in that order: beam expansion and reordering.
  virtual void select(const torch::Tensor& index) = 0;
};

/// A search's input: the state, each row's start tokens and each row's output limit.
struct Decoding {
  std::unique_ptr<DecoderState> state;
  torch::Tensor start;          // (B, T0): BOS for a translator, EOS + prompt for a language model
  std::vector<int64_t> limits;  // most output tokens per row (EOS included)
  int64_t min_length = 0;       // output tokens before EOS may be chosen (DecodeOptions::min_len)
};

/// A DecoderState over a Transformer stack with incremental caches. With `use_cache`
/// only the new tokens run through the model; without, the whole prefix is recomputed
/// at each step (the reference that cached decoding must equal).
class TransformerDecoderState : public DecoderState {
 public:
  explicit TransformerDecoderState(bool use_cache) : use_cache_(use_cache) {}
  torch::Tensor step(const torch::Tensor& tokens) final;
  void select(const torch::Tensor& index) final;

 protected:
  /// tokens (R, T) -> logits (R, T', V) of the last T' >= 1 positions, the next token's
  /// last (a search reads no other: models compute the last alone, StackInputs::outputs);
  /// `cache` is null when recomputing the prefix.
  virtual torch::Tensor run(const torch::Tensor& tokens, DecoderCache* cache) = 0;
  /// Keeps rows `index` of the model inputs beside the tokens (an encoder's memory).
  virtual void select_inputs(const torch::Tensor& index) { (void)index; }

 private:
  bool use_cache_;
  torch::Tensor prefix_;  // (R, T) every token fed so far, kept only to recompute it
  DecoderCache cache_;
};

}  // namespace ropelab
