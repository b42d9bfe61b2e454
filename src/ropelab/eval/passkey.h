#pragma once
/// Passkey retrieval (Mohtashami and Jaggi 2023): a document of filler sentences with
/// "The pass key is NNNNN. Remember it. NNNNN is the pass key." inserted at a chosen depth,
/// ending in "What is the pass key? The pass key is"; a model retrieves the key if it
/// continues the document with it. Documents are generated from a seed, the same on every
/// platform; their length is counted in characters (bytes for ASCII: the tokens of a byte
/// or character tokenizer).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ropelab/model/precision.h"

namespace ropelab {

struct PasskeyOptions {
  int64_t length = 256;  // characters of the prompt (the answer excluded), at least minimum_length()
  double depth = 0.5;    // where the key sentence sits in the filler: 0 first, 1 last
  int64_t digits = 5;    // of the key, the first not 0
};

struct PasskeyDocument {
  std::string prompt;  // filler, key sentence, filler, question
  std::string key;     // the answer: the digits
  /// The document with its answer, as a training line: prompt + " " + key + "."
  std::string with_answer() const { return prompt + " " + key + "."; }
};

/// The shortest prompt: the key sentence and the question with no filler.
int64_t passkey_minimum_length(int64_t digits);

/// Document number `index` of the stream `seed` (documents are independent of each other:
/// the same (seed, index) gives the same document whatever else is generated). Throws
/// std::invalid_argument naming the option that is out of range.
PasskeyDocument make_passkey_document(const PasskeyOptions& options, uint64_t seed, uint64_t index);

/// Throws std::invalid_argument "FLAG LENGTH is below the N characters of the key sentence
/// and the question" when a prompt of `length` characters cannot hold them.
void check_passkey_length(int64_t length, int64_t digits, const std::string& flag);

/// What `ropelab passkey make` writes: `count` documents, each with its prompt length drawn
/// uniformly from [min_length, length] (all `length` when min_length is 0) and its depth from
/// 0, 0.01, ..., 1, from a stream of their own; its text from (seed, index).
struct PasskeyDocumentSet {
  int64_t count = 1000, length = 128, min_length = 0, digits = 5;
  uint64_t seed = 1;
  bool prompts = false;  // PROMPT<TAB>KEY lines instead of documents ending in their key
};

/// The documents of `set`, one a line. Throws std::invalid_argument naming the flag that is
/// out of range.
void write_passkey_documents(const PasskeyDocumentSet& set, std::ostream& out);

/// The key a model's continuation gives: the first run of digits after optional spaces,
/// or "" if it does not start with a digit.
std::string passkey_answer(const std::string& continuation);

/// Whether a decoded document (the prompt and the model's continuation; a subword
/// tokenizer may change the prompt's spacing) answers the question with `key`: what
/// follows the last "The pass key is" is the key.
bool passkey_retrieved(const std::string& output, const std::string& key);

/// What `ropelab passkey eval` measures: every length x depth, `documents` each.
struct PasskeyGrid {
  std::vector<int64_t> lengths{128, 256, 512, 1024, 2048};  // prompt characters
  std::vector<double> depths{0, 0.25, 0.5, 0.75, 1};
  int64_t documents = 20;  // per cell
  int64_t digits = 5;
  uint64_t seed = 1;
};

/// The `ropelab passkey eval` flags that ask for `grid`, one argument each: --lengths
/// 128,256 --depths 0,0.5,1 --documents 20 --passkey-seed 1 (digits are not a flag).
std::vector<std::string> passkey_eval_args(const PasskeyGrid& grid);

/// The shortest context (tokens of a byte or character tokenizer) that holds a prompt of
/// `length` characters, the start token and the answer (a space, the digits, a period).
inline int64_t passkey_context(int64_t length, int64_t digits) { return length + digits + 3; }

/// A 95% confidence interval of a proportion.
struct ProportionInterval {
  double low = 0, high = 0;
};

/// Wilson's score interval (Wilson 1927) for `successes` of `trials` at 95% (z = 1.96):
/// the proportions p whose score test |successes / trials - p| <= z sqrt(p (1 - p) / trials)
/// does not reject; unlike the normal approximation it stays inside [0, 1] and is not empty
/// at 0 or `trials` successes. Needs trials > 0.
ProportionInterval wilson_interval(int64_t successes, int64_t trials);

struct PasskeyCell {
  int64_t length = 0;
  double depth = 0;
  int64_t documents = 0, correct = 0;
  std::string error;  // why the cell could not be evaluated (a context the model cannot take)
  double accuracy() const { return documents > 0 ? static_cast<double>(correct) / static_cast<double>(documents) : 0; }
};

/// Why `cell` cannot stand as the grid's cell `at` (lengths outer, from 0), or "" when it
/// can: the same length and depth and, unless it carries an error, the grid's documents.
/// "length L depth D with N documents, where the grid's cell at+1 is ..." or "a cell beyond
/// the grid's N". A stopped evaluation's cells are checked by this before they are taken.
std::string passkey_cell_mismatch(const PasskeyGrid& grid, size_t at, const PasskeyCell& cell);

/// passkey.csv: length, depth, documents, correct, accuracy, ci95_low, ci95_high (Wilson's
/// interval of the accuracy; empty for a cell not evaluated), error.
void write_passkey_table(const std::string& path, const std::vector<PasskeyCell>& cells);

/// The cells of a table write_passkey_table wrote (length, depth, documents, correct; an
/// error cell's error is its text); throws std::runtime_error naming the file and line.
std::vector<PasskeyCell> read_passkey_table(const std::string& path);

/// The cells as a table for people: length, depth, accuracy (correct/documents; Wilson's 95%
/// interval), or n/a and why.
std::string format_passkey_cells(const std::vector<PasskeyCell>& cells);

/// passkey.json: {"accuracy": over every evaluated cell, "accuracy@L": over length L's
/// depths, ..., then "ci95": [low, high] and "ci95@L" the Wilson intervals of those (null
/// for a length with a cell that could not be evaluated: over the other depths alone it
/// would not compare), then "correct@L" and "documents@L", the counts of the evaluated cells,
/// and "passkey_seed", the stream of the documents}.
void write_passkey_summary(const std::string& path, const std::vector<PasskeyCell>& cells, uint64_t seed);

/// What a passkey evaluation scores and with what: its partial file is taken back only by
/// an evaluation that agrees on all of it.
struct PasskeyEvaluation {
  PasskeyGrid grid;
  std::string version;  // the program's, so that another release starts again
  Precision precision = Precision::fp32;
  std::string device;                  // "cpu", "cuda:0"
  std::vector<std::string> overrides;  // --set KEY=VALUE, in the order given
  std::string config_fingerprint;      // of the run's config.yaml
  std::string checkpoint_fingerprint;  // of the checkpoint's bytes as loaded
};

/// The key of `evaluation`'s partial file: one JSON object holding every field (the depths
/// exactly, where the flags keep 6 digits), so that two evaluations share a key only when
/// they agree on all of them.
std::string passkey_evaluation_key(const PasskeyEvaluation& evaluation);

/// The partial file of an evaluation under way (RUN/passkey.partial.jsonl): a first line
/// {"evaluation": KEY}, KEY naming what is evaluated (the grid, the checkpoint's contents,
/// the settings), then one {"length", "depth", "documents", "correct", "error"} object per cell
/// scored so far, in the grid's order. Rewritten whole after each cell, so that an evaluation
/// stopped part-way goes on from the cell it was at.
void write_passkey_partial(const std::string& path, const std::string& key, const std::vector<PasskeyCell>& cells);

/// The cells of the partial file at `path` when it was written under `key`; none when there
/// is no such file, or when it holds another evaluation's cells (`*other` is then true).
/// Throws "PATH line N: ..." on a line that is not what write_passkey_partial writes, or not
/// the next cell of `grid` (lengths outer).
std::vector<PasskeyCell> read_passkey_partial(const std::string& path, const std::string& key, const PasskeyGrid& grid,
                                              bool* other = nullptr);

}  // namespace ropelab
