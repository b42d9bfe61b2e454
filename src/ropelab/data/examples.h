#pragma once
/// Text to token ids: sentence pairs (with grid coordinates in the grid layout) and
/// language-model chunks, in memory or streamed into a token store (data/token_store.h).

#include <cstdint>
#include <string>
#include <vector>

#include "ropelab/data/options.h"
#include "ropelab/data/text.h"
#include "ropelab/data/tokenizer.h"

namespace ropelab {

/// One tokenized pair; BOS/EOS are added at batching. A language-model chunk has no
/// source and its target holds context + 1 tokens (inputs and next tokens overlap by all
/// but one).
struct Example {
  std::vector<int64_t> source, target;
  /// Grid layout: (row, column) of every source token and of its EOS, flattened.
  std::vector<int64_t> source_positions;
  /// Language-model windows: predictions before this position in the window are context
  /// only, not scored (sliding-window evaluation, lm_windows).
  int64_t score_from = 0;
  /// Language-model windows: the document (line) the window lies in, with data.documents;
  /// else the window's own index (a fixed block of the stream). The unit a bootstrap over
  /// an evaluation resamples.
  int64_t document = 0;
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
/// after that many predicted tokens. With `documents` (data.documents) each line is cut on
/// its own, as EOS, its tokens, EOS: no chunk holds two documents, and a document's last
/// chunk may be shorter.
std::vector<Example> lm_chunks(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                               int64_t* empty = nullptr, int64_t max_tokens = 0, bool documents = false);

/// Sliding-window evaluation (Press et al. 2022): windows of `context` input tokens
/// starting every `stride` tokens of the same stream; the first window scores all its
/// predictions, every later one only its last `stride` (score_from = context - stride), so
/// every token after the first is scored exactly once, and every token from the
/// (context - stride)-th of the stream on with at least context - stride tokens of history
/// (the first window's first context - stride tokens with fewer). stride = context gives
/// lm_chunks' windows. 0 < stride <= context. With `documents`, the same within each line
/// (EOS, its tokens, EOS), and Example::document names the line.
std::vector<Example> lm_windows(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                                int64_t stride, int64_t* empty = nullptr, int64_t max_tokens = 0,
                                bool documents = false);

class RetrievalMix;

/// Streams a language-model text into a TokenStore at `path`: lines tokenized, each
/// ended by EOS, chunked as lm_chunks does (with `documents`, each line on its own); with a
/// `mix`, its documents after each line (data/retrieval_mix.h), as lines of their own.
/// Returns the number of empty lines skipped.
int64_t write_lm_store(const std::string& text_path, const Tokenizer& tokenizer, int64_t context,
                       const std::string& path, bool documents = false, RetrievalMix* mix = nullptr);

/// Streams the pairs of a split into a TokenStore at `path`, as tokenize_pairs (without
/// truncation). Returns the pairs skipped for length; `*skipped_empty` counts empty sides.
int64_t write_pair_store(const DataOptions& options, const std::string& split_path, const Tokenizer& tokenizer,
                         const std::string& path, int64_t* skipped_empty);

}  // namespace ropelab
