#include "ropelab/data/corpus.h"

#include <algorithm>
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

std::vector<std::string> read_text_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (lines.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!valid_utf8(line))
      throw std::runtime_error(path + ":" + std::to_string(lines.size() + 1) + ": invalid UTF-8");
    lines.push_back(std::move(line));
  }
  return lines;
}

ParallelText read_parallel(const DataOptions& options, const std::string& path) {
  ParallelText text;
  auto add = [&](std::string src, std::string tgt, int64_t line) {
    if (src.empty() || tgt.empty()) {
      ++text.skipped_empty;
      return;
    }
    text.source.push_back(std::move(src));
    text.target.push_back(std::move(tgt));
    text.line.push_back(line);
  };
  if (options.format() == CorpusFormat::tsv) {
    auto lines = read_text_lines(path);
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto tab = lines[i].find('\t');
      if (lines[i].empty()) {
        ++text.skipped_empty;
        continue;
      }
      if (tab == std::string::npos || lines[i].find('\t', tab + 1) != std::string::npos)
        throw std::runtime_error(path + ":" + std::to_string(i + 1) +
                                 ": expected exactly one tab between source and target");
      add(lines[i].substr(0, tab), lines[i].substr(tab + 1), static_cast<int64_t>(i + 1));
    }
  } else {
    const auto src_path = path + "." + options.source_lang();
    const auto tgt_path = path + "." + options.target_lang();
    auto src = read_text_lines(src_path);
    auto tgt = read_text_lines(tgt_path);
    if (src.size() != tgt.size())
      throw std::runtime_error(src_path + " has " + std::to_string(src.size()) + " lines but " + tgt_path + " has " +
                               std::to_string(tgt.size()));
    for (size_t i = 0; i < src.size(); ++i) add(std::move(src[i]), std::move(tgt[i]), static_cast<int64_t>(i + 1));
  }
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

std::vector<Example> lm_chunks(const std::vector<std::string>& lines, const Tokenizer& tokenizer, int64_t context,
                               int64_t* empty) {
  std::vector<int64_t> stream;
  for (const auto& line : lines) {
    if (line.empty()) {
      if (empty) ++*empty;
      continue;
    }
    auto ids = tokenizer.encode(line);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(kEosId);
  }
  std::vector<Example> chunks;
  const auto step = static_cast<size_t>(context);
  for (size_t start = 0; start + 1 < stream.size(); start += step) {
    const size_t end = std::min(stream.size(), start + step + 1);
    chunks.push_back({{}, std::vector<int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                               stream.begin() + static_cast<std::ptrdiff_t>(end)), {}});
  }
  return chunks;
}

Batch collate_lm(const std::vector<Example>& examples, const std::vector<size_t>& indices,
                 const torch::Device& device) {
  const auto rows = static_cast<int64_t>(indices.size());
  size_t length = 0;
  for (auto i : indices) length = std::max(length, examples[i].target.size() - 1);
  auto tin = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& chunk = examples[indices[static_cast<size_t>(r)]].target;
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
  const auto limit = static_cast<size_t>(max_len - 1);  // room for BOS or EOS
  for (size_t i = 0; i < text.source.size(); ++i) {
    Example e{tokenizer.encode(text.source[i]), tokenizer.encode(text.target[i])};
    if (e.source.size() > limit || e.target.size() > limit) {
      if (dropped) ++*dropped;
      if (!truncate) continue;
      e.source.resize(std::min(e.source.size(), limit));
      e.target.resize(std::min(e.target.size(), limit));
    }
    if (separator >= 0) e.source_positions = grid_positions(e.source, separator);
    examples.push_back(std::move(e));
  }
  return examples;
}

Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& indices, const torch::Device& device) {
  const auto rows = static_cast<int64_t>(indices.size());
  size_t s_len = 0, t_len = 0;
  for (auto i : indices) {
    s_len = std::max(s_len, examples[i].source.size() + 1);
    t_len = std::max(t_len, examples[i].target.size() + 1);
  }
  auto src = torch::full({rows, static_cast<int64_t>(s_len)}, kPadId, torch::kLong);
  auto tin = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto s = src.accessor<int64_t, 2>();
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& e = examples[indices[static_cast<size_t>(r)]];
    const auto n = static_cast<int64_t>(e.source.size());
    for (int64_t j = 0; j < n; ++j) s[r][j] = e.source[static_cast<size_t>(j)];
    s[r][n] = kEosId;
    const auto m = static_cast<int64_t>(e.target.size());
    a[r][0] = kBosId;
    for (int64_t j = 0; j < m; ++j) a[r][j + 1] = b[r][j] = e.target[static_cast<size_t>(j)];
    b[r][m] = kEosId;
    batch.target_tokens += m + 1;
  }
  if (!examples[indices.front()].source_positions.empty()) {
    auto pos = torch::zeros({rows, static_cast<int64_t>(s_len), 2}, torch::kLong);
    auto p = pos.accessor<int64_t, 3>();
    for (int64_t r = 0; r < rows; ++r) {
      const auto& coords = examples[indices[static_cast<size_t>(r)]].source_positions;
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
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  auto length = [&](size_t i) { return std::max(examples[i].source.size(), examples[i].target.size()) + 1; };
  if (bucketing)  // stable after the shuffle: equal lengths stay in random order
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length(a) < length(b); });

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
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

}  // namespace ropelab
