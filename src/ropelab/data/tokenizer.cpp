#include "ropelab/data/tokenizer.h"

#include "ropelab/build_config.h"
#include "ropelab/util/files.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // dlmopen
#endif
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace ropelab {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSpecials = {"<pad>", "<unk>", "<s>", "</s>"};

// --- byte tokenizer -------------------------------------------------------------------

/// UTF-8 bytes as ids 4..259 after the special ids; nothing to train or save.
class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kFirst = 4;
  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids;
    ids.reserve(text.size());
    for (unsigned char c : text) ids.push_back(kFirst + c);
    return ids;
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (auto id : ids)
      if (id >= kFirst && id < kFirst + 256) out += static_cast<char>(id - kFirst);
    return out;
  }
  int64_t vocab_size() const override { return kFirst + 256; }
  void save(const std::string&) const override {}
};

// --- word tokenizer -------------------------------------------------------------------

bool is_split_punct(unsigned char c) { return c < 0x80 && std::ispunct(c) && c != '\'' && c != '-'; }

/// Length of the opening inverted mark at s[i] ("¿" or "¡", two UTF-8 bytes), or 0.
size_t inverted_mark(const std::string& s, size_t i) {
  return i + 1 < s.size() && static_cast<unsigned char>(s[i]) == 0xC2 &&
                 (static_cast<unsigned char>(s[i + 1]) == 0xBF || static_cast<unsigned char>(s[i + 1]) == 0xA1)
             ? 2
             : 0;
}

class WordTokenizer : public Tokenizer {
 public:
  explicit WordTokenizer(std::vector<std::string> words) : words_(std::move(words)) {
    for (size_t i = 0; i < words_.size(); ++i) index_.emplace(words_[i], static_cast<int64_t>(i));
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids;
    for (const auto& w : split_words(text)) {
      auto it = index_.find(w);
      ids.push_back(it == index_.end() ? kUnkId : it->second);
    }
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    bool glue_next = true;  // no space at the start or after an opening mark
    for (auto id : ids) {
      if (id == kPadId || id == kBosId || id == kEosId || id < 0 || id >= vocab_size()) continue;
      const auto& w = words_[static_cast<size_t>(id)];
      const bool closing = w.size() == 1 && std::string(".,!?;:)]}").find(w[0]) != std::string::npos;
      if (!glue_next && !closing) out += ' ';
      out += w;
      glue_next = inverted_mark(w, 0) == w.size() || w == "(" || w == "[" || w == "{";
    }
    return out;
  }

  int64_t vocab_size() const override { return static_cast<int64_t>(words_.size()); }

  void save(const std::string& path) const override {
    std::string text;
    for (const auto& w : words_) text += w + '\n';
    write_file_atomically(path, text, "vocabulary");
  }

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> index_;
};

std::unique_ptr<Tokenizer> train_words(const TokenizerOptions& options, const TextSource& texts) {
  std::map<std::string, int64_t> counts;
  texts([&](const std::string& t) {
    for (const auto& w : split_words(t)) ++counts[w];
  });
  std::vector<std::pair<std::string, int64_t>> ranked(counts.begin(), counts.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> words = kSpecials;
  for (const auto& [w, n] : ranked) {
    if (static_cast<int64_t>(words.size()) >= options.vocab_size()) break;
    words.push_back(w);
  }
  return std::make_unique<WordTokenizer>(std::move(words));
}

// --- SentencePiece, through the shim ----------------------------------------------------

/// The SentencePiece shim's entry points (src/spm_shim/spm_shim.cpp).
struct SpmShim {
  int (*train)(const char*, const char*, const char*, char*, int);
  void* (*load)(const char*, char*, int);
  void (*free)(void*);
  int (*vocab_size)(void*);
  int (*encode)(void*, const char*, int, int*, int);
  int (*decode)(void*, const int*, int, char*, int);
};

std::string shim_path() {
  if (const char* env = std::getenv("ROPELAB_SPM_SHIM")) return env;
  std::error_code ec;
  auto exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec && fs::exists(exe_dir / "libropelab_spm.so")) return (exe_dir / "libropelab_spm.so").string();
  return ROPELAB_SPM_SHIM_PATH;
}

