#pragma once
/// The settings of PositionOptions that a given encoder never reads: T5's buckets for
/// rotary, the learned table's start for ALiBi, YaRN's ramp for rotary without YaRN. Two
/// options that differ only there build the same model and train it the same way, so a run
/// directory's identity (run/run.h: run_started_with) compares options with them cleared:
/// a changed default of one encoder's setting does not make every other encoder's runs
/// look different.

#include "ropelab/position/position_encoder.h"

namespace ropelab {

/// `options` with each setting its type (and scaling type, and CoPE switch) does not read
/// set to PositionOptions()'s value; the settings it reads are kept.
PositionOptions with_unused_settings_cleared(const PositionOptions& options);

}  // namespace ropelab
