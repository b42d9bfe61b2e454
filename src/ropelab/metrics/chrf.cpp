#include "ropelab/metrics/chrf.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ropelab/metrics/corpus_metric.h"
#include "ropelab/metrics/ngram_counts.h"
#include "ropelab/metrics/tokenize.h"
#include "ropelab/metrics/utf8.h"

namespace ropelab {

namespace {

/// The character n-grams (whitespace removed) of orders 1..char_order, then the word n-grams of orders
/// 1..word_order, as sacreBLEU lists them.
using ChrfNgrams = std::vector<ngram::KeyCounts>;

/// chrF++'s words (sacreBLEU's CHRF._remove_punctuation, after Popović's chrF): the line
/// split on whitespace; a word of two or more characters that ends in an ASCII punctuation
/// mark becomes the word without it and the mark, else one that starts with one becomes the
/// mark and the rest.
std::vector<std::string> chrf_words(const std::u32string& text) {
  static const std::u32string kPunct = U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  std::vector<std::string> words;
  for (size_t i = 0; i < text.size();) {
    if (utf8::is_space(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !utf8::is_space(text[j])) ++j;
    const std::u32string_view w(text.data() + i, j - i);
    const bool last = kPunct.find(w.back()) != std::u32string::npos,
               first = kPunct.find(w.front()) != std::u32string::npos;
    if (w.size() > 1 && last) {
      words.push_back(utf8::encode(w.substr(0, w.size() - 1)));
      words.push_back(utf8::encode(w.substr(w.size() - 1)));
    } else if (w.size() > 1 && first) {
      words.push_back(utf8::encode(w.substr(0, 1)));
      words.push_back(utf8::encode(w.substr(1)));
    } else {
      words.push_back(utf8::encode(w));
    }
    i = j;
  }
  return words;
}

/// Counts the n-grams of `line` into `out` (its tables are reused); `vocabulary` gives the
/// words their ids.
void chrf_ngrams(const std::string& line, const ChrfOptions& options, ngram::WordIds& vocabulary, ChrfNgrams& out) {
  const auto text = utf8::decode(options.lowercase ? lowercase_utf8(line) : line);
  std::u32string chars;
  for (char32_t c : text)
    if (!utf8::is_space(c)) chars.push_back(c);
  const auto char_order = static_cast<size_t>(options.char_order);
  out.resize(char_order + static_cast<size_t>(options.word_order));
  // keys[i]: the n-gram starting at i, grown by one character per order; code points are
  // below 2^21, three in each half of the key
  std::vector<ngram::Key> keys(chars.size());
  for (size_t n = 1; n <= char_order; ++n) {
    auto& counts = out[n - 1];
    counts.reset(chars.size());
    for (size_t i = 0; i + n <= chars.size(); ++i) {
      uint64_t& half = n <= 3 ? keys[i].hi : keys[i].lo;
      half = (half << 21) | (static_cast<uint64_t>(chars[i + n - 1]) & 0x1FFFFF);
      counts.add(keys[i]);
    }
  }
  if (options.word_order == 0) return;
  const auto ids = vocabulary.ids(chrf_words(text));
  for (size_t n = 1; n <= static_cast<size_t>(options.word_order); ++n)
    ngram::count_word_ngrams(ids, n, out[char_order + n - 1]);
}

/// [hyp, ref, match] per order, flattened, into `stats`.
void chrf_stats(const ChrfNgrams& hyp, const ChrfNgrams& ref, std::vector<double>& stats) {
  stats.clear();
  for (size_t n = 0; n < hyp.size(); ++n) {
    const int64_t r = ref[n].total(), m = ngram::clipped_matches(hyp[n], ref[n]);
    const int64_t h = r == 0 ? 0 : hyp[n].total();  // as sacreBLEU: none of an order the reference lacks
    stats.insert(stats.end(), {static_cast<double>(h), static_cast<double>(r), static_cast<double>(m)});
  }
}

/// chrF of the first `size` statistics (3 per order).
double chrf_value(const double* stats, size_t size, double beta) {
  const double eps = 1e-16, factor = beta * beta;
  double avg_prec = 0, avg_rec = 0;
  int effective = 0;
  for (size_t i = 0; i + 2 < size; i += 3) {
    const double h = stats[i], r = stats[i + 1], m = stats[i + 2];
    const double prec = h > 0 ? m / h : eps, rec = r > 0 ? m / r : eps;
    if (h > 0 && r > 0) avg_prec += prec, avg_rec += rec, ++effective;
  }
  if (effective == 0) return 0.0;
  avg_prec /= effective, avg_rec /= effective;
  if (avg_prec + avg_rec == 0) return 0.0;
  // sacreBLEU's order of operations, so that references with equal scores tie exactly as in sacreBLEU
  return 100.0 * ((1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec));
}

}  // namespace

std::vector<std::vector<double>> chrf_sentence_stats(const std::vector<std::string>& hyps,
                                                     const std::vector<std::vector<std::string>>& refs,
                                                     const std::vector<ChrfOptions>& variants) {
  check_line_counts(hyps, refs);
  if (variants.empty()) throw std::invalid_argument("chrF: no variant asked for");
  ChrfOptions widest = variants[0];
  for (const auto& v : variants) {
    if (v.char_order < 1 || v.word_order < 0 || v.word_order > 4)
      throw std::invalid_argument("chrF: char_order must be at least 1 and word_order 0 to 4");
    if (v.char_order != widest.char_order || v.lowercase != widest.lowercase || v.beta != widest.beta)
      throw std::invalid_argument("chrF: the variants of one pass differ only in word_order");
    widest.word_order = std::max(widest.word_order, v.word_order);
  }
  // A variant's statistics are a prefix of the widest's: the character orders, then its word orders.
  std::vector<std::vector<double>> out(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) out[v].reserve(hyps.size() * chrf_stats_width(variants[v]));
  ChrfNgrams h, r;
  ngram::WordIds vocabulary;
  std::vector<double> stats;  // reused: no allocation per sentence once warm
  std::vector<size_t> best_ref(variants.size());
  std::vector<double> best_f(variants.size());
  std::vector<std::vector<double>> ref_stats(refs.size());
  for (size_t i = 0; i < hyps.size(); ++i) {
    chrf_ngrams(hyps[i], widest, vocabulary, h);
    std::fill(best_f.begin(), best_f.end(), -1.0);
    for (size_t k = 0; k < refs.size(); ++k) {  // per variant, the reference with the best sentence-level score
      chrf_ngrams(refs[k][i], widest, vocabulary, r);
      chrf_stats(h, r, ref_stats[k]);
      for (size_t v = 0; v < variants.size(); ++v) {
        const double f = chrf_value(ref_stats[k].data(), chrf_stats_width(variants[v]), widest.beta);
        if (f > best_f[v]) best_f[v] = f, best_ref[v] = k;
      }
    }
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto& best = ref_stats[best_ref[v]];
      out[v].insert(out[v].end(), best.begin(),
                    best.begin() + static_cast<std::ptrdiff_t>(chrf_stats_width(variants[v])));
    }
  }
  return out;
}

ChrfScore chrf_from_stats(const double* sums, const ChrfOptions& options, size_t nrefs) {
  ChrfScore score;
  score.score = chrf_value(sums, chrf_stats_width(options), options.beta);
  score.word_order = options.word_order;
  score.signature = "nrefs:" + std::to_string(nrefs) + "|case:" + (options.lowercase ? "lc" : "mixed") +
                    "|eff:yes|nc:" + std::to_string(options.char_order) + "|nw:" + std::to_string(options.word_order) +
                    "|space:no|" + metric_version_tag();
  return score;
}

std::vector<ChrfScore> corpus_chrf(const std::vector<std::string>& hyps,
                                   const std::vector<std::vector<std::string>>& refs,
                                   const std::vector<ChrfOptions>& variants) {
  const auto stats = chrf_sentence_stats(hyps, refs, variants);
  std::vector<ChrfScore> scores;
  for (size_t v = 0; v < variants.size(); ++v) {
    const size_t width = chrf_stats_width(variants[v]);
    std::vector<double> sums(width, 0.0);
    for (size_t i = 0; i < stats[v].size(); ++i) sums[i % width] += stats[v][i];
    scores.push_back(chrf_from_stats(sums.data(), variants[v], refs.size()));
  }
  return scores;
}

ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options) {
  return corpus_chrf(hyps, refs, std::vector<ChrfOptions>{options})[0];
}

std::string ChrfScore::format() const {
  return "chrF2" + std::string(static_cast<size_t>(word_order), '+') + " = " + format_fixed(score, 2);
}

}  // namespace ropelab
