#pragma once
/// The columns of an ablation's tables as typed keys: what is measured, at which length,
/// stride and RoPE scaling. One formatter gives a column's name in results.csv/md and
/// significance.csv; one parser reads it back (the plots group columns by their keys).
///   valid_ppl, train_s                  best validation perplexity, training seconds
///   test_bleu, test_chrf, test_ter      translation quality of the test split
///   test_ppl                            teacher-forced test perplexity (translation)
///   test_ppl@C, test_ppl@C/S            window perplexity at context C (sliding by S)
///   test_ppl@C+SCALING                  ... with RoPE scaling SCALING applied at evaluation
///   test_ppl@C#wW, test_ppl@C#wWsS      ... with sliding-window attention over W keys (and S sinks)
///   passkey@L                           passkey accuracy over depths at prompt length L
///   gain@C#wW:B-E                       context gain at context C of the keys farther than W,
///                                       in nats per token, over window positions [B, E)
///   TASK@L                              a retrieval probe's accuracy at length L (mqar@1024)

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace ropelab {

struct ColumnKey {
  enum class Measure { valid_ppl, train_s, test_bleu, test_chrf, test_ter, test_ppl, passkey, gain, retrieval };
  Measure measure = Measure::valid_ppl;
  int64_t length = 0;   // test_ppl: the evaluation context (0: none, translation); passkey: the prompt length
  int64_t stride = 0;   // test_ppl: windows sliding by it; 0: non-overlapping
  std::string scaling;  // test_ppl: the RoPE scaling applied at evaluation; "": none
  int64_t window = 0;   // test_ppl, passkey: sliding-window attention over this many keys at evaluation; 0: every key
  int64_t sinks = 0;    // test_ppl, passkey: attention sinks kept with the window
  int64_t begin = 0, end = 0;  // gain: the positions of the window the gain is over (window: its W)
  std::string task;            // retrieval: the task (data/retrieval.h)

  ColumnKey() = default;
  ColumnKey(Measure measure, int64_t length = 0, int64_t stride = 0, std::string scaling = "", int64_t window = 0,
            int64_t sinks = 0)
      : measure(measure), length(length), stride(stride), scaling(std::move(scaling)), window(window), sinks(sinks) {}
  /// A gain column: at context `context`, keys farther than `window`, positions [begin, end).
  static ColumnKey gain(int64_t context, int64_t window, int64_t begin, int64_t end) {
    ColumnKey key(Measure::gain, context, 0, "", window);
    key.begin = begin, key.end = end;
    return key;
  }
  /// A retrieval column: `task`'s accuracy at length `length`.
  static ColumnKey retrieval(std::string task, int64_t length) {
    ColumnKey key(Measure::retrieval, length);
    key.task = std::move(task);
    return key;
  }
  bool operator==(const ColumnKey& other) const {
    return measure == other.measure && length == other.length && stride == other.stride && scaling == other.scaling &&
           window == other.window && sinks == other.sinks && begin == other.begin && end == other.end &&
           task == other.task;
  }
  /// Whether the column is an accuracy over documents (passkey, retrieval).
  bool accuracy() const { return measure == Measure::passkey || measure == Measure::retrieval; }
  /// How attention and RoPE ran at evaluation, for legends: "none", "yarn", "w128", "w128s4".
  std::string evaluated_as() const;
};

std::string format_column(const ColumnKey& key);
/// The key of a column's name; nullopt for a name format_column never gives.
std::optional<ColumnKey> parse_column(const std::string& name);
/// The tables' order of columns: by name, the lengths of one measure by value
/// (test_ppl@256 before test_ppl@1024). A strict weak order for std::stable_sort.
bool column_before(const std::string& a, const std::string& b);

}  // namespace ropelab
