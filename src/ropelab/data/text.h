#pragma once
/// Reading text: lines of UTF-8 (a byte-order mark and CR line ends dropped, invalid
/// UTF-8 an error naming the file and line) and the sentence pairs of parallel corpora.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ropelab/data/options.h"

namespace ropelab {

/// Line-aligned sentence pairs of one split.
struct ParallelText {
  std::vector<std::string> source, target;
  std::vector<int64_t> line;  // 1-based line number of each pair in its file(s)
  int64_t skipped_empty = 0;  // pairs dropped because a side was empty
};

/// Reads the split at `path` in the configured format (tsv: PATH; parallel:
/// PATH.SOURCE_LANG + PATH.TARGET_LANG). Strips a UTF-8 byte-order mark and CR line
/// ends; skips and counts pairs with an empty side. Throws std::runtime_error naming
/// the file and line for invalid UTF-8, a missing tab, or files with different line counts.
ParallelText read_parallel(const DataOptions& options, const std::string& path);

/// Reads a text file's lines, dropping a leading UTF-8 BOM and trailing CRs; throws
/// std::runtime_error "PATH:LINE: invalid UTF-8" or "PATH: cannot open".
std::vector<std::string> read_text_lines(const std::string& path);

/// The same, streaming: `fn(line, number)` per line (1-based), nothing kept.
void for_each_line(const std::string& path, const std::function<void(std::string& line, int64_t number)>& fn);

/// read_parallel, streaming: `fn(source, target, line)` per usable pair, nothing kept;
/// pairs with an empty side are counted in `*skipped_empty`. Same checks and messages.
void for_each_pair(const DataOptions& options, const std::string& path,
                   const std::function<void(std::string& source, std::string& target, int64_t line)>& fn,
                   int64_t* skipped_empty = nullptr);

/// The files a corpus at `path` is read from: `path` itself (tsv, text) or
/// `path.SRC` and `path.TGT` (parallel).
std::vector<std::string> corpus_files(const DataOptions& options, const std::string& path);

/// Whether `text` is valid UTF-8 (no overlongs, surrogates or values over U+10FFFF).
bool valid_utf8(const std::string& text);

}  // namespace ropelab
