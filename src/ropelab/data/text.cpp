#include "ropelab/data/text.h"

#include <fstream>
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
  const auto files = corpus_files(options, path);
  const auto &src_path = files[0], &tgt_path = files[1];
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

std::vector<std::string> corpus_files(const DataOptions& options, const std::string& path) {
  if (options.format() != CorpusFormat::parallel) return {path};
  return {path + "." + options.source_lang(), path + "." + options.target_lang()};
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

}  // namespace ropelab
