#pragma once
/// `ropelab bench attention`: softmax against Performer attention over sequence lengths,
/// each case measured by bench_attention in a process of its own, so the CPU's peak
/// resident memory belongs to that case alone.

#include <functional>
#include <string>
#include <vector>

#include "ropelab/bench/benchmarks.h"

namespace ropelab {

struct AttentionSweepRow {
  bool causal = false;
  int64_t length = 0;
  /// [softmax, performer]: forward+backward median (ms) and peak memory (MiB); -1 where
  /// the case was not run (softmax's T x T tensors would not fit) or failed.
  double ms[2] = {-1, -1}, mib[2] = {-1, -1};
  /// softmax ms / Performer ms; 0 when either is missing.
  double speedup() const { return ms[0] > 0 && ms[1] > 0 ? ms[0] / ms[1] : 0; }
};

/// The command-line form of one case ("TYPE,CAUSAL,T"), for `ropelab bench attention --child`.
std::string attention_case(AttentionType type, bool causal, int64_t length);
/// `options` with the type, causality and length of `text` (attention_case's form).
AttentionBenchOptions parse_attention_case(const std::string& text, AttentionBenchOptions options);

/// Runs every (mode, length) for both backends as `executable bench attention --child
/// CASE ...` with `options` and `threads` on `device`, calling `on_row` as rows finish.
void sweep_attention(const AttentionBenchOptions& options, const std::vector<int64_t>& lengths,
                     const std::vector<bool>& modes, const torch::Device& device, int64_t threads,
                     const std::string& executable, const std::function<void(const AttentionSweepRow&)>& on_row);

}  // namespace ropelab
