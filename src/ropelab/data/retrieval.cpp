#include "ropelab/data/retrieval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>
#include <utility>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<RetrievalTask, 4> kTaskNames{{{RetrievalTask::multikey, "multikey"},
                                              {RetrievalTask::multivalue, "multivalue"},
                                              {RetrievalTask::mqar, "mqar"},
                                              {RetrievalTask::vartrack, "vartrack"}}};

constexpr size_t kKeyLetters = 7;                           // multikey, multivalue: a key of 7 lowercase letters
constexpr size_t kValueDigits = 5;                          // their values and vartrack's, the first digit not 0
constexpr size_t kVariableLetters = 5;                      // vartrack: a variable of 5 capitals
constexpr size_t kPairKeyLetters = 3;                       // mqar: a key of 3 lowercase letters, a value of 2 digits
constexpr size_t kPairChars = kPairKeyLetters + 1 + 2 + 1;  // "abc=12 "

std::string needle(const std::string& key, const std::string& value) {
  return "One of the special magic numbers for " + key + " is: " + value + ".";
}

std::string letters(SplitMix64& rng, size_t n, char first) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += static_cast<char>(first + rng.below(26));
  return out;
}

std::string number(SplitMix64& rng, size_t digits) {
  std::string out = std::to_string(1 + rng.below(9));
  for (size_t i = 1; i < digits; ++i) out += std::to_string(rng.below(10));
  return out;
}

/// Draws with `draw` until the result is new to `used` and absent from `hay`.
template <typename F>
std::string fresh(std::set<std::string>& used, const std::string& hay, F&& draw) {
  for (;;) {
    auto s = draw();
    if (!used.count(s) && hay.find(s) == std::string::npos) {
      used.insert(s);
      return s;
    }
  }
}

