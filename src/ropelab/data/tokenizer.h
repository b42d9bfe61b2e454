#pragma once
/// Tokenizers: text <-> token ids with the special ids every model in ropelab uses.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ropelab/data/options.h"

namespace ropelab {

/// Special ids, the same for every tokenizer.
constexpr int64_t kPadId = 0;
constexpr int64_t kUnkId = 1;
constexpr int64_t kBosId = 2;
constexpr int64_t kEosId = 3;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Text -> ids, without BOS/EOS.
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  /// Ids -> detokenized text; special ids are dropped.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  /// Writes the tokenizer's file at `path` (the byte tokenizer has none and writes nothing;
  /// run/ names the file, RunPaths::tokenizer).
  virtual void save(const std::string& path) const = 0;
};

/// Text of a token stream as it grows, piece by piece (`ropelab generate`'s output): each
/// push returns what the new token adds to the text. It decodes a few recent tokens with
/// the one before them as context, so each push costs the same however long the stream,
/// and a space or word boundary the tokenizer renders from its neighbours comes out as a
/// whole decode would give it. Bytes of an unfinished UTF-8 character wait for the rest.
class IncrementalDetokenizer {
 public:
  /// `context`: tokens already shown (a prompt); their text is not returned again.
  IncrementalDetokenizer(const Tokenizer& tokenizer, const std::vector<int64_t>& context = {});
  std::string push(int64_t id);

 private:
  const Tokenizer& tokenizer_;
  std::vector<int64_t> ids_;  // recent tokens
  size_t shown_ = 0;          // bytes of decode(ids_) already returned
};

/// Streams training text: calls the function it is given once per text.
using TextSource = std::function<void(const std::function<void(const std::string&)>&)>;

/// Trains a tokenizer of the configured type on `texts` (both languages: a joint vocabulary),
/// streaming them once. A SentencePiece model is written at `model_path`, its
/// intermediate files and piece list (.vocab) beside it; other types write nothing.
std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& options, const TextSource& texts,
                                           const std::string& model_path);
std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& options, const std::vector<std::string>& texts,
                                           const std::string& model_path);
/// Loads the tokenizer saved at `path` (ignored for the byte tokenizer); throws
/// std::runtime_error naming the file.
std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerOptions& options, const std::string& path);

/// The word tokenizer's pre-tokenization: whitespace split with punctuation split off.
std::vector<std::string> split_words(const std::string& text);

}  // namespace ropelab
