#include "ropelab/eval/evaluate.h"

#include "ropelab/data/corpus.h"
#include "ropelab/decode/search.h"
#include "ropelab/train/trainer.h"
#include "ropelab/util/runtime.h"

#include <numeric>
#include <sstream>

namespace ropelab {

std::vector<std::string> translate_lines(LoadedRun& run, const std::vector<std::string>& lines,
                                         const TranslateOptions& options, const torch::Device& device,
                                         int64_t* truncated) {
  const auto limit = static_cast<size_t>(run.config.data.max_len() - 1);  // room for EOS
  auto& model = run.model.translator();
  const auto separator = row_separator_id(run.config.data, *run.tokenizer);
  std::vector<Example> examples;
  std::vector<size_t> line_of;  // examples[i] translates lines[line_of[i]]
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    auto ids = run.tokenizer->encode(lines[i]);
    if (ids.size() > limit) {
      ids.resize(limit);
      if (truncated) ++*truncated;
    }
    auto positions = separator >= 0 ? grid_positions(ids, separator) : std::vector<int64_t>{};
    examples.push_back({std::move(ids), {}, std::move(positions)});
    line_of.push_back(i);
  }
  std::vector<std::string> out(lines.size());
  // Sort by length so batches carry little padding; budget counts beams.
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return examples[a].source.size() < examples[b].source.size(); });
  const int64_t budget = std::max<int64_t>(1, options.max_tokens / options.decode.beam());
  for (size_t start = 0; start < order.size();) {
    size_t end = start;
    size_t longest = 0;
    while (end < order.size()) {
      const size_t l = std::max(longest, examples[order[end]].source.size() + 1);
      if (end > start && static_cast<int64_t>(l * (end - start + 1)) > budget) break;
      longest = l, ++end;
    }
    std::vector<size_t> batch(order.begin() + static_cast<std::ptrdiff_t>(start),
                              order.begin() + static_cast<std::ptrdiff_t>(end));
    auto inputs = collate(examples, batch, device);
    auto hyps = translate_batch(model, inputs.source, options.decode, options.use_cache,
                                encoder_positions(model, inputs.source_positions));
    for (size_t k = 0; k < batch.size(); ++k) out[line_of[batch[k]]] = run.tokenizer->decode(hyps[k].tokens);
    start = end;
  }
  return out;
}

EvalReport evaluate_split(LoadedRun& run, const std::string& path, const TranslateOptions& options,
                          const torch::Device& device) {
  EvalReport report;
  if (run.model.lm) {  // perplexity over consecutive chunks of data.context tokens
    report.language_model = true;
    const auto chunks = lm_chunks(read_text_lines(path), *run.tokenizer, run.config.data.context(),
                                  &report.skipped_empty, run.config.data.eval_tokens());
    report.sentences = static_cast<int64_t>(chunks.size());
    const double start = now_seconds();
    const auto totals = evaluate_loss(run.model, chunks, run.config.train.max_tokens(), 0.0, device);
    report.decode_seconds = now_seconds() - start;
    report.perplexity = totals.perplexity();
    report.tokens = static_cast<int64_t>(totals.tokens);
    return report;
  }
  auto text = read_parallel(run.config.data, path);
  report.sentences = static_cast<int64_t>(text.source.size());
  report.skipped_empty = text.skipped_empty;
  const double start = now_seconds();
  report.hypotheses = translate_lines(run, text.source, options, device, &report.truncated);
  report.decode_seconds = now_seconds() - start;
  report.bleu = corpus_bleu(report.hypotheses, {text.target});
  report.chrf = corpus_chrf(report.hypotheses, {text.target});
  int64_t exact = 0;
  for (size_t i = 0; i < text.target.size(); ++i) exact += report.hypotheses[i] == text.target[i];
  report.exact_match = text.target.empty() ? 0.0 : static_cast<double>(exact) / static_cast<double>(text.target.size());
  auto examples = tokenize_pairs(text, *run.tokenizer, run.config.data.max_len(), true, nullptr,
                                 row_separator_id(run.config.data, *run.tokenizer));
  report.perplexity = evaluate_loss(run.model, examples, run.config.train.max_tokens(), 0.0, device).perplexity();
  return report;
}

std::string EvalReport::json(const std::string& split, const std::string& checkpoint) const {
  auto quote = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  std::ostringstream o;
  o.precision(10);
  if (language_model) {
    o << "{\"split\":" << quote(split) << ",\"checkpoint\":" << quote(checkpoint) << ",\"chunks\":" << sentences
      << ",\"tokens\":" << tokens << ",\"perplexity\":" << perplexity << ",\"bits_per_token\":"
      << std::log2(perplexity) << ",\"seconds\":" << decode_seconds << "}";
    return o.str();
  }
  o << "{\"split\":" << quote(split) << ",\"checkpoint\":" << quote(checkpoint) << ",\"sentences\":" << sentences
    << ",\"bleu\":" << bleu.score << ",\"bleu_signature\":" << quote(bleu.signature)
    << ",\"bleu_line\":" << quote(bleu.format()) << ",\"chrf\":" << chrf.score
    << ",\"chrf_signature\":" << quote(chrf.signature) << ",\"perplexity\":" << perplexity
    << ",\"exact_match\":" << exact_match
    << ",\"truncated\":" << truncated << ",\"skipped_empty\":" << skipped_empty
    << ",\"decode_seconds\":" << decode_seconds << "}";
  return o.str();
}

}  // namespace ropelab
