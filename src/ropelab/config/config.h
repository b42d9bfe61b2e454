#pragma once
/// The one place where YAML becomes typed options.
///
/// Priority: defaults < config files (later wins) < `--set key=value` overrides.
/// Every key of the merged YAML must be known (unknown keys fail with a did-you-mean),
/// every value must convert to its option's type, and the result is validated as a
/// whole before any work starts. Errors name the file (or --set) and the dotted key.
/// `model.position` is a shorthand that sets both `model.encoder_position` and
/// `model.decoder_position`; keys under those two override it.

#include <stdexcept>
#include <string>
#include <vector>

#include "ropelab/config/train_options.h"
#include "ropelab/data/options.h"
#include "ropelab/decode/options.h"
#include "ropelab/model/transformer.h"

namespace ropelab {

/// `translation`: encoder-decoder on parallel text. `lm`: decoder-only language model
/// on plain text (model.decoder_layers, model.decoder_position).
enum class TaskType { translation, lm };

struct Config {
  TaskType task = TaskType::translation;
  DataOptions data;
  TokenizerOptions tokenizer;
  /// vocab_size and pad_id are set from the tokenizer, not from YAML.
  TransformerOptions model;
  TrainOptions train;
  DecodeOptions decode;
};

/// A user mistake in a config; what() is one line naming the file and key. Control
/// characters echoed from the input (a newline in a --set value, say) are escaped.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message);
};

struct ConfigSources {
  std::vector<std::string> files;      // YAML files, later ones win
  std::vector<std::string> overrides;  // "dotted.key=value", applied last
};

/// Merges, reads and validates; throws ConfigError.
Config load_config(const ConfigSources& sources);
/// The full effective config as YAML (every key, defaults included); load_config of
/// this text gives back the same Config.
std::string dump_config(const Config& config);

/// Levenshtein distance (for did-you-mean suggestions).
size_t edit_distance(const std::string& a, const std::string& b);

std::string to_string(TaskType task);
std::string to_string(LrSchedule schedule);
std::string to_string(Precision precision);
std::string to_string(CorpusFormat format);
std::string to_string(TokenizerType type);
std::string to_string(LengthPenalty formula);
std::string to_string(SourceLayout layout);
TaskType parse_task(const std::string& name);
LrSchedule parse_lr_schedule(const std::string& name);
Precision parse_precision(const std::string& name);
CorpusFormat parse_corpus_format(const std::string& name);
TokenizerType parse_tokenizer_type(const std::string& name);
LengthPenalty parse_length_penalty(const std::string& name);
SourceLayout parse_source_layout(const std::string& name);

}  // namespace ropelab
