#pragma once
/// Config files and --set overrides merged into one YAML tree, remembering where each key
/// came from so that an error can name the file (or --set) that set it.

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

namespace ropelab::yaml_merge {

/// Where each key came from: a file name or "--set".
using Origins = std::map<std::string, std::string>;

/// The origin of `key`, else of its nearest parent or child that has one, else "config".
std::string origin_of(const Origins& origins, const std::string& key);

/// Deep-merges `src` into `dst` (maps merge, everything else replaces), recording the
/// origin of every key under `prefix` it sets.
void merge_into(YAML::Node dst, const YAML::Node& src, const std::string& prefix, const std::string& origin,
                Origins& origins);

/// A file's mapping (an empty file is an empty one); ConfigError naming the file and line
/// otherwise, `kind` saying what it is in those messages.
YAML::Node load_file(const std::string& path, const char* kind = "config file");

/// The node at dotted `key` below `root` (bound to it: assigning to its children changes
/// `root`), or an undefined node where a part is missing; inserts nothing.
YAML::Node find_key(const YAML::Node& root, const std::string& key);

/// `--set a.b.c=v` as the tree {a: {b: {c: v}}}, the value read as YAML.
YAML::Node parse_override(const std::string& assignment);

/// The shorthand model.position, expanded here alone: in the files' merged tree into
/// encoder_position and decoder_position, the per-stack keys winning ...
void expand_position_shorthand(YAML::Node root, Origins& origins);

/// ... and on the command line, where `--set model.position.KEY=V` (or
/// model.position={KEY: V}) sets KEY in both stacks and beats every file, per-stack keys
/// included. Merges the override `assignment` into `root` with origin "--set".
void merge_override(YAML::Node root, const std::string& assignment, Origins& origins);

/// The keys that dotted `key` sets: model.position.X stands for model.encoder_position.X and
/// model.decoder_position.X (model.position for both sections); any other key for itself.
std::vector<std::string> shorthand_targets(const std::string& key);
/// The shorthand's spelling of a stack's key (model.decoder_position.X -> model.position.X);
/// any other key as it is.
std::string shorthand_spelling(const std::string& key);

}  // namespace ropelab::yaml_merge
