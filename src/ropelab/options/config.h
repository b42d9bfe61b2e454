#pragma once
/// The typed options of a run, gathered from every room's own (data/, decode/, model/,
/// options/train_options.h): what the task, evaluation, training and run-directory rooms
/// work from. The YAML that becomes a Config is read and written above them, in config/
/// (config/config.h), which hands those rooms its reader and writer as ConfigFiles.

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropelab/data/options.h"
#include "ropelab/decode/options.h"
#include "ropelab/model/transformer.h"
#include "ropelab/options/train_options.h"

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

/// A config's file form: how a run directory's config.yaml is read and written. The rooms
/// that keep run directories (run/, train/) lie below the YAML reader and are handed this
/// (config/config.h: yaml_config_files()).
struct ConfigFiles {
  /// The config of `files` (later ones win) with `overrides` ("dotted.key=value") applied
  /// last, validated; throws ConfigError naming the file or override and the key.
  std::function<Config(const std::vector<std::string>& files, const std::vector<std::string>& overrides)> read;
  /// The whole effective config as text, defaults included: `read` of it gives the same Config.
  std::function<std::string(const Config&)> write;
  /// "" when the override `assignment` (KEY=VALUE) may change a trained run's config (it
  /// leaves the parameters as they are: config/run_overrides.h); otherwise the one-line error.
  std::function<std::string(const std::string& assignment)> override_error;
};

}  // namespace ropelab
