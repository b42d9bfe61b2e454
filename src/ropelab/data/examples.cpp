#include "ropelab/data/examples.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "ropelab/data/retrieval_mix.h"
#include "ropelab/data/token_store.h"

namespace ropelab {

int64_t row_separator_id(const DataOptions& options, const Tokenizer& tokenizer) {
  if (options.source_layout() != SourceLayout::grid) return -1;
  const auto ids = tokenizer.encode(options.row_separator());
  if (ids.size() != 1 || ids[0] == kUnkId)
    throw std::runtime_error("data.row_separator: '" + options.row_separator() +
                             "' is not a single known token of the tokenizer");
  return ids[0];
}

std::vector<int64_t> grid_positions(const std::vector<int64_t>& ids, int64_t separator) {
  std::vector<int64_t> out;
  out.reserve(2 * (ids.size() + 1));
  int64_t row = 0, column = 0;
  for (auto id : ids) {
    out.push_back(row), out.push_back(column++);
    if (id == separator) ++row, column = 0;
  }
  out.push_back(column == 0 ? row : row + 1), out.push_back(0);  // EOS: a row of its own
  return out;
}

namespace {

/// One line of language-model text as ids, ended by EOS (the document boundary).
std::vector<int64_t> lm_line_ids(const std::string& line, const Tokenizer& tokenizer) {
  auto ids = tokenizer.encode(line);
  ids.push_back(kEosId);
  return ids;
}

/// The windows of an n-token LM stream, `fn(start, end, context_only)`: `context` inputs
/// each (fewer at the end), starting every `stride` tokens; a window after the first
/// scores only its predictions from `context_only` = context - stride on, so every token
/// after the first is scored exactly once. stride = context: consecutive chunks sharing
/// one token.
template <typename F>
void for_each_lm_window(size_t n, int64_t context, int64_t stride, F&& fn) {
  const auto width = static_cast<size_t>(context), step = static_cast<size_t>(stride);
  for (size_t start = 0;; start += step) {
    const size_t context_only = start == 0 ? 0 : width - step;  // predictions an earlier window scored
    if (start + context_only + 1 >= n) break;                   // nothing left to score
    fn(start, std::min(n, start + width + 1), context_only);
  }
}

/// Most tokens a pair's side may have: max_len counts BOS or EOS.
size_t side_limit(int64_t max_len) { return static_cast<size_t>(max_len - 1); }

/// Encodes a pair into `e`; false when a side is over `limit` (both then truncated to it).
bool encode_pair(const Tokenizer& tokenizer, const std::string& src, const std::string& tgt, size_t limit, Example& e) {
  e.source = tokenizer.encode(src);
  e.target = tokenizer.encode(tgt);
  if (e.source.size() <= limit && e.target.size() <= limit) return true;
  e.source.resize(std::min(e.source.size(), limit));
  e.target.resize(std::min(e.target.size(), limit));
  return false;
}

}  // namespace

std::vector<Example> lm_chunks(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                               int64_t* empty, int64_t max_tokens, bool documents) {
  return lm_windows(lines, tokenizer, context, context, empty, max_tokens, documents);
}

std::vector<Example> lm_windows(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                                int64_t stride, int64_t* empty, int64_t max_tokens, bool documents) {
  if (context <= 0 || stride <= 0 || stride > context)
    throw std::invalid_argument("LM windows need 0 < stride <= context, got stride " + std::to_string(stride) +
                                " and context " + std::to_string(context));
  // the windows of `tokens` (every one after the first predicted), of document `document`
  // (-1: a stream, each window its own block)
  std::vector<Example> windows;
  auto cut = [&](const std::vector<int64_t>& tokens, int64_t document) {
    for_each_lm_window(tokens.size(), context, stride, [&](size_t start, size_t end, size_t context_only) {
      Example w;
      w.target.assign(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                      tokens.begin() + static_cast<std::ptrdiff_t>(end));
      w.score_from = static_cast<int64_t>(context_only);
      w.document = document >= 0 ? document : static_cast<int64_t>(windows.size());
      windows.push_back(std::move(w));
    });
  };
  auto budget = max_tokens > 0 ? static_cast<size_t>(max_tokens) : SIZE_MAX;  // predictions left to take
  std::vector<int64_t> stream;
  for (size_t i = 0; i < lines.size() && budget > 0; ++i) {
    if (lines[i].empty()) {
      if (empty) ++*empty;
      continue;
    }
    const auto ids = lm_line_ids(lines[i], tokenizer);
    if (!documents) {
      stream.insert(stream.end(), ids.begin(), ids.end());
      if (stream.size() > budget) break;
      continue;
    }
    std::vector<int64_t> document{kEosId};  // the boundary before the document, read, not predicted
    document.insert(document.end(), ids.begin(),
                    ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), budget)));
    budget -= document.size() - 1;
    cut(document, static_cast<int64_t>(i));
  }
  if (!documents) {
    if (budget != SIZE_MAX && stream.size() > budget + 1) stream.resize(budget + 1);  // + the first, unpredicted
    cut(stream, -1);
  }
  return windows;
}

std::vector<Example> tokenize_pairs(const ParallelText& text, const Tokenizer& tokenizer, int64_t max_len,
                                    bool truncate, int64_t* dropped, int64_t separator) {
  std::vector<Example> examples;
  examples.reserve(text.source.size());
  for (size_t i = 0; i < text.source.size(); ++i) {
    Example e;
    if (!encode_pair(tokenizer, text.source[i], text.target[i], side_limit(max_len), e)) {
      if (dropped) ++*dropped;
      if (!truncate) continue;
    }
    if (separator >= 0) e.source_positions = grid_positions(e.source, separator);
    examples.push_back(std::move(e));
  }
  return examples;
}

int64_t write_lm_store(const std::string& text_path, const Tokenizer& tokenizer, int64_t context,
                       const std::string& path, bool documents, RetrievalMix* mix) {
  TokenStore::Writer writer(path);
  int64_t empty = 0;
  auto add = [&](const std::string& line) {  // returns the line's tokens
    const auto ids = lm_line_ids(line, tokenizer);
    if (!documents) return static_cast<int64_t>(writer.append_tokens(ids), ids.size());
    const auto first = writer.append_tokens({kEosId});  // the document's own windows, as lm_windows cuts them
    writer.append_tokens(ids);
    for_each_lm_window(ids.size() + 1, context, context, [&](size_t start, size_t end, size_t) {
      writer.add_span(first + start, 0, static_cast<uint32_t>(end - start));
    });
    return static_cast<int64_t>(ids.size());
  };
  for_each_line(text_path, [&](std::string& line, int64_t) {
    if (line.empty()) return void(++empty);
    const auto tokens = add(line);
    if (mix) mix->after_line(tokens, add);
  });
  if (!documents)
    for_each_lm_window(static_cast<size_t>(writer.tokens()), context, context, [&](size_t start, size_t end, size_t) {
      writer.add_span(start, 0, static_cast<uint32_t>(end - start));
    });
  writer.finish();
  return empty;
}

int64_t write_pair_store(const DataOptions& options, const std::string& split_path, const Tokenizer& tokenizer,
                         const std::string& path, int64_t* skipped_empty) {
  TokenStore::Writer writer(path);
  int64_t dropped = 0;
  for_each_pair(
      options, split_path,
      [&](std::string& src, std::string& tgt, int64_t) {
        Example e;
        if (!encode_pair(tokenizer, src, tgt, side_limit(options.max_len()), e)) return void(++dropped);
        writer.add(e);
      },
      skipped_empty);
  writer.finish();
  return dropped;
}

}  // namespace ropelab
