#pragma once
/// The one place where YAML becomes typed options.
///
/// Priority: defaults < config files (later wins) < `--set key=value` overrides.
/// Every key of the merged YAML must be known (unknown keys fail with a did-you-mean),
/// every value must convert to its option's type, and the result is validated as a
/// whole before any work starts. Errors name the file (or --set) and the dotted key.
/// `model.position` is a shorthand that sets both `model.encoder_position` and
/// `model.decoder_position`; keys under those two override it.
///
/// The typed Config itself is options/config.h; this room lies above the rooms that keep
/// run directories (run/, train/), which receive its reader and writer as ConfigFiles.

#include <string>
#include <vector>

#include "ropelab/options/config.h"

namespace ropelab {

/// A key a user wrote that the configuration does not read (config/unread_keys.h).
struct UnreadKey {
  std::string key;      // "model.decoder_position.unrotated"
  std::string origin;   // the file or "--set" that wrote it
  std::string message;  // one line: origin, key and value, what was chosen, who reads it
};

struct ConfigSources {
  std::vector<std::string> files;      // YAML files, later ones win
  std::vector<std::string> overrides;  // "dotted.key=value", applied last
  /// Keys a user wrote (a file or an override) that the chosen encoder, scaling or attention
  /// backend does not read (config/unread_keys.h): refused when null, else listed here, one
  /// line each (an experiment's grid reaches variants that do not read every key).
  std::vector<UnreadKey>* unread = nullptr;
  /// A config to train with: also the checks of training alone (validate_training), which
  /// an evaluation of a trained run does not make.
  bool training = false;
};

/// The first and the last line of every dump_config text. A file that starts with the first
/// was written by ropelab and holds every key (none of them is checked as unread); one
/// without the last line was cut short, and loading it fails.
inline constexpr const char* kConfigHeader = "# ropelab config: every key; a whole file ends with '# end of config'";
inline constexpr const char* kConfigFooter = "# end of config";

/// Merges, reads and validates; throws ConfigError.
Config load_config(const ConfigSources& sources);
/// The full effective config as YAML (every key, defaults included) between kConfigHeader
/// and kConfigFooter; load_config of this text gives back the same Config.
std::string dump_config(const Config& config);
/// load_config and dump_config as the ConfigFiles that run/ and train/ are handed.
const ConfigFiles& yaml_config_files();

}  // namespace ropelab
