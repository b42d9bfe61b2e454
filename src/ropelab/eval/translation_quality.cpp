#include "ropelab/eval/translation_quality.h"

#include <iomanip>
#include <sstream>

#include "ropelab/data/text.h"
#include "ropelab/eval/loss.h"
#include "ropelab/metrics/metrics.h"
#include "ropelab/util/clock.h"

namespace ropelab {

EvalReport translation_quality(const Task& task, const TaskModel& model, const Tokenizer& tokenizer,
                               const std::string& name, const std::string& path, const DecodeRequest& request,
                               const torch::Device& device) {
  const auto& config = task.config();
  const auto text = read_parallel(config.data, path);
  int64_t truncated = 0;
  const double start = now_seconds();
  auto hypotheses = task.decode_lines(model, tokenizer, text.source, request, device, &truncated);
  const double seconds = now_seconds() - start;
  const auto bleu = corpus_bleu(hypotheses, {text.target});
  const auto chrfs = corpus_chrf(hypotheses, {text.target}, {ChrfOptions{}, chrf_plus_plus()});
  const auto &chrf = chrfs[0], &chrfpp = chrfs[1];
  const auto ter = corpus_ter(hypotheses, {text.target});
  int64_t exact = 0;
  for (size_t i = 0; i < text.target.size(); ++i) exact += hypotheses[i] == text.target[i];
  const double exact_match =
      text.target.empty() ? 0.0 : static_cast<double>(exact) / static_cast<double>(text.target.size());
  auto examples =
      tokenize_pairs(text, tokenizer, config.data.max_len(), true, nullptr, row_separator_id(config.data, tokenizer));
  const double perplexity =
      evaluate_loss(task, model, ExampleView(examples), config.train.max_tokens(), 0.0, device).perplexity();

  EvalReport report;
  report.file_tag = name;
  const auto sentences = static_cast<int64_t>(text.source.size());
  report.fields = {{"sentences", sentences},
                   {"bleu", bleu.score},
                   {"bleu_signature", bleu.signature},
                   {"bleu_line", bleu.format()},
                   {"chrf", chrf.score},
                   {"chrf_signature", chrf.signature},
                   {"chrfpp", chrfpp.score},
                   {"chrfpp_signature", chrfpp.signature},
                   {"ter", ter.score},
                   {"ter_signature", ter.signature},
                   {"perplexity", perplexity},
                   {"exact_match", exact_match},
                   {"truncated", truncated},
                   {"skipped_empty", text.skipped_empty},
                   {"decode_seconds", seconds}};
  std::ostringstream s;
  s << bleu.format() << "\n  " << bleu.signature << '\n'
    << chrf.format() << "\n  " << chrf.signature << '\n'
    << chrfpp.format() << "\n  " << chrfpp.signature << '\n'
    << ter.format() << "\n  " << ter.signature << '\n'
    << "perplexity = " << perplexity << " (teacher-forced, " << sentences << " sentences)\n"
    << "exact match = " << std::fixed << std::setprecision(1) << 100.0 * exact_match << std::defaultfloat
    << std::setprecision(6) << "%\n"
    << "decoding: " << (request.search.sample ? "sampling" : "beam " + std::to_string(request.search.decode.beam()))
    << ", " << seconds << " s" << (request.use_cache ? "" : " (no cache)");
  report.summary = s.str();
  report.hypotheses = std::move(hypotheses);
  if (truncated > 0)
    report.warnings.push_back(std::to_string(truncated) + " source lines longer than data.max_len=" +
                              std::to_string(config.data.max_len()) + " tokens were truncated");
  if (text.skipped_empty > 0)
    report.warnings.push_back(std::to_string(text.skipped_empty) + " pairs with an empty side were skipped");
  return report;
}

}  // namespace ropelab
