#include "ropelab/data/examples.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

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
                               int64_t* empty, int64_t max_tokens) {
  return lm_windows(lines, tokenizer, context, context, empty, max_tokens);
}

std::vector<Example> lm_windows(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                                int64_t stride, int64_t* empty, int64_t max_tokens) {
  if (context <= 0 || stride <= 0 || stride > context)
    throw std::invalid_argument("LM windows need 0 < stride <= context, got stride " + std::to_string(stride) +
                                " and context " + std::to_string(context));
  std::vector<int64_t> stream;
  const auto limit = max_tokens > 0 ? static_cast<size_t>(max_tokens) + 1 : SIZE_MAX;  // + the first, unpredicted
  for (const auto& line : lines) {
    if (stream.size() >= limit) break;
    if (line.empty()) {
      if (empty) ++*empty;
      continue;
    }
    const auto ids = lm_line_ids(line, tokenizer);
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  if (stream.size() > limit) stream.resize(limit);
  std::vector<Example> windows;
  for_each_lm_window(stream.size(), context, stride, [&](size_t start, size_t end, size_t context_only) {
    windows.push_back({{},
                       std::vector<int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                            stream.begin() + static_cast<std::ptrdiff_t>(end)),
                       {},
                       static_cast<int64_t>(context_only)});
  });
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
                       const std::string& path) {
  TokenStore::Writer writer(path);
  int64_t empty = 0;
  for_each_line(text_path, [&](std::string& line, int64_t) {
    if (line.empty()) return void(++empty);
    writer.append_tokens(lm_line_ids(line, tokenizer));
  });
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