/// `hay` with each needle inserted at the last word boundary at or before its offset (offsets
/// in `hay`, in order): "... word NEEDLE word ...", or "NEEDLE word ..." at the start. Each
/// needle adds its length and one space.
std::string insert_needles(const std::string& hay, std::vector<std::pair<size_t, std::string>> needles) {
  std::stable_sort(needles.begin(), needles.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  size_t cursor = 0;
  for (const auto& [offset, text] : needles) {
    size_t at = std::min(offset, hay.size());
    while (at > 0 && hay[at] != ' ') --at;  // hay[at] == ' ' or at == 0
    if (at < cursor) at = cursor;
    out += hay.substr(cursor, at - cursor);
    out += at == 0 ? text + " " : " " + text;
    cursor = at;
  }
  return out + hay.substr(cursor);
}

/// An offset in [0, room] at `depth`, or uniform when depth < 0.
size_t offset_at(double depth, size_t room, SplitMix64& rng) {
  if (depth >= 0) return static_cast<size_t>(std::llround(depth * static_cast<double>(room)));
  return static_cast<size_t>(rng.below(static_cast<uint32_t>(room + 1)));
}

/// The question and its answer (with its terminator) of a needle task.
struct Ending {
  std::string question, answer;
};

/// A haystack document: the needles (each with its offset's depth, -1: uniform) hidden in
/// `hay`, then " " + question + answer.
RetrievalDocument hidden(SplitMix64& rng, const std::vector<std::pair<double, std::string>>& needles,
                         const Ending& ending, const std::string& hay) {
  RetrievalDocument d;
  std::vector<std::pair<size_t, std::string>> placed;
  for (const auto& [depth, text] : needles) placed.emplace_back(offset_at(depth, hay.size(), rng), text);
  d.text = insert_needles(hay, placed) + " " + ending.question;
  d.answers.push_back({d.text.size(), d.text.size() + ending.answer.size()});
  d.text += ending.answer;
  return d;
}

/// The characters the needles, the question and its answer take.
size_t fixed_chars(const std::vector<std::pair<double, std::string>>& needles, const Ending& ending) {
  size_t n = 1 + ending.question.size() + ending.answer.size();
  for (const auto& [depth, text] : needles) n += text.size() + 1;
  return n;
}

/// The needles and ending of a haystack task with placeholder keys of their real sizes (for
/// the minimum length), or drawn ones.
struct NeedleTask {
  std::vector<std::pair<double, std::string>> needles;
  Ending ending;
  double depth = std::numeric_limits<double>::quiet_NaN();
};

NeedleTask needle_task(const RetrievalOptions& o, SplitMix64* rng, const std::string& hay) {
  NeedleTask t;
  std::set<std::string> used;
  auto key = [&] {
    return rng ? fresh(used, hay, [&] { return letters(*rng, kKeyLetters, 'a'); }) : std::string(kKeyLetters, 'k');
  };
  auto value = [&] {
    return rng ? fresh(used, hay, [&] { return number(*rng, kValueDigits); }) : std::string(kValueDigits, '1');
  };
  auto variable = [&] {
    return rng ? fresh(used, hay, [&] { return letters(*rng, kVariableLetters, 'A'); })
               : std::string(kVariableLetters, 'V');
  };
  switch (o.task) {
    case RetrievalTask::multikey: {
      const auto asked = key(), answer = value();
      t.needles.emplace_back(o.depth, needle(asked, answer));
      for (int64_t i = 1; i < o.keys; ++i) t.needles.emplace_back(-1.0, needle(key(), value()));
      t.ending = {"What is the special magic number for " + asked + "? The special magic number for " + asked + " is",
                  " " + answer + "."};
      t.depth = o.depth;
      break;
    }
    case RetrievalTask::multivalue: {
      // the first value at `depth`, the others after it; asked for in that order
      const auto asked = key();
      std::vector<double> depths{o.depth};
      for (int64_t i = 1; i < o.values; ++i)
        depths.push_back(rng ? o.depth + (1 - o.depth) * static_cast<double>(rng->below(1001)) / 1000.0 : o.depth);
      std::sort(depths.begin(), depths.end());
      std::string answer;
      for (double depth : depths) {
        const auto v = value();
        t.needles.emplace_back(depth, needle(asked, v));
        answer += (answer.empty() ? " " : ", ") + v;
      }
      t.ending = {
          "What are all the special magic numbers for " + asked + "? The special magic numbers for " + asked + " are",
          answer + "."};
      t.depth = o.depth;
      break;
    }
    case RetrievalTask::vartrack: {
      // chain 0 is asked for; each chain's statements at sorted random depths
      std::string asked_value, answer;
      for (int64_t c = 0; c < o.keys; ++c) {
        std::vector<double> depths;
        for (int64_t h = 0; h <= o.hops; ++h)
          depths.push_back(rng ? static_cast<double>(rng->below(1001)) / 1000.0 : 0.0);
        std::sort(depths.begin(), depths.end());
        const auto v = value();
        std::string previous = variable();
        t.needles.emplace_back(depths[0], "VAR " + previous + " = " + v + ".");
        if (c == 0) asked_value = v, answer = " " + previous;
        for (int64_t h = 1; h <= o.hops; ++h) {
          const auto next = variable();
          t.needles.emplace_back(depths[static_cast<size_t>(h)], "VAR " + next + " = VAR " + previous + ".");
          if (c == 0) answer += ", " + next;
          previous = next;
        }
      }
      t.ending = {"Which variables hold " + asked_value + "? The variables that hold " + asked_value + " are",
                  answer + "."};
      break;
    }
    case RetrievalTask::mqar:
      TORCH_INTERNAL_ASSERT(false, "mqar has no needles");
  }
  return t;
}

void check_options(const RetrievalOptions& o) {
  auto positive = [](int64_t v, const char* name) {
    if (v < 1)
      throw std::invalid_argument(std::string("retrieval --") + name + " must be at least 1, got " + std::to_string(v));
  };
  positive(o.keys, "keys");
  positive(o.values, "values");
  positive(o.queries, "queries");
  if (o.hops < 0) throw std::invalid_argument("retrieval --hops must be >= 0, got " + std::to_string(o.hops));
  if (!(o.depth >= 0 && o.depth <= 1)) throw std::invalid_argument("retrieval depth must be in [0, 1]");
}

/// mqar: the pairs and queries that fit `length`.
std::pair<int64_t, int64_t> mqar_sizes(const RetrievalOptions& o) {
  const int64_t slots = o.length / static_cast<int64_t>(kPairChars);  // a pair or a query each
  const int64_t queries = std::min(o.queries, slots / 2);
  return {slots - queries, queries};
}

RetrievalDocument mqar_document(const RetrievalOptions& o, SplitMix64& rng) {
  const auto [pairs, queries] = mqar_sizes(o);
  constexpr int64_t kKeys = 26 * 26 * 26;
  if (pairs > kKeys / 2)
    throw std::invalid_argument("retrieval mqar: " + std::to_string(pairs) + " pairs at length " +
                                std::to_string(o.length) + " exceed the " + std::to_string(kKeys / 2) +
                                " distinct 3-letter keys it draws from");
  std::set<std::string> used;
  std::vector<std::string> keys, values;
  for (int64_t i = 0; i < pairs; ++i) {
    keys.push_back(fresh(used, "", [&] { return letters(rng, kPairKeyLetters, 'a'); }));
    values.push_back(std::to_string(rng.below(10)) + std::to_string(rng.below(10)));
  }
  RetrievalDocument d;
  for (int64_t i = 0; i < pairs; ++i) d.text += (i ? " " : "") + keys[i] + "=" + values[i];
  d.text += ".";
  // distinct keys asked, in random order (a partial Fisher-Yates shuffle)
  std::vector<int64_t> order(static_cast<size_t>(pairs));
  for (int64_t i = 0; i < pairs; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t q = 0; q < queries; ++q) {
    const auto pick = q + static_cast<int64_t>(rng.below(static_cast<uint32_t>(pairs - q)));
    std::swap(order[static_cast<size_t>(q)], order[static_cast<size_t>(pick)]);
    const auto k = static_cast<size_t>(order[static_cast<size_t>(q)]);
    d.text += " " + keys[k] + "=";
    d.answers.push_back({d.text.size(), d.text.size() + values[k].size()});
    d.text += values[k];
  }
  d.text += ".";
  return d;
}

}  // namespace

