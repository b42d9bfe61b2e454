#include "ropelab/eval/metrics.h"

#include <algorithm>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cwctype>
#include <deque>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "ropelab/build_config.h"
#include "ropelab/eval/utf8.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

/// ' '.join(s.split()) on code points.
std::u32string normalize_spaces(const std::u32string& s) {
  std::u32string out;
  bool pending = false;
  for (char32_t c : s) {
    if (utf8::is_space(c)) {
      pending = !out.empty();
    } else {
      if (pending) out.push_back(U' ');
      pending = false;
      out.push_back(c);
    }
  }
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

/// The 13a punctuation class: [{-~] [[-`] [ -&] [(-+] [:-@] and '/'.
bool is_13a_punct(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == U'/';
}

}  // namespace

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  const auto s = utf8::decode(" " + line + " ");
  // The four mteval regexes, each a left-to-right, non-overlapping substitution as re.sub does.
  std::u32string a;  // ([{-~[-` -&(-+:-@/]) -> ' \1 '
  for (char32_t c : s) {
    if (is_13a_punct(c))
      a += U' ', a += c, a += U' ';
    else
      a += c;
  }
  std::u32string b;  // ([^0-9])([.,]) -> '\1 \2 '
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && !is_digit(a[i]) && (a[i + 1] == U'.' || a[i + 1] == U',')) {
      b += a[i], b += U' ', b += a[i + 1], b += U' ', i += 2;
    } else {
      b += a[i++];
    }
  }
  std::u32string c;  // ([.,])([^0-9]) -> ' \1 \2'
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && (b[i] == U'.' || b[i] == U',') && !is_digit(b[i + 1])) {
      c += U' ', c += b[i], c += U' ', c += b[i + 1], i += 2;
    } else {
      c += b[i++];
    }
  }
  std::u32string d;  // ([0-9])(-) -> '\1 \2 '
  for (size_t i = 0; i < c.size();) {
    if (i + 1 < c.size() && is_digit(c[i]) && c[i + 1] == U'-') {
      d += c[i], d += U' ', d += U'-', d += U' ', i += 2;
    } else {
      d += c[i++];
    }
  }
  std::string out;
  for (char32_t cp : normalize_spaces(d)) utf8::append(out, cp);
  return out;
}

std::string lowercase_utf8(const std::string& text) {
  static const bool locale_ok = [] {
    return std::setlocale(LC_CTYPE, "C.UTF-8") != nullptr || std::setlocale(LC_CTYPE, "en_US.UTF-8") != nullptr;
  }();
  (void)locale_ok;
  std::string out;
  for (char32_t cp : utf8::decode(text))
    utf8::append(out, static_cast<char32_t>(std::towlower(static_cast<wint_t>(cp))));
  return out;
}

// --- n-gram counts ------------------------------------------------------------------------
// Both metrics count the n-grams of one order in one sentence at a time. An n-gram is packed
// exactly into 128 bits (up to four 32-bit word ids, or six 21-bit code points) and counted
// in a small open-addressing table, with no allocation per n-gram: several times faster
// than hashing strings into a node-based map.

namespace {

struct Key {
  uint64_t hi = 0, lo = 0;
  bool operator==(const Key& o) const { return hi == o.hi && lo == o.lo; }
};

/// The n-grams of one order in one sentence: distinct keys with their counts.
class KeyCounts {
 public:
  /// Room for `distinct` keys at most half full.
  explicit KeyCounts(size_t distinct = 0) { reset(distinct); }
  /// Empties the table and makes room for `distinct` keys; reuses its memory where it can,
  /// so that one table serves every sentence of a corpus.
  void reset(size_t distinct) {
    size_t capacity = 8;
    while (capacity < 2 * distinct) capacity <<= 1;
    if (capacity > slots_.size()) {
      slots_.assign(capacity, Slot{});
    } else {
      for (uint32_t i : occupied_) slots_[i].count = 0;
    }
    occupied_.clear();
    total_ = 0;
  }
  void add(const Key& key) {
    ++insert(key).count;
    ++total_;
  }
  /// Raises the key's count to `count` if it is lower.
  void raise(const Key& key, int64_t count) {
    auto& slot = insert(key);
    if (count > slot.count) total_ += count - slot.count, slot.count = count;
  }
  /// The key's count (0 if absent).
  int64_t count(const Key& key) const { return slots_[index_of(key)].count; }
  /// All n-grams, repeats counted.
  int64_t total() const { return total_; }
  template <typename F>
  void for_each(F&& f) const {
    for (uint32_t i : occupied_) f(slots_[i].key, slots_[i].count);
  }
  size_t distinct() const { return occupied_.size(); }

