#pragma once
/// The settings of AttentionOptions that only one backend reads (the Performer's features,
/// the softmax backend's kernel and window), each with the rule that says whether options
/// read it: a key the user wrote that the chosen backend does not read is refused by name
/// (config/config.h), not dropped without a word.

#include <string>
#include <vector>

#include "ropelab/attention/backend.h"

namespace ropelab {

struct AttentionSetting {
  const char* key;                           // under model.attention
  bool (*read_by)(const AttentionOptions&);  // whether a backend with these options reads it
  const char* readers;                       // who reads it, for messages
};

/// Every setting that some attention options do not read, in the schema's order.
const std::vector<AttentionSetting>& attention_settings();

}  // namespace ropelab
