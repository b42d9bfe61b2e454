#pragma once
/// Synthetic retrieval probes of effective context, generated as text documents (as passkey
/// retrieval is, eval/passkey.h), each with the spans of its text a model must give:
///   multikey    multi-key needle in a haystack (Hsieh et al. 2024, RULER): `keys` needles
///               "One of the special magic numbers for KEY is: VALUE." with distinct keys
///               hidden in real text, one of them asked for at the end
///   multivalue  multi-value needle (RULER): `values` needles of one key, every value asked
///               for, in the order they appear
///   mqar        multi-query associative recall (Arora et al. 2023): key=value pairs, then
///               `queries` of the keys again, each followed by its value; no haystack, the
///               pairs fill the length
///   vartrack    variable tracking (RULER): `keys` chains "VAR X = 12345." then "VAR Y = VAR
///               X." ... (`hops` after the first) hidden in real text; every variable of one
///               chain asked for, in order
/// A document's length counts characters, the answers included (the tokens of a byte
/// tokenizer for ASCII text); the needles sit at word boundaries of the haystack, the asked
/// needle at `depth` (0: first, 1: last) where the task has one. Keys, values and variables
/// are drawn without repeats within a document, so the only key that appears twice is
/// one the task asks for again (mqar). Documents come from a seed and an index, the same on
/// every platform, each independent of the others.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ropelab/util/random.h"

namespace ropelab {

enum class RetrievalTask { multikey, multivalue, mqar, vartrack };

std::string to_string(RetrievalTask task);
/// Throws std::invalid_argument naming the tasks on an unknown name.
RetrievalTask parse_retrieval_task(const std::string& name);
/// Every task's name, in the enum's order.
const std::vector<std::string>& retrieval_task_names();
/// Whether the task places its asked needle at a depth (multikey, multivalue).
bool retrieval_has_depth(RetrievalTask task);

struct RetrievalOptions {
  RetrievalTask task = RetrievalTask::multikey;
  int64_t length = 1024;  // characters of the document, answers included
  double depth = 0.5;     // multikey, multivalue: where the asked needle sits in the haystack
  int64_t keys = 3;       // multikey: needles (one asked); vartrack: chains (one asked)
  int64_t values = 3;     // multivalue: needles of the asked key
  int64_t queries = 8;    // mqar: keys asked again (at most half the pairs and queries that fit)
  int64_t hops = 2;       // vartrack: assignments after the first of each chain
};

/// [begin, end) of a document's text, in characters.
struct AnswerSpan {
  size_t begin = 0, end = 0;
};

struct RetrievalDocument {
  std::string text;                                         // the document with its answers: a training line
  std::vector<AnswerSpan> answers;                          // what is scored, in order
  double depth = std::numeric_limits<double>::quiet_NaN();  // of the asked needle; NaN without one
  std::string answer(size_t i) const { return text.substr(answers[i].begin, answers[i].end - answers[i].begin); }
};

/// The real text needles hide in: a corpus's non-empty lines, joined by spaces, read once.
class Haystack {
 public:
  /// Throws std::runtime_error naming `path` when it cannot be read or holds no text.
  explicit Haystack(const std::string& path);
  /// `chars` characters of the corpus from a word start drawn from `rng` (wrapping around).
  std::string take(size_t chars, SplitMix64& rng) const;

 private:
  std::string text_;
};

/// The shortest document of these options: the needles and the question with no haystack
/// (mqar: one pair asked once).
int64_t retrieval_minimum_length(const RetrievalOptions& options);

/// Document `index` of the stream `seed`. `haystack` may be null for mqar. Throws
/// std::invalid_argument naming the option out of range (a length the needles cannot fit).
RetrievalDocument make_retrieval_document(const RetrievalOptions& options, const Haystack* haystack, uint64_t seed,
                                          uint64_t index);

}  // namespace ropelab
