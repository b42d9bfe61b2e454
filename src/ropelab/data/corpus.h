#pragma once
/// Parallel corpora and token-budget batching.

#include "ropelab/data/options.h"
#include "ropelab/data/tokenizer.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ropelab {

/// Line-aligned sentence pairs of one split.
struct ParallelText {
  std::vector<std::string> source, target;
  std::vector<int64_t> line;  // 1-based line number of each pair in its file(s)
  int64_t skipped_empty = 0;  // pairs dropped because a side was empty
};

/// Reads the split at `path` in the configured format (tsv: PATH; parallel:
/// PATH.SOURCE_LANG + PATH.TARGET_LANG). Strips a UTF-8 byte-order mark and CR line
/// ends; skips and counts pairs with an empty side. Throws std::runtime_error naming
/// the file and line for invalid UTF-8, a missing tab, or files with different line counts.
ParallelText read_parallel(const DataOptions& options, const std::string& path);

/// Reads a text file's lines, dropping a leading UTF-8 BOM and trailing CRs; throws
/// std::runtime_error "PATH:LINE: invalid UTF-8" or "PATH: cannot open".
std::vector<std::string> read_text_lines(const std::string& path);

/// The same, streaming: `fn(line, number)` per line (1-based), nothing kept.
void for_each_line(const std::string& path, const std::function<void(std::string& line, int64_t number)>& fn);

/// read_parallel, streaming: `fn(source, target, line)` per usable pair, nothing kept;
/// pairs with an empty side are counted in `*skipped_empty`. Same checks and messages.
void for_each_pair(const DataOptions& options, const std::string& path,
                   const std::function<void(std::string& source, std::string& target, int64_t line)>& fn,
                   int64_t* skipped_empty = nullptr);

/// Whether `text` is valid UTF-8 (no overlongs, surrogates or values over U+10FFFF).
bool valid_utf8(const std::string& text);

/// One tokenized pair; BOS/EOS are added at batching. A language-model chunk has no
/// source and its target holds context + 1 tokens (inputs and next tokens overlap by all
/// but one).
struct Example {
  std::vector<int64_t> source, target;
  /// Grid layout: (row, column) of every source token and of its EOS, flattened.
  std::vector<int64_t> source_positions;
};

/// The id of data.row_separator for the grid layout, -1 for the sequence layout. Throws
/// std::runtime_error naming data.row_separator when it is not exactly one token.
int64_t row_separator_id(const DataOptions& options, const Tokenizer& tokenizer);

/// (row, column) for `ids` followed by EOS, flattened: the separator ends its row (and
/// sits at its end), the EOS gets (rows, 0).
std::vector<int64_t> grid_positions(const std::vector<int64_t>& ids, int64_t separator);

/// Tokenizes pairs; pairs longer than `max_len` tokens (with BOS/EOS) on either side are
/// truncated when `truncate`, else skipped; both are counted in `*dropped`. With a
/// `separator` id (grid layout), source coordinates are attached.
std::vector<Example> tokenize_pairs(const ParallelText& text, const Tokenizer& tokenizer, int64_t max_len,
                                    bool truncate, int64_t* dropped, int64_t separator = -1);

/// Language-model data: each non-empty line tokenized and ended by EOS, concatenated, cut
/// into consecutive chunks of `context` predicted tokens (each chunk starts with the
/// last token of the previous one, so every token after the first is predicted exactly
/// once). Empty lines are counted in `*empty`. With `max_tokens` > 0 the stream stops
/// after that many predicted tokens.
std::vector<Example> lm_chunks(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                               int64_t* empty = nullptr, int64_t max_tokens = 0);

/// Examples by index, for batching: in memory (ExampleView) or memory-mapped from disk
/// (TokenStore), so a training corpus need not fit in memory.
class ExampleSet {
 public:
  virtual ~ExampleSet() = default;
  virtual size_t size() const = 0;
  /// Longer side + 1 (EOS or the shifted target): what a batch pads to.
  virtual size_t padded_length(size_t i) const = 0;
  virtual Example get(size_t i) const = 0;
};

/// A non-owning view of examples in memory.
class ExampleView : public ExampleSet {
 public:
  explicit ExampleView(const std::vector<Example>& examples) : examples_(examples) {}
  size_t size() const override { return examples_.size(); }
  size_t padded_length(size_t i) const override;
  Example get(size_t i) const override { return examples_[i]; }

