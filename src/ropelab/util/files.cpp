#include "ropelab/util/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace ropelab {

namespace {

/// "12 KiB", "3.4 MiB", "2.1 GiB".
std::string human_bytes(uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (bytes < (1ULL << 20))
    std::snprintf(text, sizeof text, "%.0f KiB", b / 1024);
  else if (bytes < (1ULL << 30))
    std::snprintf(text, sizeof text, "%.1f MiB", b / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.1f GiB", b / (1 << 30));
  return text;
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open for fsync");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error(path + ": fsync failed");
}

/// An exclusive flock(2) on a directory while it lives: the atomic writes into one directory
/// take turns, across threads and processes, so that two writers of one PATH never share
/// PATH.tmp (one truncating the other's half-written file, which the other then renames into
/// place). A directory that cannot be opened is not locked: the write that follows says why.
class DirectoryTurn {
 public:
  explicit DirectoryTurn(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~DirectoryTurn() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  DirectoryTurn(const DirectoryTurn&) = delete;
  DirectoryTurn& operator=(const DirectoryTurn&) = delete;

 private:
  int fd_;
};

/// A file opened for reading, closed when this goes.
class ReadFile {
 public:
  explicit ReadFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(path + ": cannot read (" + std::strerror(errno) + ")");
  }
  ~ReadFile() { ::close(fd_); }
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

/// write(2) of all `size` bytes, retried when interrupted: 0, or the errno of the failure.
int write_all(int fd, const char* data, size_t size) {
  for (const char* p = data; p < data + size;) {
    const ssize_t w = ::write(fd, p, static_cast<size_t>(data + size - p));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    p += w;
  }
  return 0;
}

/// What write_file_atomically and copy_file_atomically share: the space checked, PATH.tmp
/// filled by `fill` (which returns 0 or the errno of a failed write, and may throw), fsynced,
/// renamed over PATH, the directory fsynced. On any failure PATH.tmp is removed and PATH is
/// untouched.
void replace_atomically(const std::string& path, uint64_t bytes, const std::string& what,
                        const std::function<int(int)>& fill) {
  const auto parent = std::filesystem::path(path).parent_path();
  const auto dir = parent.empty() ? std::string(".") : parent.string();
  require_space(dir, bytes, path);
  const DirectoryTurn turn(dir);
  const auto tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot write " + what + ": " + std::strerror(errno));
  int error = 0;
  try {
    error = fill(fd);
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write " + what + " (disk full?): " + std::strerror(error));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + what + " into place: " + ec.message());
  }
  fsync_path(dir);
}

}  // namespace

void require_space(const std::string& dir, uint64_t bytes, const std::string& what) {
  struct statvfs fs_info {};
  if (::statvfs(dir.c_str(), &fs_info) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
    if (bytes > free_bytes)
      throw std::runtime_error(what + ": needs " + human_bytes(bytes) + " but " + dir + " has " +
                               human_bytes(free_bytes) + " free; nothing was written");
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      bytes > static_cast<uint64_t>(limit.rlim_cur))
    throw std::runtime_error(what + ": needs " + human_bytes(bytes) + " but this process may write files of at most " +
                             human_bytes(limit.rlim_cur) + " (ulimit -f); nothing was written");
}

void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what) {
  replace_atomically(path, bytes.size(), what, [&](int fd) { return write_all(fd, bytes.data(), bytes.size()); });
}

void copy_file_atomically(const std::string& from, const std::string& path, const std::string& what) {
  const ReadFile in(from);
  struct stat info {};
  if (::fstat(in.fd(), &info) != 0) throw std::runtime_error(from + ": cannot read (" + std::strerror(errno) + ")");
  replace_atomically(path, static_cast<uint64_t>(info.st_size), what, [&](int out) {
    std::vector<char> buffer(1 << 20);
    for (;;) {
      const ssize_t n = ::read(in.fd(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw std::runtime_error(from + ": cannot read (" + std::strerror(errno) + "); " + path + " untouched");
      if (n == 0) return 0;
      if (const int error = write_all(out, buffer.data(), static_cast<size_t>(n))) return error;
    }
  });
}

std::string file_fingerprint(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot read (" + std::strerror(errno) + ")");
  uint64_t hash = 0xcbf29ce484222325ULL;  // the offset basis
  unsigned char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    for (size_t i = 0; i < n; ++i) hash = (hash ^ buffer[i]) * 0x100000001b3ULL;  // the FNV prime
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw std::runtime_error(path + ": cannot read");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::string fingerprint_while_reading(const std::string& path, const std::function<void()>& read) {
  const auto fingerprint = [&] { return std::filesystem::exists(path) ? file_fingerprint(path) : std::string(); };
  const auto before = fingerprint();
  read();
  if (fingerprint() != before)
    throw std::runtime_error(path + ": replaced while it was being read; run the command again");
  return before;
}

}  // namespace ropelab
