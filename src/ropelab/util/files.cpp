#include "ropelab/util/files.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ropelab {

void write_file_atomically(const std::string& path, const std::string& text) {
  const auto tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": cannot write");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path + ": cannot rename into place: " + ec.message());
}

}  // namespace ropelab
