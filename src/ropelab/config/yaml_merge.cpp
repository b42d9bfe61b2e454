#include "ropelab/config/yaml_merge.h"

#include <fstream>
#include <sstream>

#include "ropelab/config/config.h"

namespace ropelab::yaml_merge {

std::string origin_of(const Origins& origins, const std::string& key) {
  // the key itself, else the nearest parent or child that has an origin
  for (std::string k = key;; k = k.substr(0, k.rfind('.'))) {
    if (auto it = origins.find(k); it != origins.end()) return it->second;
    if (k.find('.') == std::string::npos) break;
  }
  if (auto it = origins.lower_bound(key + "."); it != origins.end() && it->first.rfind(key + ".", 0) == 0)
    return it->second;
  return "config";
}

namespace {

void erase_origins_below(Origins& origins, const std::string& key) {
  const auto prefix = key + ".";
  for (auto it = origins.lower_bound(prefix); it != origins.end() && it->first.rfind(prefix, 0) == 0;)
    it = origins.erase(it);
}

}  // namespace

void merge_into(YAML::Node dst, const YAML::Node& src, const std::string& prefix, const std::string& origin,
                Origins& origins) {
  for (const auto& entry : src) {
    const auto& name = entry.first.Scalar();
    const auto key = prefix + name;
    if (entry.second.IsMap()) {
      if (!dst[name] || !dst[name].IsMap()) {
        dst[name] = YAML::Node(YAML::NodeType::Map);
        erase_origins_below(origins, key);
      }
      origins[key] = origin;
      merge_into(dst[name], entry.second, key + ".", origin, origins);
    } else {
      dst[name] = YAML::Clone(entry.second);
      erase_origins_below(origins, key);
      origins[key] = origin;
    }
  }
}

YAML::Node load_file(const std::string& path, const char* kind) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open " + kind);
  YAML::Node node;
  try {
    node = YAML::Load(in);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  if (node.IsNull()) return YAML::Node(YAML::NodeType::Map);  // an empty file
  if (!node.IsMap()) throw ConfigError(path + ": expected a mapping of keys at the top level");
  return node;
}

YAML::Node find_key(const YAML::Node& root, const std::string& key) {
  YAML::Node node;
  node.reset(root);
  std::stringstream parts(key);
  std::string part;
  while (std::getline(parts, part, '.')) {
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    // yaml-cpp: `node = child` would overwrite node's content; reset() rebinds, and
    // indexing through a const Node inserts nothing.
    const YAML::Node child = static_cast<const YAML::Node&>(node)[part];
    if (!child) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(child);
  }
  return node;
}

YAML::Node parse_override(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment + ": expected key=value, e.g. --set model.d_model=256");
  const auto key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::ParserException& e) {
    throw ConfigError("--set " + assignment + ": value is not valid YAML: " + e.msg);
  }
  // a.b.c=v -> {a: {b: {c: v}}}
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node node = root;
  std::stringstream parts(key);
  std::string part, next;
  std::getline(parts, part, '.');
  while (std::getline(parts, next, '.')) {
    node[part] = YAML::Node(YAML::NodeType::Map);
    node.reset(node[part]);  // rebind, not assign (see find_key)
    part = next;
  }
  node[part] = value;
  return root;
}

namespace {
// model.position: the shorthand for model.encoder_position and model.decoder_position
const std::string kShorthand = "model.position";
const std::vector<std::string> kStackNames{"encoder_position", "decoder_position"};

/// The part of `key` after `section` when it is the section or a key below it.
bool below(const std::string& key, const std::string& section, std::string* rest) {
  if (key.rfind(section, 0) != 0 || (key.size() > section.size() && key[section.size()] != '.')) return false;
  *rest = key.substr(section.size());
  return true;
}
}  // namespace

void expand_position_shorthand(YAML::Node root, Origins& origins) {
  YAML::Node model = root["model"];
  if (!model || !model.IsMap() || !model["position"]) return;
  YAML::Node shorthand = model["position"];
  if (!shorthand.IsMap()) throw ConfigError(origin_of(origins, kShorthand) + ": " + kShorthand + " must be a mapping");
  for (const auto& stack : kStackNames) {
    YAML::Node expanded(YAML::NodeType::Map);
    Origins scratch;
    merge_into(expanded, shorthand, "", "", scratch);
    const std::string prefix = std::string("model.") + stack + ".";
    for (const auto& entry : shorthand) {
      const auto key = prefix + entry.first.Scalar();
      if (!origins.count(key)) origins[key] = origin_of(origins, kShorthand + "." + entry.first.Scalar());
    }
    if (model[stack]) merge_into(expanded, model[stack], "", "", scratch);
    model[stack] = expanded;
  }
  model.remove("position");
}

void merge_override(YAML::Node root, const std::string& assignment, Origins& origins) {
  const auto key = assignment.substr(0, assignment.find('='));
  for (const auto& target : shorthand_targets(key))
    merge_into(root, parse_override(target + assignment.substr(key.size())), "", "--set", origins);
}

std::vector<std::string> shorthand_targets(const std::string& key) {
  std::string rest;
  if (!below(key, kShorthand, &rest)) return {key};
  std::vector<std::string> out;
  for (const auto& stack : kStackNames) out.push_back("model." + stack + rest);
  return out;
}

std::string shorthand_spelling(const std::string& key) {
  std::string rest;
  for (const auto& stack : kStackNames)
    if (below(key, "model." + stack, &rest)) return kShorthand + rest;
  return key;
}

}  // namespace ropelab::yaml_merge
