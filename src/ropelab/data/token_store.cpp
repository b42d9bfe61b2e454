#include "ropelab/data/token_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ropelab/data/tokenizer.h"

namespace ropelab {

size_t ExampleView::padded_length(size_t i) const {
  return std::max(examples_[i].source.size(), examples_[i].target.size()) + 1;
}

uint64_t estimate_store_bytes(const std::vector<std::string>& files, const Tokenizer& tokenizer) {
  constexpr std::streamsize kSample = 1 << 20;
  double bytes = 0, sampled_bytes = 0, sampled_tokens = 0, sampled_lines = 0;
  for (const auto& file : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return 0;
    bytes += static_cast<double>(std::filesystem::file_size(file, ec));
    std::ifstream in(file, std::ios::binary);
    std::streamsize read = 0;
    for (std::string line; read < kSample && std::getline(in, line);) {
      read += static_cast<std::streamsize>(line.size()) + 1;
      sampled_tokens += static_cast<double>(tokenizer.encode(line).size()) + 1;  // + EOS
      sampled_lines += 1;
    }
    sampled_bytes += static_cast<double>(read);
  }
  if (sampled_bytes == 0) return 0;
  const double scale = bytes / sampled_bytes;
  return static_cast<uint64_t>(1.1 * scale * (4 * sampled_tokens + 16 * sampled_lines)) + 4096;
}

TokenStore::Writer::Writer(std::string path) : path_(std::move(path)) {
  tokens_ = std::fopen((path_ + ".tokens.tmp").c_str(), "wb");
  index_ = std::fopen((path_ + ".index.tmp").c_str(), "wb");
  if (!tokens_ || !index_)
    throw std::runtime_error(path_ + ".tokens.tmp: cannot open for writing: " + std::strerror(errno));
}

TokenStore::Writer::~Writer() {
  if (!tokens_ && !index_) return;  // finished
  if (tokens_) std::fclose(tokens_);
  if (index_) std::fclose(index_);
  discard();
}

void TokenStore::Writer::discard() const {
  std::remove((path_ + ".tokens.tmp").c_str());
  std::remove((path_ + ".index.tmp").c_str());
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
  const auto tokens = path_ + ".tokens", index = path_ + ".index";
  if (!ok || closed != 0) {
    const int error = errno;
    discard();
    throw std::runtime_error(tokens + ": write failed: " + std::strerror(error));
  }
  // The old index goes first: between the renames a reader finds no store, never a
  // new token file with an old index.
  std::remove(index.c_str());
  if (std::rename((tokens + ".tmp").c_str(), tokens.c_str()) != 0 ||
      std::rename((index + ".tmp").c_str(), index.c_str()) != 0)
    throw std::runtime_error(tokens + ": cannot rename the token store into place: " + std::strerror(errno));
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

}  // namespace ropelab
