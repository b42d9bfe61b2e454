#pragma once
/// The n-gram counting that BLEU and chrF share (bleu.cpp, chrf.cpp): an n-gram is packed
/// exactly into 128 bits (up to four 32-bit word ids, or six 21-bit code points) and counted
/// in a small open-addressing table, with no allocation per n-gram: several times faster
/// than hashing strings into a node-based map. Internal to the metrics.

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ropelab::ngram {

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
inline void count_word_ngrams(const std::vector<uint32_t>& ids, size_t n, KeyCounts& counts) {
  counts.reset(ids.size());
  for (size_t i = 0; i + n <= ids.size(); ++i) {
    uint32_t w[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < n; ++k) w[k] = ids[i + k];
    counts.add({(uint64_t{w[0]} << 32) | w[1], (uint64_t{w[2]} << 32) | w[3]});
  }
}

/// Sum over the keys of min(hypothesis count, reference count): the clipped matches.
inline int64_t clipped_matches(const KeyCounts& hyp, const KeyCounts& ref) {
  int64_t matches = 0;
  hyp.for_each([&](const Key& key, int64_t count) { matches += std::min(count, ref.count(key)); });
  return matches;
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

}  // namespace ropelab::ngram
