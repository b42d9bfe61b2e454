#pragma once
/// Window perplexity (ProtocolKind::window_perplexity): the split's text in windows of
/// `context` tokens, consecutive or sliding by `stride`; each window's NLL is kept for
/// paired tests between runs, and with per_position the mean loss at each position.

#include <vector>

#include "ropelab/data/examples.h"
#include "ropelab/eval/loss.h"
#include "ropelab/eval/protocols.h"

namespace ropelab {

/// The report's file tag: "NAME.ctxC", then ".strideS" for windows sliding by S < C.
std::string window_perplexity_tag(const std::string& name, int64_t context, int64_t stride);

EvalReport window_perplexity(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                             const std::string& name, const std::string& path, const WindowPerplexity& window,
                             const torch::Device& device);

/// The report of `windows` (of `context` tokens, sliding by `stride`) already scored:
/// evaluate_loss's totals and per-example losses, and its per-position losses or none, the
/// pass taking `seconds`. Context gain writes its full pass's with it.
EvalReport window_perplexity_report(const std::string& name, int64_t context, int64_t stride,
                                    const std::vector<Example>& windows, const LossTotals& totals,
                                    const std::vector<ExampleLoss>& per_window,
                                    const std::vector<ExampleLoss>& per_position, double seconds);

}  // namespace ropelab