/// Loads the shim once, into its own link-map namespace (see spm_shim.cpp for why).
const SpmShim& shim() {
  static const SpmShim loaded = [] {
    const auto path = shim_path();
    void* handle = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error("cannot load the SentencePiece shim " + path + ": " + dlerror());
    auto sym = [&](const char* name) {
      void* f = dlsym(handle, name);
      if (!f) throw std::runtime_error(path + ": missing symbol " + name);
      return f;
    };
    SpmShim s;
    s.train = reinterpret_cast<decltype(s.train)>(sym("ropelab_spm_train_file"));
    s.load = reinterpret_cast<decltype(s.load)>(sym("ropelab_spm_load"));
    s.free = reinterpret_cast<decltype(s.free)>(sym("ropelab_spm_free"));
    s.vocab_size = reinterpret_cast<decltype(s.vocab_size)>(sym("ropelab_spm_vocab_size"));
    s.encode = reinterpret_cast<decltype(s.encode)>(sym("ropelab_spm_encode"));
    s.decode = reinterpret_cast<decltype(s.decode)>(sym("ropelab_spm_decode"));
    return s;
  }();
  return loaded;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& model_path) : path_(model_path) {
    char error[512] = {0};
    processor_ = shim().load(model_path.c_str(), error, sizeof error);
    if (!processor_) {
      // SentencePiece reports a file that does not parse with its own source location.
      std::string reason =
          std::strstr(error, "ParseFromArray") ? "not a SentencePiece model (corrupt or foreign)" : error;
      while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back()))) reason.pop_back();
      throw std::runtime_error(model_path + ": cannot load SentencePiece model: " + reason);
    }
  }
  ~SentencePieceTokenizer() override { shim().free(processor_); }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int> ids(text.size() + 16);  // at most one piece per byte, plus slack
    int n =
        shim().encode(processor_, text.data(), static_cast<int>(text.size()), ids.data(), static_cast<int>(ids.size()));
    if (n > static_cast<int>(ids.size())) {
      ids.resize(static_cast<size_t>(n));
      n = shim().encode(processor_, text.data(), static_cast<int>(text.size()), ids.data(), n);
    }
    return {ids.begin(), ids.begin() + n};
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<int> kept;
    for (auto id : ids)
      if (id != kPadId && id != kBosId && id != kEosId) kept.push_back(static_cast<int>(id));
    std::string text(kept.size() * 16 + 16, '\0');
    int n = shim().decode(processor_, kept.data(), static_cast<int>(kept.size()), text.data(),
                          static_cast<int>(text.size()));
    if (n >= static_cast<int>(text.size())) {
      text.resize(static_cast<size_t>(n) + 1);
      n = shim().decode(processor_, kept.data(), static_cast<int>(kept.size()), text.data(),
                        static_cast<int>(text.size()));
    }
    text.resize(static_cast<size_t>(n));
    return text;
  }

  int64_t vocab_size() const override { return shim().vocab_size(processor_); }

  void save(const std::string& path) const override {
    const fs::path target(path);
    if (fs::path(path_) != target) copy_file_atomically(path_, path, "tokenizer model");
  }

 private:
  std::string path_;
  void* processor_ = nullptr;
};

/// Writes `text` as lines of at most `max_bytes` (SentencePiece's trainer drops longer
/// "sentences", which would be all of them for a corpus of one speech per line), cut at
/// spaces: pieces never span whitespace, so the cuts change no piece statistics. A run of
/// more than `max_bytes` without a space is cut where the run ends.
void write_training_lines(std::ostream& out, const std::string& text, size_t max_bytes = 2048) {
  size_t begin = 0;
  while (text.size() - begin > max_bytes) {
    size_t cut = text.rfind(' ', begin + max_bytes);
    if (cut == std::string::npos || cut <= begin) cut = text.find(' ', begin + max_bytes);
    if (cut == std::string::npos) break;
    out.write(text.data() + begin, static_cast<std::streamsize>(cut - begin)) << '\n';
    begin = cut + 1;
  }
  out.write(text.data() + begin, static_cast<std::streamsize>(text.size() - begin)) << '\n';
}

