#pragma once
/// `ropelab bench attention`: two attention variants (softmax against Performer, or the
/// streaming against the materialized softmax kernel) over sequence lengths, each case
/// measured by bench_attention in a process of its own, so the CPU's peak resident memory
/// belongs to that case alone.

#include <functional>
#include <string>
#include <vector>

#include "ropelab/bench/benchmarks.h"

namespace ropelab {

/// One side of a sweep: an attention backend type (softmax, performer), or the softmax
/// backend with one kernel (auto, streaming, chunked, materialized).
struct AttentionVariant {
  std::string name;
  AttentionType type = AttentionType::softmax;
  AttentionKernel kernel = AttentionKernel::automatic;
};
AttentionVariant parse_attention_variant(const std::string& name);

/// Whether `variant` holds (B, H, T, T) scores for a case of `length` on `device`: the
/// softmax backend's path (softmax_path) for `options`'s float32 operands is the
/// materialized kernel or ATen ops.
bool variant_materializes(const AttentionVariant& variant, const AttentionBenchOptions& options, int64_t length,
                          const torch::Device& device);

/// Why `bias` cannot be swept over `variants`, "" when it can: a logit bias needs the
/// softmax backend on both sides (the Performer has no logits to add it to).
std::string sweep_bias_error(const AttentionVariant (&variants)[2], BenchBias bias);

struct AttentionSweepRow {
  bool causal = false;
  int64_t length = 0;
  /// [first, second variant]: median time (ms) and peak memory (MiB); -1 where the case
  /// was not run (T x T tensors would not fit) or failed.
  double ms[2] = {-1, -1}, mib[2] = {-1, -1};
  /// first ms / second ms; 0 when either is missing.
  double speedup() const { return ms[0] > 0 && ms[1] > 0 ? ms[0] / ms[1] : 0; }
};

/// The command-line form of one case ("VARIANT,CAUSAL,T"), for `ropelab bench attention --child`.
std::string attention_case(const AttentionVariant& variant, bool causal, int64_t length);
/// `options` with the variant, causality and length of `text` (attention_case's form).
AttentionBenchOptions parse_attention_case(const std::string& text, AttentionBenchOptions options);

/// Runs every (mode, length) for both variants as `executable bench attention --child
/// CASE ...` with `options` and `threads` on `device`, calling `on_row` as rows finish. A
/// case whose child fails is named on stderr (its exit status or signal) and left at -1.
void sweep_attention(const AttentionBenchOptions& options, const AttentionVariant (&variants)[2],
                     const std::vector<int64_t>& lengths, const std::vector<bool>& modes, const torch::Device& device,
                     int64_t threads, const std::string& executable,
                     const std::function<void(const AttentionSweepRow&)>& on_row);

}  // namespace ropelab
