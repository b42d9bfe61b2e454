#pragma once
/// Corpus and tokenizer options.

#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace ropelab {

/// `tsv`: one file per split, "source<TAB>target" per line;
/// `parallel`: PATH.SOURCE_LANG and PATH.TARGET_LANG, line-aligned.
enum class CorpusFormat { tsv, parallel };

struct DataOptions {
  TORCH_ARG(std::string, train) = "";
  TORCH_ARG(std::string, valid) = "";
  TORCH_ARG(std::string, test) = "";
  TORCH_ARG(CorpusFormat, format) = CorpusFormat::tsv;
  TORCH_ARG(std::string, source_lang) = "en";
  TORCH_ARG(std::string, target_lang) = "es";
  /// Token limit per side (BOS/EOS included); longer training pairs are skipped and counted.
  TORCH_ARG(int64_t, max_len) = 256;
  /// Batch sentences of similar length together (less padding); false = random batches.
  TORCH_ARG(bool, bucketing) = true;
};

/// `word`: whitespace words with punctuation split off, vocabulary from the training split;
/// `sentencepiece`: a unigram SentencePiece model trained on the training split.
enum class TokenizerType { word, sentencepiece };

struct TokenizerOptions {
  TORCH_ARG(TokenizerType, type) = TokenizerType::sentencepiece;
  /// Joint source+target vocabulary size (a maximum for `word`).
  TORCH_ARG(int64_t, vocab_size) = 8000;
};

}  // namespace ropelab