std::string to_string(RetrievalTask task) { return enum_name(task, kTaskNames); }

RetrievalTask parse_retrieval_task(const std::string& name) {
  for (const auto& [task, spelling] : kTaskNames)
    if (name == spelling) return task;
  throw std::invalid_argument("unknown retrieval task '" + name + "' (expected " + enum_choices(kTaskNames) + ")");
}

const std::vector<std::string>& retrieval_task_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [task, spelling] : kTaskNames) out.push_back(spelling);
    return out;
  }();
  return names;
}

bool retrieval_has_depth(RetrievalTask task) {
  return task == RetrievalTask::multikey || task == RetrievalTask::multivalue;
}

Haystack::Haystack(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the haystack corpus");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) text_ += (text_.empty() ? "" : " ") + line;
  if (text_.find(' ') == std::string::npos) throw std::runtime_error(path + ": no text to hide needles in");
}

std::string Haystack::take(size_t chars, SplitMix64& rng) const {
  size_t at = rng.below(static_cast<uint32_t>(std::min<size_t>(text_.size(), UINT32_MAX)));
  while (text_[at] != ' ') at = (at + 1) % text_.size();  // to the next word's start
  at = (at + 1) % text_.size();
  std::string out;
  out.reserve(chars);
  while (out.size() < chars) {
    const size_t n = std::min(chars - out.size(), text_.size() - at);
    out.append(text_, at, n);
    if (out.size() < chars) out += ' ';  // the corpus's end joins its start
    at = 0;
  }
  out.resize(chars);
  return out;
}

int64_t retrieval_minimum_length(const RetrievalOptions& o) {
  if (o.task == RetrievalTask::mqar) return static_cast<int64_t>(2 * kPairChars);
  const auto t = needle_task(o, nullptr, "");
  return static_cast<int64_t>(fixed_chars(t.needles, t.ending));
}

RetrievalDocument make_retrieval_document(const RetrievalOptions& o, const Haystack* haystack, uint64_t seed,
                                          uint64_t index) {
  check_options(o);
  const int64_t minimum = retrieval_minimum_length(o);
  if (o.length < minimum)
    throw std::invalid_argument("retrieval " + to_string(o.task) + ": length " + std::to_string(o.length) +
                                " is below the " + std::to_string(minimum) +
                                " characters its needles and question take");
  SplitMix64 rng(seed * 0xD1B54A32D192ED03ULL + index);  // one stream per document
  if (o.task == RetrievalTask::mqar) return mqar_document(o, rng);
  if (!haystack) throw std::invalid_argument("retrieval " + to_string(o.task) + " needs a haystack corpus");
  // the haystack first, so that no key or value drawn appears in it
  const auto fixed = static_cast<size_t>(minimum);
  const auto hay = haystack->take(static_cast<size_t>(o.length) - fixed, rng);
  auto t = needle_task(o, &rng, hay);
  auto d = hidden(rng, t.needles, t.ending, hay);
  d.depth = t.depth;
  return d;
}

}  // namespace ropelab