 private:
  struct Slot {
    Key key;
    int64_t count = 0;
  };
  /// The key's slot, or the empty slot where it would go (linear probing).
  size_t index_of(const Key& key) const {
    uint64_t h = key.hi * 0x9E3779B97F4A7C15ULL ^ (key.lo + 0x632BE59BD9B4E019ULL);
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].count != 0 && !(slots_[i].key == key)) i = (i + 1) & mask;
    return i;
  }
  /// The key's slot, claimed for it if it was empty.
  Slot& insert(const Key& key) {
    const size_t i = index_of(key);
    if (slots_[i].count == 0) slots_[i].key = key, occupied_.push_back(static_cast<uint32_t>(i));
    return slots_[i];
  }
  std::vector<Slot> slots_;
  std::vector<uint32_t> occupied_;
  int64_t total_ = 0;
};

/// Counts the word n-grams of order `n` (1 to 4) of `ids` into `counts`, emptied first.
void count_word_ngrams(const std::vector<uint32_t>& ids, size_t n, KeyCounts& counts) {
  counts.reset(ids.size());
  for (size_t i = 0; i + n <= ids.size(); ++i) {
    uint32_t w[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < n; ++k) w[k] = ids[i + k];
    counts.add({(uint64_t{w[0]} << 32) | w[1], (uint64_t{w[2]} << 32) | w[3]});
  }
}

/// Sum over the keys of min(hypothesis count, reference count): the clipped matches.
int64_t clipped_matches(const KeyCounts& hyp, const KeyCounts& ref) {
  int64_t matches = 0;
  hyp.for_each([&](const Key& key, int64_t count) { matches += std::min(count, ref.count(key)); });
  return matches;
}

}  // namespace

// --- BLEU ---------------------------------------------------------------------------------

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

/// Words as dense ids (from 1), for the length of one corpus score.
class WordIds {
 public:
  std::vector<uint32_t> ids(const std::vector<std::string>& words) {
    std::vector<uint32_t> out;
    out.reserve(words.size());
    for (const auto& w : words) {
      auto it = ids_.find(w);
      if (it == ids_.end()) {
        const auto& stored = words_.emplace_back(w);  // deque: the view below stays valid
        it = ids_.emplace(std::string_view(stored), static_cast<uint32_t>(ids_.size() + 1)).first;
      }
      out.push_back(it->second);
    }
    return out;
  }

 private:
  std::deque<std::string> words_;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

/// The counts of the word n-grams of orders 1..4.
using NgramCounts = std::array<KeyCounts, 4>;

/// Counts the n-grams of `ids` into `counts` (its tables are reused).
void count_ngrams(const std::vector<uint32_t>& ids, NgramCounts& counts) {
  for (size_t n = 1; n <= 4; ++n) count_word_ngrams(ids, n, counts[n - 1]);
}

/// Each key's largest count over the references' counts of one order.
KeyCounts max_counts(const std::vector<NgramCounts>& refs, size_t n) {
  size_t distinct = 0;
  for (const auto& r : refs) distinct += r[n].distinct();
  KeyCounts out(distinct);
  for (const auto& r : refs) r[n].for_each([&](const Key& key, int64_t count) { out.raise(key, count); });
  return out;
}

}  // namespace

void check_line_counts(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs) {
  if (refs.empty()) throw std::invalid_argument("no reference given");
  for (size_t k = 0; k < refs.size(); ++k)
    if (refs[k].size() != hyps.size())
      throw std::invalid_argument("reference " + std::to_string(k + 1) + " has " + std::to_string(refs[k].size()) +
                                  " lines but the hypotheses have " + std::to_string(hyps.size()));
}

std::string metric_version_tag() { return std::string("version:ropelab-") + ROPELAB_VERSION; }

std::string format_fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

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
  WordIds vocabulary;
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
          clipped_matches(hyp_counts[n], ref_counts.size() == 1 ? ref_counts[0][n] : max_counts(ref_counts, n));
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

// --- chrF ---------------------------------------------------------------------------------

namespace {

/// The character n-grams (whitespace removed) of orders 1..char_order, then the word n-grams of orders
/// 1..word_order, as sacreBLEU lists them.
using ChrfNgrams = std::vector<KeyCounts>;

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
void chrf_ngrams(const std::string& line, const ChrfOptions& options, WordIds& vocabulary, ChrfNgrams& out) {
  const auto text = utf8::decode(options.lowercase ? lowercase_utf8(line) : line);
  std::u32string chars;
  for (char32_t c : text)
    if (!utf8::is_space(c)) chars.push_back(c);
  const auto char_order = static_cast<size_t>(options.char_order);
  out.resize(char_order + static_cast<size_t>(options.word_order));
  // keys[i]: the n-gram starting at i, grown by one character per order; code points are
  // below 2^21, three in each half of the key
  std::vector<Key> keys(chars.size());
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
    count_word_ngrams(ids, n, out[char_order + n - 1]);
}

/// [hyp, ref, match] per order, flattened, into `stats`.
void chrf_stats(const ChrfNgrams& hyp, const ChrfNgrams& ref, std::vector<double>& stats) {
  stats.clear();
  for (size_t n = 0; n < hyp.size(); ++n) {
    const int64_t r = ref[n].total(), m = clipped_matches(hyp[n], ref[n]);
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
  WordIds vocabulary;
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