 private:
  const std::vector<Example>& examples_;
};

/// Tokenized examples on disk: PATH.tokens (int32 ids) and PATH.index (per example: uint64
/// offset, uint32 source and target lengths), both memory-mapped read-only. Written once
/// by a streaming Writer; only the pages a batch touches are read.
class TokenStore : public ExampleSet {
 public:
  class Writer {
   public:
    explicit Writer(std::string path);
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    /// Appends tokens to the stream; returns the offset of the first.
    uint64_t append_tokens(const std::vector<int64_t>& ids);
    /// Adds an example spanning `source_len + target_len` tokens from `offset`.
    void add_span(uint64_t offset, uint32_t source_len, uint32_t target_len);
    /// Appends a pair's tokens and its span.
    void add(const Example& example);
    uint64_t tokens() const { return tokens_written_; }
    /// Flushes and closes; throws naming the file on a write error (a full disk).
    void finish();

   private:
    std::string path_;
    std::FILE* tokens_ = nullptr;
    std::FILE* index_ = nullptr;
    uint64_t tokens_written_ = 0;
  };

  /// Maps PATH.tokens and PATH.index; `separator` >= 0 attaches grid coordinates.
  explicit TokenStore(const std::string& path, int64_t separator = -1);
  ~TokenStore() override;
  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;
  size_t size() const override { return count_; }
  size_t padded_length(size_t i) const override;
  Example get(size_t i) const override;

 private:
  struct Span {
    uint64_t offset;
    uint32_t source_len, target_len;
  };
  std::string path_;
  const int32_t* tokens_ = nullptr;
  const Span* spans_ = nullptr;
  size_t token_bytes_ = 0, index_bytes_ = 0, count_ = 0, token_count_ = 0;
  int64_t separator_;
};

/// Streams a language-model text into a TokenStore at `path`: lines tokenized, each
/// ended by EOS, chunked as lm_chunks does. Returns the number of empty lines skipped.
int64_t write_lm_store(const std::string& text_path, const Tokenizer& tokenizer, int64_t context,
                       const std::string& path);

/// Streams the pairs of a split into a TokenStore at `path`, as tokenize_pairs (without
/// truncation). Returns the pairs skipped for length; `*skipped_empty` counts empty sides.
int64_t write_pair_store(const DataOptions& options, const std::string& split_path, const Tokenizer& tokenizer,
                         const std::string& path, int64_t* skipped_empty);

struct Batch {
  torch::Tensor source;      // (B, S): tokens EOS pad...; undefined for language models
  torch::Tensor target_in;   // (B, T): BOS tokens pad... (LM: chunk[:-1])
  torch::Tensor target_out;  // (B, T): tokens EOS pad... (LM: chunk[1:])
  torch::Tensor source_positions;  // (B, S, 2) in the grid layout, else undefined
  int64_t target_tokens = 0; // non-pad target tokens
  int64_t sentences = 0;
};

/// Pads the examples at `indices` into one batch on `device`.
Batch collate(const ExampleSet& examples, const std::vector<size_t>& indices, const torch::Device& device);
Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& indices, const torch::Device& device);

/// Pads language-model chunks into one batch: inputs chunk[:-1], targets chunk[1:].
Batch collate_lm(const ExampleSet& examples, const std::vector<size_t>& indices, const torch::Device& device);

/// Splits examples into batches whose padded size (rows x longest side) stays within
/// `max_tokens`. With `bucketing`, examples of similar length share a batch (sorted by
/// length with seeded random tie-breaks); without, batches are drawn in random order.
/// Batch order is shuffled with `seed`.
std::vector<std::vector<size_t>> plan_batches(const ExampleSet& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed);
std::vector<std::vector<size_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens,
                                              bool bucketing, uint64_t seed);

/// Cuts `order` into consecutive batches whose padded size (rows x the longest
/// `length(i)`) stays within `max_tokens`; a batch holds at least one example.
std::vector<std::vector<size_t>> pack_batches(const std::vector<size_t>& order,
                                              const std::function<size_t(size_t)>& length, int64_t max_tokens);

}  // namespace ropelab
