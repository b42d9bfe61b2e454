#include "ropelab/data/corpus.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

namespace ropelab {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

namespace {

/// Reads lines one at a time with the checks every text input gets.
class LineReader {
 public:
  explicit LineReader(std::string path) : path_(std::move(path)), in_(path_, std::ios::binary) {
    if (!in_) throw std::runtime_error(path_ + ": cannot open");
  }
  bool next(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++number_;
    if (number_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    while (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF, and stray CRs before it
    if (!valid_utf8(line)) throw std::runtime_error(path_ + ":" + std::to_string(number_) + ": invalid UTF-8");
    return true;
  }
  int64_t number() const { return number_; }

 private:
  std::string path_;
  std::ifstream in_;
  int64_t number_ = 0;
};

}  // namespace

void for_each_line(const std::string& path, const std::function<void(std::string&, int64_t)>& fn) {
  LineReader reader(path);
  for (std::string line; reader.next(line);) fn(line, reader.number());
}

std::vector<std::string> read_text_lines(const std::string& path) {
  std::vector<std::string> lines;
  for_each_line(path, [&](std::string& line, int64_t) { lines.push_back(std::move(line)); });
  return lines;
}

void for_each_pair(const DataOptions& options, const std::string& path,
                   const std::function<void(std::string&, std::string&, int64_t)>& fn, int64_t* skipped_empty) {
  auto emit = [&](std::string& src, std::string& tgt, int64_t line) {
    if (src.empty() || tgt.empty()) {
      if (skipped_empty) ++*skipped_empty;
      return;
    }
    fn(src, tgt, line);
  };
  if (options.format() == CorpusFormat::tsv) {
    for_each_line(path, [&](std::string& line, int64_t number) {
      if (line.empty()) {
        if (skipped_empty) ++*skipped_empty;
        return;
      }
      const auto tab = line.find('\t');
      if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos)
        throw std::runtime_error(path + ":" + std::to_string(number) +
                                 ": expected exactly one tab between source and target");
      std::string src = line.substr(0, tab), tgt = line.substr(tab + 1);
      emit(src, tgt, number);
    });
    return;
  }
  if (options.format() == CorpusFormat::text)
    throw std::runtime_error(path + ": data.format text holds no sentence pairs");
  const auto src_path = path + "." + options.source_lang();
  const auto tgt_path = path + "." + options.target_lang();
  LineReader src_reader(src_path), tgt_reader(tgt_path);
  std::string src, tgt;
  while (true) {
    const bool has_src = src_reader.next(src), has_tgt = tgt_reader.next(tgt);
    if (!has_src && !has_tgt) break;
    if (has_src != has_tgt) {  // count the rest of the longer file for the message
      auto& longer = has_src ? src_reader : tgt_reader;
      for (std::string rest; longer.next(rest);) {
      }
      throw std::runtime_error(src_path + " has " + std::to_string(src_reader.number()) + " lines but " + tgt_path +
                               " has " + std::to_string(tgt_reader.number()));
    }
    emit(src, tgt, src_reader.number());
  }
}

ParallelText read_parallel(const DataOptions& options, const std::string& path) {
  ParallelText text;
  for_each_pair(
      options, path,
      [&](std::string& src, std::string& tgt, int64_t line) {
        text.source.push_back(std::move(src));
        text.target.push_back(std::move(tgt));
        text.line.push_back(line);
      },
      &text.skipped_empty);
  return text;
}

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

/// The chunks of an n-token LM stream, `fn(start, end)`: `context` predicted tokens each,
/// consecutive chunks sharing one token (every token after the first predicted once).
template <typename F>
void for_each_lm_chunk(size_t n, int64_t context, F&& fn) {
  const auto step = static_cast<size_t>(context);
  for (size_t start = 0; start + 1 < n; start += step) fn(start, std::min(n, start + step + 1));
}

/// Most tokens a pair's side may have: max_len counts BOS or EOS.
size_t side_limit(int64_t max_len) { return static_cast<size_t>(max_len - 1); }

/// Encodes a pair into `e`; false when a side is over `limit` (both then truncated to it).
bool encode_pair(const Tokenizer& tokenizer, const std::string& src, const std::string& tgt, size_t limit,
                 Example& e) {
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
  std::vector<Example> chunks;
  for_each_lm_chunk(stream.size(), context, [&](size_t start, size_t end) {
    chunks.push_back({{}, std::vector<int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                               stream.begin() + static_cast<std::ptrdiff_t>(end)), {}});
  });
  return chunks;
}

Batch collate_lm(const ExampleSet& set, const std::vector<size_t>& indices, const torch::Device& device) {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (auto i : indices) examples.push_back(set.get(i));
  const auto rows = static_cast<int64_t>(indices.size());
  size_t length = 0;
  for (const auto& e : examples) length = std::max(length, e.target.size() - 1);
  auto tin = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& chunk = examples[static_cast<size_t>(r)].target;
    const auto n = static_cast<int64_t>(chunk.size()) - 1;
    for (int64_t j = 0; j < n; ++j) a[r][j] = chunk[static_cast<size_t>(j)], b[r][j] = chunk[static_cast<size_t>(j + 1)];
    batch.target_tokens += n;
  }
  batch.target_in = tin.to(device);
  batch.target_out = tout.to(device);
  batch.sentences = rows;
  return batch;
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

Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& indices, const torch::Device& device) {
  return collate(ExampleView(examples), indices, device);
}

