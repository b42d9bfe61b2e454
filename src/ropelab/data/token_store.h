#pragma once
/// Sets of examples by index: in memory (ExampleView) or memory-mapped from disk
/// (TokenStore), so a training corpus need not fit in memory.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ropelab/data/examples.h"

namespace ropelab {

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

class Tokenizer;

/// About how many bytes a token store of the text in `files` takes (4 per token, 16 per
/// example, 10% spare), from the tokens per byte of their first MiB; 0 when a file is not a
/// regular file (a pipe: its size is unknown and it can be read only once).
uint64_t estimate_store_bytes(const std::vector<std::string>& files, const Tokenizer& tokenizer);

/// Tokenized examples on disk: PATH.tokens (int32 ids) and PATH.index (per example: uint64
/// offset, uint32 source and target lengths), both memory-mapped read-only. Written once
/// by a streaming Writer, under PATH.tokens.tmp and PATH.index.tmp until finish() renames
/// them into place: a reader never maps a partial store. Only the pages a batch touches
/// are read.
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
    /// Flushes, closes and renames the files into place; throws naming the file on a write
    /// error (a full disk). A Writer destroyed unfinished removes its temporary files.
    void finish();

   private:
    /// Removes the temporary files (an unfinished or failed store).
    void discard() const;
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

}  // namespace ropelab
