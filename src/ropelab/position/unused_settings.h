#pragma once
/// The settings of PositionOptions that only some encoders read: T5's buckets, the learned
/// table's start, the rotary ladder's base, YaRN's ramp. Each is listed once with the rule
/// that says whether a stack's options read it, so that
///  - a run directory's identity (run/run.h: run_started_with) compares options with the
///    unread settings cleared: two options that differ only there build the same model and
///    train it the same way, and a changed default of one encoder's setting does not make
///    every other encoder's runs look different;
///  - a key the user wrote that the chosen encoder, scaling or CoPE switch does not read is
///    refused by name (config/config.h), not dropped without a word.

#include <string>
#include <vector>

#include "ropelab/position/position_encoder.h"

namespace ropelab {

struct PositionSetting {
  const char* key;                          // under a stack's section: "unrotated", "scaling.ramp"
  bool (*read_by)(const PositionOptions&);  // whether a stack with these options reads it
  std::string (*readers)();                 // who reads it, for messages: "rotary and rotary_nd"
  void (*reset)(PositionOptions&, const PositionOptions& defaults);  // back to the default
};

/// Every setting that some encoders do not read, in the schema's order.
const std::vector<PositionSetting>& position_settings();

/// `options` with each setting its type (and scaling type, and CoPE switch) does not read
/// set to PositionOptions()'s value; the settings it reads are kept.
PositionOptions with_unused_settings_cleared(const PositionOptions& options);

}  // namespace ropelab