Batch collate(const ExampleSet& set, const std::vector<size_t>& indices, const torch::Device& device) {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (auto i : indices) examples.push_back(set.get(i));
  const auto rows = static_cast<int64_t>(indices.size());
  size_t s_len = 0, t_len = 0;
  for (const auto& e : examples) {
    s_len = std::max(s_len, e.source.size() + 1);
    t_len = std::max(t_len, e.target.size() + 1);
  }
  auto src = torch::full({rows, static_cast<int64_t>(s_len)}, kPadId, torch::kLong);
  auto tin = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto s = src.accessor<int64_t, 2>();
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& e = examples[static_cast<size_t>(r)];
    const auto n = static_cast<int64_t>(e.source.size());
    for (int64_t j = 0; j < n; ++j) s[r][j] = e.source[static_cast<size_t>(j)];
    s[r][n] = kEosId;
    const auto m = static_cast<int64_t>(e.target.size());
    a[r][0] = kBosId;
    for (int64_t j = 0; j < m; ++j) a[r][j + 1] = b[r][j] = e.target[static_cast<size_t>(j)];
    b[r][m] = kEosId;
    batch.target_tokens += m + 1;
  }
  if (!examples.empty() && !examples.front().source_positions.empty()) {
    auto pos = torch::zeros({rows, static_cast<int64_t>(s_len), 2}, torch::kLong);
    auto p = pos.accessor<int64_t, 3>();
    for (int64_t r = 0; r < rows; ++r) {
      const auto& coords = examples[static_cast<size_t>(r)].source_positions;
      for (size_t j = 0; j < coords.size() / 2; ++j) p[r][static_cast<int64_t>(j)][0] = coords[2 * j], p[r][static_cast<int64_t>(j)][1] = coords[2 * j + 1];
    }
    batch.source_positions = pos.to(device);
  }
  batch.source = src.to(device);
  batch.target_in = tin.to(device);
  batch.target_out = tout.to(device);
  batch.sentences = rows;
  return batch;
}

std::vector<std::vector<size_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens,
                                              bool bucketing, uint64_t seed) {
  return plan_batches(ExampleView(examples), max_tokens, bucketing, seed);
}

std::vector<std::vector<size_t>> plan_batches(const ExampleSet& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  auto length = [&](size_t i) { return examples.padded_length(i); };
  if (bucketing)  // stable after the shuffle: equal lengths stay in random order
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length(a) < length(b); });

  auto batches = pack_batches(order, length, max_tokens);
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

