#pragma once
/// The range checks of a typed Config, each naming its key: values out of range, settings
/// that contradict each other, and the position encoders and attention backend built once so
/// that their own checks run before any work.

#include <functional>
#include <string>

#include "ropelab/options/config.h"

namespace ropelab {

/// Reports a bad setting: `what` follows the key ("=VALUE must be positive"). It must throw.
using ConfigFail = std::function<void(const std::string& key, const std::string& what)>;

/// Calls `fail` on the first setting of `c` that is out of range.
void validate_config(const Config& c, const ConfigFail& fail);

/// Calls `fail` on the first setting of `c` that training cannot take though an evaluation
/// of a trained run may (dynamic NTK per call, or a window at cache positions, with drawn
/// training positions: the positions used would not be the drawn ones).
void validate_training(const Config& c, const ConfigFail& fail);

}  // namespace ropelab
