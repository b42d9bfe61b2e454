#pragma once
/// Context gain (ProtocolKind::context_gain): whether a language model uses the tokens it
/// sees beyond a window, the effective-context question of Hsieh et al. 2024 asked of the
/// loss. The split is cut into non-overlapping windows of C tokens (inside documents with
/// data.documents) and every window is scored twice by the same parameters: with every key,
/// and with each query seeing only its W most recent keys (model.attention.window = W, every
/// key at its position in the sequence, no sinks), so that the one difference between the
/// passes is the keys removed. A token predicted from window position j (it sees j earlier
/// tokens) gains loss(windowed) - loss(full); tokens at j < W see the same keys in both.
/// The gains are reported by bucket of j, [W, 2W), [2W, 4W), ..., the last ending at C, in
/// nats per token, each with a 95% bootstrap interval over the evaluation's units: its
/// documents, or without data.documents its windows (fixed blocks of the stream).
/// Memory stays O(C) per window: both passes run the model's own kernel (streaming on CPU).
/// The full pass is also the window perplexity at C (non-overlapping windows, with the loss
/// by position): the report carries that one as its companion, so one command gives both.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ropelab/eval/protocols.h"
#include "ropelab/metrics/cluster_bootstrap.h"

namespace ropelab {

/// Resamples and seed of the intervals of every context-gain report.
constexpr int64_t kContextGainResamples = 1000;
constexpr uint64_t kContextGainSeed = 12345;

/// Positions [begin, end) of the window whose tokens a bucket holds.
struct GainBucket {
  int64_t begin = 0, end = 0;
  /// "512-1024": the bucket in report keys and column names.
  std::string name() const;
  /// "[512, 1024)": the bucket for people.
  std::string label() const;
};

/// [W, 2W), [2W, 4W), ..., the last cut at C; W < C.
std::vector<GainBucket> context_gain_buckets(int64_t window, int64_t context);

/// The report's file tag: "NAME.ctxC.gainW".
std::string context_gain_tag(const std::string& name, int64_t context, int64_t window);

/// Why (window, context) cannot be measured on models of `task` (a window not below the
/// context, not positive, a Performer, a run whose own window already hides those keys), as
/// one line naming the flag; "" when it can.
std::string context_gain_error(const Task& task, int64_t window, int64_t context);

/// `model`'s parameters and buffers in a model of `task` whose self-attention sees only the
/// `window` most recent keys, each at its sequence position (WindowPositions::sequence).
std::shared_ptr<TaskModel> windowed_model(const Task& task, const TaskModel& model, int64_t vocab_size, int64_t window,
                                          const torch::Device& device);

/// items[b][u]: the summed gain (numerator) and tokens (denominator) of bucket b in unit u
/// (units in order of first appearance), from the two passes' per-token losses of `windows`
/// (evaluate_loss's per_token, in the windows' order).
std::vector<std::vector<RatioItem>> gain_items(const std::vector<Example>& windows,
                                               const std::vector<std::vector<double>>& full,
                                               const std::vector<std::vector<double>>& windowed,
                                               const std::vector<GainBucket>& buckets);

/// The protocol on windows already cut, scored by `full` and by `windowed` (windowed_model
/// of it; a test may give another); `units` names what Example::document counts.
EvalReport context_gain_report(const Task& task, const TaskModel& full, const TaskModel& windowed,
                               const std::vector<Example>& windows, const ContextGain& gain, const std::string& name,
                               const std::string& units, const torch::Device& device);

/// The protocol on the split at `path` (`name` as the user gave it).
EvalReport context_gain(const Task& task, const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                        const std::string& path, const ContextGain& gain, const torch::Device& device);

}  // namespace ropelab
