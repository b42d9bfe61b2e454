#pragma once
/// Corpus and tokenizer options.

#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace ropelab {

/// `tsv`: one file per split, "source<TAB>target" per line;
/// `parallel`: PATH.SOURCE_LANG and PATH.TARGET_LANG, line-aligned;
/// `text`: plain text, one document or paragraph per line (language models).
enum class CorpusFormat { tsv, parallel, text };

/// Coordinates of source tokens. `sequence`: token order (one axis). `grid`: 2-D text,
/// rows ended by the `row_separator` token; a token's coordinates are (row, column),
/// the separator sits at its row's end and the final EOS starts a new row.
enum class SourceLayout { sequence, grid };

/// Language models: retrieval documents (data/retrieval.h) mixed into the training text,
/// drawn afresh for every training seed (train.seed), their haystack from `corpus`.
struct RetrievalMixOptions {
  /// The tasks, comma-separated ("multikey,mqar"), drawn in turn; "": no mix.
  TORCH_ARG(std::string, tasks) = "";
  /// Their share of the training tokens, in [0, 1); set with `tasks`.
  TORCH_ARG(double, ratio) = 0.0;
  /// Document lengths in characters, drawn uniformly from [min_length, max_length].
  TORCH_ARG(int64_t, min_length) = 256;
  TORCH_ARG(int64_t, max_length) = 504;
  /// The haystack's text; "": data.train.
  TORCH_ARG(std::string, corpus) = "";
};

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
  /// Language models: tokens per training chunk (the context length).
  TORCH_ARG(int64_t, context) = 128;
  /// Language models: validation and test perplexity over the first `eval_tokens` tokens
  /// of the split (0 = all of it), so that long evaluation splits stay cheap in ablations.
  TORCH_ARG(int64_t, eval_tokens) = 0;
  /// Language models: each line of the text is one document (a speech, a book), and every
  /// training and evaluation window stays inside one, starting at its first token (after an
  /// EOS, the boundary the model reads before a document); false: the lines are one stream
  /// of documents separated by EOS, cut into windows wherever they fall.
  TORCH_ARG(bool, documents) = false;
  /// Language models: retrieval documents mixed into the training text.
  TORCH_ARG(RetrievalMixOptions, retrieval);
  /// Translation: coordinates given to the encoder's position encoder.
  TORCH_ARG(SourceLayout, source_layout) = SourceLayout::sequence;
  /// `grid` layout: the text (one token) that ends a row.
  TORCH_ARG(std::string, row_separator) = "/";
};

/// `word`: whitespace words with punctuation split off, vocabulary from the training split;
/// `sentencepiece`: a unigram SentencePiece model trained on the training split;
/// `byte`: UTF-8 bytes (character-level models, as the enwik8 runs of Biderman et al. 2021), 256 + 4 special ids.
enum class TokenizerType { word, sentencepiece, byte };

struct TokenizerOptions {
  TORCH_ARG(TokenizerType, type) = TokenizerType::sentencepiece;
  /// Joint source+target vocabulary size (a maximum for `word`).
  TORCH_ARG(int64_t, vocab_size) = 8000;
};

/// The YAML spellings of this room's enums ("tsv", "grid", "sentencepiece"); a parse of an
/// unknown spelling fails naming the valid ones.
std::string to_string(CorpusFormat format);
std::string to_string(SourceLayout layout);
std::string to_string(TokenizerType type);
CorpusFormat parse_corpus_format(const std::string& name);
SourceLayout parse_source_layout(const std::string& name);
TokenizerType parse_tokenizer_type(const std::string& name);

}  // namespace ropelab
