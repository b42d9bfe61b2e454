// TER (Snover et al. 2006) as sacreBLEU 2.x computes it by default: lowercased words split on
// whitespace, no normalisation, punctuation kept; greedy block shifts with Tercom's limits
// and ranking, then an edit distance searched in a beam around the length-scaled diagonal.
// The shift search and the beam decide which edits are found, so both follow sacreBLEU's
// lib_ter.py step for step (its documented departures from Tercom included); the prefix
// rows it caches in a trie are reused here from the previous hypothesis instead, which
// changes nothing but speed.
#include "ropelab/metrics/ter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "ropelab/metrics/corpus_metric.h"
#include "ropelab/metrics/tokenize.h"
#include "ropelab/metrics/utf8.h"

namespace ropelab {

namespace {

constexpr int64_t kMaxShiftSize = 10;
constexpr int64_t kMaxShiftDistance = 50;
constexpr int64_t kBeamWidth = 25;
constexpr int64_t kMaxShiftCandidates = 1000;
constexpr int64_t kInfinity = 10'000'000'000'000'000;  // sacreBLEU's int(1e16)

/// An edit in the matrix that turns the hypothesis (rows) into the reference (columns):
/// `remove` consumes a hypothesis word, `insert` a reference word.
enum class Op : char { keep, substitute, insert, remove, none };

struct Cell {
  int64_t cost = kInfinity;
  Op op = Op::none;
};

using Words = std::vector<int32_t>;

/// The edit distance from hypotheses of one length to a fixed reference, computed in a beam
/// around the diagonal. Row i depends only on the first i hypothesis words, so the rows of
/// the previous hypothesis are reused up to its common prefix with the next.
class BeamEditDistance {
 public:
  BeamEditDistance(const Words& ref, size_t hyp_len) : ref_(ref), n_(hyp_len), rows_(hyp_len + 1) {
    const size_t m = ref_.size();
    rows_[0].resize(m + 1);
    for (size_t j = 0; j <= m; ++j) rows_[0][j] = {static_cast<int64_t>(j), Op::insert};
    ratio_ = n_ > 0 ? static_cast<double>(m) / static_cast<double>(n_) : 1.0;
    beam_ = kBeamWidth < ratio_ / 2 ? static_cast<int64_t>(std::ceil(ratio_ / 2 + kBeamWidth)) : kBeamWidth;
  }

  int64_t operator()(const Words& hyp) {
    size_t same = 0;  // rows 0..same are valid for `hyp`
    while (same < valid_ && same < hyp.size() && hyp[same] == last_[same]) ++same;
    const auto m = static_cast<int64_t>(ref_.size());
    for (size_t i = same + 1; i <= n_; ++i) {
      auto& row = rows_[i];
      const auto& prev = rows_[i - 1];
      row.assign(ref_.size() + 1, Cell{});
      const auto diagonal = static_cast<int64_t>(std::floor(static_cast<double>(i) * ratio_));
      const int64_t lo = std::max<int64_t>(0, diagonal - beam_);
      const int64_t hi = i == n_ ? m + 1 : std::min<int64_t>(m + 1, diagonal + beam_);
      for (int64_t j = lo; j < hi; ++j) {
        auto& cell = row[static_cast<size_t>(j)];
        if (j == 0) {
          cell = {prev[0].cost + 1, Op::remove};
          continue;
        }
        const bool same_word = hyp[i - 1] == ref_[static_cast<size_t>(j - 1)];
        // Tercom's preference among equal costs, for the alignment read off the flipped trace:
        // keep or substitute, then remove, then insert.
        const Cell options[3] = {
            {prev[static_cast<size_t>(j - 1)].cost + (same_word ? 0 : 1), same_word ? Op::keep : Op::substitute},
            {prev[static_cast<size_t>(j)].cost + 1, Op::remove},
            {row[static_cast<size_t>(j - 1)].cost + 1, Op::insert}};
        for (const auto& o : options)
          if (cell.cost > o.cost) cell = o;
      }
    }
    last_ = hyp;
    valid_ = n_;
    return rows_[n_][ref_.size()].cost;
  }

