#pragma once
/// Files that readers never see half-written.

#include <string>

namespace ropelab {

/// Writes `text` to PATH through PATH.tmp and a rename: readers see the old or the new
/// file, never a partial one. Throws naming PATH on a write error.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ropelab
