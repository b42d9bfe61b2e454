#pragma once
// Shared by the libFuzzer targets (`make fuzz`): inputs written to per-process files, and
// the contract every parser keeps: a rejection is one line that names the file.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ropelab::fuzz {

/// A file of the system temp dir for this process, holding `bytes`.
inline std::string write_input(const std::string& name, const std::string& bytes) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("ropelab_fuzz_" + std::to_string(::getpid()) + "_" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// Aborts (a finding) unless `message` is a single line starting with `file`.
inline void expect_one_line_naming(const std::string& message, const std::string& file) {
  if (message.rfind(file, 0) == 0 && message.find('\n') == std::string::npos) return;
  std::fprintf(stderr, "error message does not name %s in one line: %s\n", file.c_str(), message.c_str());
  std::abort();
}

inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "property failed: %s\n", what);
  std::abort();
}

}  // namespace ropelab::fuzz