  /// The edits of the last hypothesis, first to last.
  std::vector<Op> trace() const {
    std::vector<Op> ops;
    size_t i = n_, j = ref_.size();
    while (i > 0 || j > 0) {
      const Op op = rows_[i][j].op;
      ops.push_back(op);
      if (op == Op::keep || op == Op::substitute)
        --i, --j;
      else if (op == Op::insert)
        --j;
      else if (op == Op::remove)
        --i;
      else
        throw std::logic_error("TER: the edit trace left the beam");
    }
    std::reverse(ops.begin(), ops.end());
    return ops;
  }

 private:
  const Words& ref_;
  size_t n_;
  std::vector<std::vector<Cell>> rows_;
  Words last_;
  size_t valid_ = 0;
  double ratio_ = 1;
  int64_t beam_ = kBeamWidth;
};

/// sacreBLEU's _perform_shift with Python's slice clamping: `length` words from `start`
/// moved to before position `target`.
Words perform_shift(const Words& w, size_t start, size_t length, size_t target) {
  const size_t n = w.size();
  Words out;
  out.reserve(n);
  auto take = [&](size_t a, size_t b) {
    a = std::min(a, n), b = std::min(b, n);
    if (a < b)
      out.insert(out.end(), w.begin() + static_cast<std::ptrdiff_t>(a), w.begin() + static_cast<std::ptrdiff_t>(b));
  };
  if (target < start) {
    take(0, target), take(start, start + length), take(target, start), take(start + length, n);
  } else if (target > start + length) {
    take(0, start), take(start + length, target), take(start, start + length), take(target, n);
  } else {
    take(0, start), take(start + length, length + target), take(start, start + length), take(length + target, n);
  }
  return out;
}

struct ShiftResult {
  int64_t gain = 0;
  Words words;
};

/// The shift that lowers the edit distance most, ranked as Tercom ranks them; `checked`
/// counts the candidates tried over the whole sentence.
ShiftResult best_shift(const Words& hyp, const Words& ref, BeamEditDistance& distance, int64_t& checked) {
  const int64_t before = distance(hyp);
  // Alignment from the reference's side: the trace with insertions and removals swapped.
  std::vector<int64_t> align(ref.size(), -1);
  std::vector<int> hyp_err, ref_err;
  int64_t pos_hyp = -1, pos_ref = -1;
  for (Op op : distance.trace()) {
    if (op == Op::keep || op == Op::substitute) {
      const int err = op == Op::substitute;
      align[static_cast<size_t>(++pos_ref)] = ++pos_hyp;
      hyp_err.push_back(err), ref_err.push_back(err);
    } else if (op == Op::remove) {  // a hypothesis word the reference lacks
      ++pos_hyp;
      hyp_err.push_back(1);
    } else {  // a reference word the hypothesis lacks
      align[static_cast<size_t>(++pos_ref)] = pos_hyp;
      ref_err.push_back(1);
    }
  }
  auto any_error = [](const std::vector<int>& err, size_t from, size_t length) {
    for (size_t k = from; k < std::min(err.size(), from + length); ++k)
      if (err[k]) return true;
    return false;
  };
  bool found = false;
  int64_t best_key[4] = {0, 0, 0, 0};  // gain, length, -start_h, -target: larger is better
  Words best_words;
  const size_t n = hyp.size(), m = ref.size();
  for (size_t start_h = 0; start_h < n; ++start_h) {
    for (size_t start_r = 0; start_r < m; ++start_r) {
      if (std::abs(static_cast<int64_t>(start_r) - static_cast<int64_t>(start_h)) > kMaxShiftDistance) continue;
      for (size_t length = 1; length <= static_cast<size_t>(kMaxShiftSize) && start_h + length <= n &&
                              start_r + length <= m && hyp[start_h + length - 1] == ref[start_r + length - 1];
           ++length) {
        // Shift only words that are wrong, onto reference words that are unmatched, and not
        // within themselves.
        if (!any_error(hyp_err, start_h, length) || !any_error(ref_err, start_r, length)) continue;
        const int64_t aligned = align[start_r];
        if (static_cast<int64_t>(start_h) <= aligned && aligned < static_cast<int64_t>(start_h + length)) continue;
        int64_t previous = -1;
        for (int64_t offset = -1; offset < static_cast<int64_t>(length); ++offset) {
          const int64_t r = static_cast<int64_t>(start_r) + offset;
          const int64_t target = r == -1 ? 0 : align[static_cast<size_t>(r)] + 1;
          if (target == previous) continue;
          previous = target;
          auto shifted = perform_shift(hyp, start_h, length, static_cast<size_t>(target));
          const int64_t key[4] = {before - distance(shifted), static_cast<int64_t>(length),
                                  -static_cast<int64_t>(start_h), -target};
          ++checked;
          if (!found || std::lexicographical_compare(best_key, best_key + 4, key, key + 4)) {
            found = true;
            std::copy(key, key + 4, best_key);
            best_words = std::move(shifted);
          }
        }
        if (checked >= kMaxShiftCandidates) return {found ? best_key[0] : 0, found ? best_words : hyp};
      }
    }
  }
  return {found ? best_key[0] : 0, found ? best_words : hyp};
}

/// TER's words: rstripped, lowercased unless case-sensitive, split on whitespace.
std::vector<std::string> ter_words(const std::string& line, const TerOptions& options) {
  const auto text = utf8::rstrip(line);
  return utf8::split(utf8::decode(options.case_sensitive ? text : lowercase_utf8(text)));
}

}  // namespace

int64_t translation_edits(const std::vector<std::string>& hyp_words, const std::vector<std::string>& ref_words) {
  if (ref_words.empty()) return static_cast<int64_t>(hyp_words.size());
  std::unordered_map<std::string, int32_t> ids;
  auto to_ids = [&](const std::vector<std::string>& words) {
    Words out;
    for (const auto& w : words) out.push_back(ids.emplace(w, static_cast<int32_t>(ids.size())).first->second);
    return out;
  };
  const Words ref = to_ids(ref_words);
  Words hyp = to_ids(hyp_words);
  BeamEditDistance distance(ref, hyp.size());
  int64_t shifts = 0, checked = 0;
  while (true) {  // shifts until none lowers the edit distance, or the candidate budget is spent
    auto shift = best_shift(hyp, ref, distance, checked);
    if (checked >= kMaxShiftCandidates || shift.gain <= 0) break;
    ++shifts;
    hyp = std::move(shift.words);
  }
  return shifts + distance(hyp);
}

std::vector<TerStats> ter_sentence_stats(const std::vector<std::string>& hyps,
                                         const std::vector<std::vector<std::string>>& refs, const TerOptions& options) {
  check_line_counts(hyps, refs);
  std::vector<TerStats> stats(hyps.size());
  for (size_t i = 0; i < hyps.size(); ++i) {
    const auto hyp = ter_words(hyps[i], options);
    int64_t best = kInfinity, ref_words = 0;
    for (const auto& ref_set : refs) {
      const auto ref = ter_words(ref_set[i], options);
      best = std::min(best, translation_edits(hyp, ref));
      ref_words += static_cast<int64_t>(ref.size());
    }
    stats[i] = {static_cast<double>(best), static_cast<double>(ref_words) / static_cast<double>(refs.size())};
  }
  return stats;
}

TerScore ter_from_stats(const TerStats& total, const TerOptions& options, size_t nrefs) {
  TerScore score;
  score.edits = total.edits;
  score.ref_len = total.ref_len;
  // Empty references: 100 if anything had to be deleted, else 0 (sacreBLEU's convention).
  score.score = total.ref_len > 0 ? 100.0 * total.edits / total.ref_len : total.edits > 0 ? 100.0 : 0.0;
  score.signature = "nrefs:" + std::to_string(nrefs) + "|case:" + (options.case_sensitive ? "mixed" : "lc") +
                    "|tok:tercom|norm:no|punct:yes|asian:no|" + metric_version_tag();
  return score;
}

TerScore corpus_ter(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                    const TerOptions& options) {
  TerStats total;
  for (const auto& s : ter_sentence_stats(hyps, refs, options)) total.edits += s.edits, total.ref_len += s.ref_len;
  return ter_from_stats(total, options, refs.size());
}

std::string TerScore::format() const { return "TER = " + format_fixed(score, 2); }

}  // namespace ropelab
