#include "ropelab/eval/protocols.h"

#include <stdexcept>

#include "ropelab/eval/context_gain.h"
#include "ropelab/eval/translation_quality.h"
#include "ropelab/eval/window_perplexity.h"

namespace ropelab {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

ProtocolKind protocol_kind(const EvalProtocol& protocol) {
  return std::visit(Overloaded{[](const TranslationQuality&) { return ProtocolKind::translation_quality; },
                               [](const WindowPerplexity&) { return ProtocolKind::window_perplexity; },
                               [](const ContextGain&) { return ProtocolKind::context_gain; }},
                    protocol);
}

EvalProtocol eval_protocol(const Task& task, const WindowPerplexity& window, int64_t gain_window,
                           const std::string& run_dir) {
  const auto& traits = task_traits(task.config().task);
  if (gain_window > 0 && traits.offers(ProtocolKind::context_gain)) {
    if (window.stride > 0 || window.per_position)
      throw std::runtime_error(
          "--context-gain compares non-overlapping windows and reports by bucket of positions: drop --stride and "
          "--per-position");
    return ContextGain{window.context, gain_window};
  }
  if (gain_window == 0 && traits.offers(ProtocolKind::window_perplexity)) return window;
  if (window.context > 0 || window.stride > 0 || window.per_position || gain_window > 0)
    throw std::runtime_error("--context, --stride, --per-position and --context-gain measure language models; " +
                             run_dir + " is a " + task.model_noun());
  return TranslationQuality{};
}

EvalReport evaluate(const Task& task, const TaskModel& model, const Tokenizer& tokenizer, const std::string& name,
                    const std::string& path, const DecodeRequest& request, const EvalProtocol& protocol,
                    const torch::Device& device) {
  const auto& traits = task_traits(task.config().task);
  if (!traits.offers(protocol_kind(protocol)))
    throw std::runtime_error(std::string("task ") + traits.name + " does not offer " +
                             protocol_name(protocol_kind(protocol)));
  return std::visit(Overloaded{[&](const TranslationQuality&) {
                                 return translation_quality(task, model, tokenizer, name, path, request, device);
                               },
                               [&](const WindowPerplexity& window) {
                                 return window_perplexity(task, model, tokenizer, name, path, window, device);
                               },
                               [&](const ContextGain& gain) {
                                 return context_gain(task, model, tokenizer, name, path, gain, device);
                               }},
                    protocol);
}

}  // namespace ropelab