std::vector<std::vector<size_t>> pack_batches(const std::vector<size_t>& order,
                                              const std::function<size_t(size_t)>& length, int64_t max_tokens) {
  std::vector<std::vector<size_t>> batches;
  std::vector<size_t> current;
  size_t longest = 0;
  for (auto i : order) {
    const size_t l = std::max(longest, length(i));
    if (!current.empty() && static_cast<int64_t>(l * (current.size() + 1)) > max_tokens) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(i);
    longest = std::max(longest, length(i));
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

// --- example sets ---------------------------------------------------------------------

size_t ExampleView::padded_length(size_t i) const {
  return std::max(examples_[i].source.size(), examples_[i].target.size()) + 1;
}

TokenStore::Writer::Writer(std::string path) : path_(std::move(path)) {
  tokens_ = std::fopen((path_ + ".tokens").c_str(), "wb");
  index_ = std::fopen((path_ + ".index").c_str(), "wb");
  if (!tokens_ || !index_) throw std::runtime_error(path_ + ".tokens: cannot open for writing: " + std::strerror(errno));
}

TokenStore::Writer::~Writer() {
  if (tokens_) std::fclose(tokens_);
  if (index_) std::fclose(index_);
}

uint64_t TokenStore::Writer::append_tokens(const std::vector<int64_t>& ids) {
  const uint64_t offset = tokens_written_;
  std::vector<int32_t> narrow(ids.begin(), ids.end());
  if (std::fwrite(narrow.data(), sizeof(int32_t), narrow.size(), tokens_) != narrow.size())
    throw std::runtime_error(path_ + ".tokens: write failed: " + std::strerror(errno));
  tokens_written_ += narrow.size();
  return offset;
}

void TokenStore::Writer::add_span(uint64_t offset, uint32_t source_len, uint32_t target_len) {
  const Span span{offset, source_len, target_len};
  if (std::fwrite(&span, sizeof span, 1, index_) != 1)
    throw std::runtime_error(path_ + ".index: write failed: " + std::strerror(errno));
}

void TokenStore::Writer::add(const Example& e) {
  std::vector<int64_t> ids = e.source;
  ids.insert(ids.end(), e.target.begin(), e.target.end());
  add_span(append_tokens(ids), static_cast<uint32_t>(e.source.size()), static_cast<uint32_t>(e.target.size()));
}

void TokenStore::Writer::finish() {
  const bool ok = std::fflush(tokens_) == 0 && std::fflush(index_) == 0;
  const int closed = std::fclose(tokens_) | std::fclose(index_);
  tokens_ = index_ = nullptr;
  if (!ok || closed != 0) throw std::runtime_error(path_ + ".tokens: write failed: " + std::strerror(errno));
}

namespace {
/// Maps a whole file read-only; nullptr for an empty file.
const void* map_file(const std::string& path, size_t* bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  *bytes = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (*bytes > 0) {
    data = ::mmap(nullptr, *bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      ::close(fd);
      throw std::runtime_error(path + ": cannot map: " + std::strerror(errno));
    }
  }
  ::close(fd);
  return data;
}
}  // namespace

TokenStore::TokenStore(const std::string& path, int64_t separator) : path_(path), separator_(separator) {
  tokens_ = static_cast<const int32_t*>(map_file(path + ".tokens", &token_bytes_));
  spans_ = static_cast<const Span*>(map_file(path + ".index", &index_bytes_));
  if (token_bytes_ % sizeof(int32_t) != 0 || index_bytes_ % sizeof(Span) != 0)
    throw std::runtime_error(path + ".index: truncated token store");
  token_count_ = token_bytes_ / sizeof(int32_t);
  count_ = index_bytes_ / sizeof(Span);
  for (size_t i = 0; i < count_; ++i)
    if (spans_[i].offset + spans_[i].source_len + spans_[i].target_len > token_count_)
      throw std::runtime_error(path + ".index: example " + std::to_string(i) + " points past the token file");
}

TokenStore::~TokenStore() {
  if (tokens_) ::munmap(const_cast<int32_t*>(tokens_), token_bytes_);
  if (spans_) ::munmap(const_cast<Span*>(spans_), index_bytes_);
}

size_t TokenStore::padded_length(size_t i) const {
  return std::max(spans_[i].source_len, spans_[i].target_len) + size_t{1};
}

Example TokenStore::get(size_t i) const {
  const auto& span = spans_[i];
  const int32_t* first = tokens_ + span.offset;
  Example e;
  e.source.assign(first, first + span.source_len);
  e.target.assign(first + span.source_len, first + span.source_len + span.target_len);
  if (separator_ >= 0) e.source_positions = grid_positions(e.source, separator_);
  return e;
}

int64_t write_lm_store(const std::string& text_path, const Tokenizer& tokenizer, int64_t context,
                       const std::string& path) {
  TokenStore::Writer writer(path);
  int64_t empty = 0;
  for_each_line(text_path, [&](std::string& line, int64_t) {
    if (line.empty()) return void(++empty);
    writer.append_tokens(lm_line_ids(line, tokenizer));
  });
  for_each_lm_chunk(static_cast<size_t>(writer.tokens()), context, [&](size_t start, size_t end) {
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
