// SentencePiece behind a narrow C-linkage interface, built as its own shared object and
// loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND). Debian's libsentencepiece bundles a
// protobuf-lite that exports the same symbols as the libprotobuf LibTorch loads; linked
// together they crash at start-up. Isolated this way each binds its own copy.
// No LibTorch here.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <vector>

extern "C" {

/// Trains a model; returns "" on success, else the error text.
std::string* ropelab_spm_train(const std::string* args) {
  auto status = sentencepiece::SentencePieceTrainer::Train(*args);
  return new std::string(status.ok() ? "" : status.ToString());
}

void ropelab_spm_free_string(std::string* s) { delete s; }

/// Loads a model; on failure returns nullptr and sets *error.
void* ropelab_spm_load(const std::string* path, std::string* error) {
  auto* processor = new sentencepiece::SentencePieceProcessor();
  auto status = processor->Load(*path);
  if (!status.ok()) {
    *error = status.ToString();
    delete processor;
    return nullptr;
  }
  return processor;
}

void ropelab_spm_free(void* processor) { delete static_cast<sentencepiece::SentencePieceProcessor*>(processor); }

int ropelab_spm_vocab_size(void* processor) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(processor)->GetPieceSize();
}

void ropelab_spm_encode(void* processor, const std::string* text, std::vector<int>* ids) {
  ids->clear();
  static_cast<sentencepiece::SentencePieceProcessor*>(processor)->Encode(*text, ids);
}

void ropelab_spm_decode(void* processor, const std::vector<int>* ids, std::string* text) {
  text->clear();
  static_cast<sentencepiece::SentencePieceProcessor*>(processor)->Decode(*ids, text);
}

}  // extern "C"
