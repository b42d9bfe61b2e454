#pragma once
/// Decoding options (Vaswani et al. 2017, 6.1: beam 4, alpha 0.6).

#include <torch/arg.h>

#include <cstdint>

namespace ropelab {

/// `gnmt`: ((5 + |Y|) / 6)^alpha (Wu et al. 2016, tensor2tensor);
/// `average`: |Y|^alpha (fairseq, Hugging Face, Marian).
enum class LengthPenalty { gnmt, average };

struct DecodeOptions {
  /// 1 = greedy.
  TORCH_ARG(int64_t, beam) = 4;
  TORCH_ARG(double, lenpen) = 0.6;
  TORCH_ARG(LengthPenalty, lenpen_formula) = LengthPenalty::gnmt;
  /// Output length limit: max_len_a * source_length + max_len_b tokens.
  TORCH_ARG(double, max_len_a) = 1.5;
  TORCH_ARG(int64_t, max_len_b) = 10;
};

}  // namespace ropelab