std::unique_ptr<Tokenizer> train_sentencepiece(const TokenizerOptions& options, const TextSource& texts,
                                               const std::string& model_path) {
  const fs::path target(model_path), work_dir = target.parent_path().empty() ? "." : target.parent_path();
  const auto stem = target.stem().string();
  fs::create_directories(work_dir);
  // Every file under a temporary name until it is complete: a run killed here leaves no
  // input text (STEM_input.txt) or model that a reader could take for a finished one.
  const auto input = (work_dir / (stem + "_input.txt")).string();
  {
    std::ofstream out(input + ".tmp");
    texts([&](const std::string& t) { write_training_lines(out, t); });
    out.close();
    if (!out) throw std::runtime_error(input + ".tmp: cannot write SentencePiece training text");
  }
  fs::rename(input + ".tmp", input);
  const auto prefix = (work_dir / (stem + ".tmp")).string();
  const std::string settings = "vocab_size=" + std::to_string(options.vocab_size()) +
                               " model_type=unigram character_coverage=1.0 pad_id=0 unk_id=1 bos_id=2"
                               " eos_id=3 hard_vocab_limit=false input_sentence_size=2000000"
                               " shuffle_input_sentence=true num_threads=2 minloglevel=2";
  char error[1024] = {0};
  const int failed = shim().train(input.c_str(), prefix.c_str(), settings.c_str(), error, sizeof error);
  fs::remove(input);
  if (failed) throw std::runtime_error("SentencePiece training failed: " + std::string(error));
  const auto model = target.string();
  std::error_code no_vocab;  // the piece list beside the model, for people; not needed to load it
  fs::rename(prefix + ".vocab", (work_dir / (stem + ".vocab")).string(), no_vocab);
  fs::rename(prefix + ".model", model);
  return std::make_unique<SentencePieceTokenizer>(model);
}

}  // namespace

namespace {

/// Bytes of `text` up to the end of its last complete UTF-8 character (a trailing lead
/// byte and its continuations, fewer than the lead announces, are left out).
size_t complete_utf8_prefix(const std::string& text) {
  size_t i = text.size(), back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return text.size();
  const auto lead = static_cast<unsigned char>(text[i - 1]);
  const size_t need = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 1;
  return need > back + 1 ? i - 1 : text.size();
}

constexpr size_t kDetokenizerWindow = 16;  // tokens decoded at most per push
constexpr size_t kDetokenizerContext = 4;  // tokens kept as context when the window restarts

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, const std::vector<int64_t>& context)
    : tokenizer_(tokenizer) {
  const size_t keep = std::min(context.size(), kDetokenizerContext);
  ids_.assign(context.end() - static_cast<std::ptrdiff_t>(keep), context.end());
  shown_ = tokenizer_.decode(ids_).size();
}

std::string IncrementalDetokenizer::push(int64_t id) {
  ids_.push_back(id);
  const auto text = tokenizer_.decode(ids_);
  const size_t ready = complete_utf8_prefix(text);
  std::string out = ready > shown_ ? text.substr(shown_, ready - shown_) : std::string();
  shown_ = std::max(shown_, ready);
  if (ids_.size() >= kDetokenizerWindow && shown_ == text.size()) {  // restart from the last few tokens
    ids_.erase(ids_.begin(), ids_.end() - static_cast<std::ptrdiff_t>(kDetokenizerContext));
    shown_ = tokenizer_.decode(ids_).size();
  }
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) words.push_back(current), current.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) {
      flush(), ++i;
    } else if (is_split_punct(c)) {
      flush(), words.emplace_back(1, text[i]), ++i;
    } else if (size_t n = inverted_mark(text, i)) {
      flush(), words.push_back(text.substr(i, n)), i += n;
    } else {
      current += text[i++];
    }
  }
  flush();
  return words;
}

std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& options, const std::vector<std::string>& texts,
                                           const std::string& model_path) {
  return train_tokenizer(
      options,
      [&](const std::function<void(const std::string&)>& emit) {
        for (const auto& t : texts) emit(t);
      },
      model_path);
}

std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& options, const TextSource& texts,
                                           const std::string& model_path) {
  switch (options.type()) {
    case TokenizerType::word:
      return train_words(options, texts);
    case TokenizerType::sentencepiece:
      return train_sentencepiece(options, texts, model_path);
    case TokenizerType::byte:
      return std::make_unique<ByteTokenizer>();
  }
  throw std::logic_error("unhandled TokenizerType");
}

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerOptions& options, const std::string& path) {
  switch (options.type()) {
    case TokenizerType::word: {
      std::ifstream in(path);
      if (!in) throw std::runtime_error(path + ": missing word vocabulary");
      std::vector<std::string> words;
      for (std::string line; std::getline(in, line);) words.push_back(line);
      if (words.size() < kSpecials.size() || !std::equal(kSpecials.begin(), kSpecials.end(), words.begin()))
        throw std::runtime_error(path + ": not a ropelab vocabulary (special tokens missing)");
      return std::make_unique<WordTokenizer>(std::move(words));
    }
    case TokenizerType::sentencepiece: {
      if (!fs::exists(path)) throw std::runtime_error(path + ": missing SentencePiece model");
      return std::make_unique<SentencePieceTokenizer>(path);
    }
    case TokenizerType::byte:
      return std::make_unique<ByteTokenizer>();
  }
  throw std::logic_error("unhandled TokenizerType");
}

}  // namespace ropelab
