#include "ropelab/metrics/bleu.h"

#include <cmath>
#include <stdexcept>

#include "ropelab/metrics/corpus_metric.h"
#include "ropelab/metrics/ngram_counts.h"
#include "ropelab/metrics/tokenize.h"
#include "ropelab/metrics/utf8.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<BleuSmoothing, 4> kSmoothingNames{{{BleuSmoothing::none, "none"},
                                                   {BleuSmoothing::floor, "floor"},
                                                   {BleuSmoothing::add_k, "add-k"},
                                                   {BleuSmoothing::exp, "exp"}}};

std::vector<std::string> split_spaces(const std::string& s) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < s.size()) {
    const size_t j = s.find(' ', i);
    if (j == std::string::npos) {
      words.push_back(s.substr(i));
      break;
    }
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return words;
}

/// The counts of the word n-grams of orders 1..4.
using NgramCounts = std::array<ngram::KeyCounts, 4>;

/// Counts the n-grams of `ids` into `counts` (its tables are reused).
void count_ngrams(const std::vector<uint32_t>& ids, NgramCounts& counts) {
  for (size_t n = 1; n <= 4; ++n) ngram::count_word_ngrams(ids, n, counts[n - 1]);
}

/// Each key's largest count over the references' counts of one order.
ngram::KeyCounts max_counts(const std::vector<NgramCounts>& refs, size_t n) {
  size_t distinct = 0;
  for (const auto& r : refs) distinct += r[n].distinct();
  ngram::KeyCounts out(distinct);
  for (const auto& r : refs) r[n].for_each([&](const ngram::Key& key, int64_t count) { out.raise(key, count); });
  return out;
}

}  // namespace

std::string to_string(BleuSmoothing s) { return enum_name(s, kSmoothingNames); }
BleuSmoothing parse_bleu_smoothing(const std::string& name) {
  return parse_enum(name, kSmoothingNames, "BLEU smoothing");
}

std::vector<BleuStats> bleu_sentence_stats(const std::vector<std::string>& hyps,
                                           const std::vector<std::vector<std::string>>& refs,
                                           const BleuOptions& options) {
  check_line_counts(hyps, refs);
  auto prepare = [&](const std::string& s) {
    return tokenize_13a(options.lowercase ? lowercase_utf8(utf8::rstrip(s)) : utf8::rstrip(s));
  };
  std::vector<BleuStats> stats(hyps.size());
  ngram::WordIds vocabulary;
  std::vector<NgramCounts> ref_counts(refs.size());
  NgramCounts hyp_counts;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const auto hyp_ids = vocabulary.ids(split_spaces(prepare(hyps[i])));
    const auto hyp_len = static_cast<int64_t>(hyp_ids.size());
    int64_t ref_len = -1, closest = -1;
    for (size_t k = 0; k < refs.size(); ++k) {
      const auto ids = vocabulary.ids(split_spaces(prepare(refs[k][i])));
      const auto len = static_cast<int64_t>(ids.size());
      const int64_t diff = std::abs(hyp_len - len);
      if (closest == -1 || diff < closest)
        closest = diff, ref_len = len;
      else if (diff == closest && len < ref_len)
        ref_len = len;
      count_ngrams(ids, ref_counts[k]);
    }
    auto& line = stats[i];
    line.hyp_len = hyp_len;
    line.ref_len = ref_len;
    count_ngrams(hyp_ids, hyp_counts);
    for (size_t n = 0; n < 4; ++n) {
      line.matches[n] =
          ngram::clipped_matches(hyp_counts[n], ref_counts.size() == 1 ? ref_counts[0][n] : max_counts(ref_counts, n));
      line.totals[n] = std::max<int64_t>(0, hyp_len - static_cast<int64_t>(n));
    }
  }
  return stats;
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options) {
  BleuStats total;
  for (const auto& line : bleu_sentence_stats(hyps, refs, options)) {
    total.hyp_len += line.hyp_len;
    total.ref_len += line.ref_len;
    for (size_t n = 0; n < 4; ++n) total.matches[n] += line.matches[n], total.totals[n] += line.totals[n];
  }
  return bleu_from_stats(total, options, refs.size());
}

BleuScore bleu_from_stats(const BleuStats& total, const BleuOptions& options, size_t nrefs) {
  BleuScore score;
  score.hyp_len = total.hyp_len;
  score.ref_len = total.ref_len;
  score.signature = "nrefs:" + std::to_string(nrefs) + "|case:" + (options.lowercase ? "lc" : "mixed") +
                    "|eff:no|tok:13a|smooth:" + to_string(options.smoothing) + "|" + metric_version_tag();
  const double sys = static_cast<double>(total.hyp_len), ref = static_cast<double>(total.ref_len);
  score.bp = sys < ref ? (sys > 0 ? std::exp(1.0 - ref / sys) : 0.0) : 1.0;
  score.ratio = ref > 0 ? sys / ref : 0.0;
  // No n-gram of any order matches: BLEU 0 with every precision 0, whatever the smoothing, as sacreBLEU 2.x
  // returns before smoothing (sacreBLEU issue #141).
  if (std::all_of(total.matches.begin(), total.matches.end(), [](int64_t m) { return m == 0; })) return score;
  double smooth_value = options.smooth_value;
  if (smooth_value < 0) smooth_value = options.smoothing == BleuSmoothing::floor ? 0.1 : 1.0;
  std::array<double, 4> correct{}, totals{};
  double smooth_mteval = 1.0;
  for (size_t n = 0; n < 4; ++n) {
    correct[n] = static_cast<double>(total.matches[n]);
    totals[n] = static_cast<double>(total.totals[n]);
    if (options.smoothing == BleuSmoothing::add_k && n > 0) correct[n] += smooth_value, totals[n] += smooth_value;
    if (totals[n] == 0) break;
    if (correct[n] == 0) {
      if (options.smoothing == BleuSmoothing::exp) {
        smooth_mteval *= 2;
        score.precisions[n] = 100.0 / (smooth_mteval * totals[n]);
      } else if (options.smoothing == BleuSmoothing::floor) {
        score.precisions[n] = 100.0 * smooth_value / totals[n];
      }
    } else {
      score.precisions[n] = 100.0 * correct[n] / totals[n];
    }
  }
  double log_sum = 0;
  for (double p : score.precisions) log_sum += p > 0 ? std::log(p) : -9999999999.0;
  score.score = score.bp * std::exp(log_sum / 4.0);
  return score;
}

std::string BleuScore::format() const {
  std::string out = "BLEU = " + format_fixed(score, 2) + " ";
  for (size_t n = 0; n < 4; ++n) out += (n ? "/" : "") + format_fixed(precisions[n], 1);
  return out + " (BP = " + format_fixed(bp, 3) + " ratio = " + format_fixed(ratio, 3) +
         " hyp_len = " + std::to_string(hyp_len) + " ref_len = " + std::to_string(ref_len) + ")";
}

}  // namespace ropelab
