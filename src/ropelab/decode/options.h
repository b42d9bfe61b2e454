#pragma once
/// Decoding options (Vaswani et al. 2017, 6.1: beam 4, alpha 0.6) and sampling options.

#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace ropelab {

/// `gnmt`: ((5 + |Y|) / 6)^alpha (Wu et al. 2016, tensor2tensor);
/// `average`: |Y|^alpha (fairseq, Hugging Face, Marian).
enum class LengthPenalty { gnmt, average };

/// decode.lenpen_formula's spelling ("gnmt", "average").
std::string to_string(LengthPenalty formula);
LengthPenalty parse_length_penalty(const std::string& name);

/// The run's `decode` section.
struct DecodeOptions {
  /// 1 = greedy.
  TORCH_ARG(int64_t, beam) = 4;
  TORCH_ARG(double, lenpen) = 0.6;
  TORCH_ARG(LengthPenalty, lenpen_formula) = LengthPenalty::gnmt;
  /// Output length limit: max_len_a * input_length + max_len_b tokens (the input is the
  /// source sentence of a translator, the prompt of a language model).
  TORCH_ARG(double, max_len_a) = 1.5;
  TORCH_ARG(int64_t, max_len_b) = 10;
  /// Output tokens before EOS may end a row: EOS gets no probability before (`generate
  /// --min-new`); 0: from the first.
  TORCH_ARG(int64_t, min_len) = 0;
};

/// Ancestral sampling: each token drawn from softmax(logits / temperature), restricted to
/// the `top_k` likeliest tokens (0: all) and to the smallest set whose probability
/// reaches `top_p` (nucleus sampling, Holtzman et al. 2020; 1: all).
struct SamplingOptions {
  TORCH_ARG(double, temperature) = 1.0;
  TORCH_ARG(int64_t, top_k) = 0;
  TORCH_ARG(double, top_p) = 1.0;
};

}  // namespace ropelab
