#pragma once
/// Autoregressive decoding for Seq2Seq models with incremental (cached) decoding:
/// self-attention keys/values are appended per step, cross-attention keys/values
/// are computed once per sentence.

#include "ropelab/decode/options.h"
#include "ropelab/model/transformer.h"

#include <torch/torch.h>

#include <vector>

namespace ropelab {

struct Hypothesis {
  std::vector<int64_t> tokens;  // without BOS and EOS
  double score = 0.0;           // sum of token log-probabilities (EOS included)
};

/// Greedy decoding of a source batch (B, S) -> B hypotheses. `max_len` is computed per
/// sentence from options.max_len_a/b and the source length. `use_cache=false`
/// recomputes the decoder over the whole prefix at each step (reference / benchmark).
/// `source_positions`: N-d source coordinates for the encoder (see encoder_positions).
std::vector<Hypothesis> greedy_search(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                      bool use_cache = true, const torch::Tensor& source_positions = {});

/// Beam search (Vaswani et al. 2017, 6.1), batched over sentences and beams, with the
/// length penalty named by options.lenpen_formula. A sentence is finished once it has
/// `beam` completed hypotheses; at its length limit the live beams are completed as they
/// are. Returns the best hypothesis per sentence by length-normalised score.
std::vector<Hypothesis> beam_search(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                    bool use_cache = true, const torch::Tensor& source_positions = {});

/// Greedy for beam 1, else beam search.
std::vector<Hypothesis> translate_batch(Seq2Seq& model, const torch::Tensor& source, const DecodeOptions& options,
                                        bool use_cache = true, const torch::Tensor& source_positions = {});

struct GenerateOptions {
  int64_t max_tokens = 100;
  /// 0: greedy; otherwise sample from softmax(logits / temperature).
  double temperature = 0.0;
  /// Sample among the k most likely tokens only; 0: all.
  int64_t top_k = 0;
};

/// Continues `prompt` (ids, without specials) with a language model, using incremental
/// decoding. The prompt is preceded by EOS, the document boundary the model was trained
/// with; generation stops at EOS or after options.max_tokens. Sampling draws from
/// torch's default generator (seed it for reproducible samples).
Hypothesis generate(LanguageModel& model, const std::vector<int64_t>& prompt, const GenerateOptions& options);

/// Length penalty lp(n) for n output tokens (EOS included): gnmt ((5+n)/6)^alpha or average n^alpha.
double length_penalty(const DecodeOptions& options, int64_t length);

/// The output length limit for a source of `source_len` tokens.
int64_t max_output_length(const DecodeOptions& options, int64_t source_len);

}  // namespace ropelab
