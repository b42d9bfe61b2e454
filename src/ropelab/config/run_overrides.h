#pragma once
/// What `--set` may change on a trained run (`ropelab eval --run`, `generate`, `passkey`,
/// ...): the keys that config/schema.h marks with run_may_change, which leave the trained
/// parameters as they are. Every other key would describe another model than the
/// checkpoint holds.

#include <string>

namespace ropelab {

/// The keys --set may change on a trained run, compactly and in the schema's order, in the
/// model.position shorthand: "data.{eval_tokens,documents}, model.position.rotary_impl,
/// model.position.scaling.*, ...". For help texts and messages.
std::string run_override_keys();

/// "" when `assignment` (KEY=VALUE; a mapping value counts by the keys it sets) may change a
/// trained run's config; otherwise the one-line error naming the keys that may.
std::string run_override_error(const std::string& assignment);

}  // namespace ropelab
