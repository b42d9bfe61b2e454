// libFuzzer target: the corpus readers. The input is one text file (LM lines, a TSV split)
// and, split at its first NUL byte, the two sides of a parallel split. Every read either
// succeeds or throws std::runtime_error naming the file in one line; accepted lines are
// valid UTF-8 with no CR, BOM or tab where none may be, and byte tokenization round-trips.
#include <stdexcept>

#include "fuzz_util.h"
#include "ropelab/data/batching.h"
#include "ropelab/data/tokenizer.h"

using namespace ropelab;

namespace {

template <typename F>
void expect_clean(const std::string& file, F&& read) {
  try {
    read();
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line_naming(e.what(), file);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  static const auto bytes_tokenizer = load_tokenizer(TokenizerOptions().type(TokenizerType::byte), "");
  const auto text = fuzz::write_input("text.txt", bytes);
  expect_clean(text, [&] {
    for_each_line(text, [&](std::string& line, int64_t) {
      fuzz::check(valid_utf8(line), "lines are valid UTF-8");
      fuzz::check(line.empty() || line.back() != '\r', "no trailing CR");
      fuzz::check(bytes_tokenizer->decode(bytes_tokenizer->encode(line)) == line, "byte tokenizer round trip");
    });
  });
  DataOptions tsv;
  tsv.format(CorpusFormat::tsv);
  expect_clean(text, [&] {
    for_each_pair(tsv, text, [&](std::string& src, std::string& tgt, int64_t) {
      fuzz::check(!src.empty() && !tgt.empty(), "pairs have two non-empty sides");
      fuzz::check(valid_utf8(src) && valid_utf8(tgt), "pairs are valid UTF-8");
    });
  });
  const auto nul = bytes.find('\0');
  const auto stem = fuzz::write_input("split", "");
  std::ofstream(stem + ".en", std::ios::binary) << bytes.substr(0, nul);
  std::ofstream(stem + ".es", std::ios::binary) << (nul == std::string::npos ? "" : bytes.substr(nul + 1));
  DataOptions parallel;
  parallel.format(CorpusFormat::parallel);
  try {
    read_parallel(parallel, stem);
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    fuzz::check(
        message.rfind(stem + ".en", 0) == 0 || message.rfind(stem + ".es", 0) == 0 || message.rfind(stem + ":", 0) == 0,
        "parallel errors name a file");
    fuzz::check(message.find('\n') == std::string::npos, "one-line parallel error");
  }
  return 0;
}
