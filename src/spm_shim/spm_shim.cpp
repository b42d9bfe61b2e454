// SentencePiece behind a plain C interface, built as its own shared object and loaded
// with dlmopen(LM_ID_NEWLM): a separate link-map namespace with its own libstdc++ and
// libc. Debian's libsentencepiece bundles a protobuf-lite whose exported symbols clash
// with the libprotobuf LibTorch loads (a crash at start-up when linked together), and
// RTLD_DEEPBIND is not enough: SentencePiece's logging then writes to an unconstructed
// std::cerr. Because the namespaces have separate heaps, nothing allocated here crosses
// the boundary: callers pass buffers, functions return the size they needed.
// No LibTorch here.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstring>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace sentencepiece::logging {
void SetMinLogLevel(int v);  // exported by libsentencepiece, not declared in its public headers
}

namespace {
using Processor = sentencepiece::SentencePieceProcessor;

/// Copies `text` into buf (NUL-terminated, truncated to cap) and returns its full length.
int copy_out(const std::string& text, char* buf, int cap) {
  if (cap > 0) {
    const auto n = std::min<size_t>(text.size(), static_cast<size_t>(cap - 1));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(text.size());
}
}  // namespace

extern "C" {

/// Trains a model on the text file `input`, writing model_prefix.model and .vocab, with
/// `options` as space-separated NAME=VALUE trainer settings; 0 on success, else 1 with the
/// error in err. The paths go to the trainer as named arguments, never through its flag
/// string, which splits at spaces, and `input` is quoted, because the trainer reads a list of
/// files there, split at commas: run folders such as "model.position=_type__none,_cope__true_"
/// hold both.
int ropelab_spm_train_file(const char* input, const char* model_prefix, const char* options, char* err, int err_cap) {
  sentencepiece::logging::SetMinLogLevel(2);  // warnings and errors only
  std::unordered_map<std::string, std::string> arguments;
  std::istringstream words(options);
  for (std::string word; words >> word;) {
    const auto equals = word.find('=');
    if (equals == std::string::npos || equals == 0) {
      copy_out("SentencePiece option '" + word + "' is not NAME=VALUE", err, err_cap);
      return 1;
    }
    arguments[word.substr(0, equals)] = word.substr(equals + 1);
  }
  std::string quoted = "\"";  // one field of the trainer's comma-separated list: "" is a quote
  for (const char* c = input; *c; ++c) quoted += *c == '"' ? std::string("\"\"") : std::string(1, *c);
  arguments["input"] = quoted + "\"";
  arguments["model_prefix"] = model_prefix;
  const auto status = sentencepiece::SentencePieceTrainer::Train(arguments);
  copy_out(status.ok() ? "" : status.ToString(), err, err_cap);
  return status.ok() ? 0 : 1;
}

/// Loads a model; nullptr on failure with the error in err.
void* ropelab_spm_load(const char* path, char* err, int err_cap) {
  auto* processor = new Processor();
  const auto status = processor->Load(path);
  if (!status.ok()) {
    copy_out(status.ToString(), err, err_cap);
    delete processor;
    return nullptr;
  }
  return processor;
}

void ropelab_spm_free(void* processor) { delete static_cast<Processor*>(processor); }

int ropelab_spm_vocab_size(void* processor) { return static_cast<Processor*>(processor)->GetPieceSize(); }

/// Encodes text into ids[0..cap); returns the number of ids (retry with more room if > cap).
int ropelab_spm_encode(void* processor, const char* text, int length, int* ids, int cap) {
  std::vector<int> out;
  static_cast<Processor*>(processor)->Encode(std::string(text, static_cast<size_t>(length)), &out);
  for (size_t i = 0; i < out.size() && static_cast<int>(i) < cap; ++i) ids[i] = out[i];
  return static_cast<int>(out.size());
}

/// Decodes ids into buf; returns the text length (retry with more room if >= cap).
int ropelab_spm_decode(void* processor, const int* ids, int n, char* buf, int cap) {
  std::string text;
  static_cast<Processor*>(processor)->Decode(std::vector<int>(ids, ids + n), &text);
  return copy_out(text, buf, cap);
}

}  // extern "C"
