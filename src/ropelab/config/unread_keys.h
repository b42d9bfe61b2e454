#pragma once
/// Keys a user wrote that the configuration does not read: a setting of an encoder, a RoPE
/// scaling or an attention backend other than the one chosen (`--set
/// model.position.unrotated=0.25` with ALiBi). load_config refuses them by name; an
/// experiment's variants list them (experiment/spec.h). Keys that ropelab wrote itself (a
/// run's config.yaml, any dump_config text) carry every setting and are not checked.

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "ropelab/config/config.h"
#include "ropelab/config/yaml_merge.h"

namespace ropelab {

/// The keys of the merged tree `root` that `config` (read from it) does not read, in schema
/// order, for the stacks the task builds; keys whose origin is in `ropelab_written` are
/// left out.
std::vector<UnreadKey> unread_keys(const Config& config, const YAML::Node& root, const yaml_merge::Origins& origins,
                                   const std::set<std::string>& ropelab_written);

}  // namespace ropelab
