#pragma once
/// Translation quality (ProtocolKind::translation_quality): the split's source sentences
/// decoded with the request's search and scored against its references with BLEU, chrF,
/// chrF++ and TER (sacreBLEU's defaults and signatures), with teacher-forced perplexity
/// and exact match beside them; the hypotheses are kept for paired tests between runs.

#include "ropelab/eval/protocols.h"

namespace ropelab {

EvalReport translation_quality(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                               const std::string& name, const std::string& path, const DecodeRequest& request,
                               const torch::Device& device);

}  // namespace ropelab
