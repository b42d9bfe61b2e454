#pragma once
/// The values of ropelab's YAML files, read one way: a config (config/config.cpp) and an
/// experiment file (experiment/spec.cpp) convert scalars, suggest the key meant and refuse
/// what they cannot read through these, each refusal one line naming the file and the key.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ropelab::yaml_values {

/// What a value of type T must be, for messages: "an integer", "a number", ...
template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true/false)";
  if constexpr (std::is_integral_v<T>) return "an integer";
  if constexpr (std::is_floating_point_v<T>) return "a number";
  return "a string";
}

/// The scalar `node` as T by YAML's rules (a whole integer, a number, true/false); nothing
/// when it is not one.
template <typename T>
std::optional<T> as(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

/// Levenshtein distance (for did-you-mean suggestions).
size_t edit_distance(const std::string& a, const std::string& b);

/// The one of `candidates` closest to `name` within an edit distance of 3 (the first of
/// equals), else "": the key an unknown key was meant to be.
std::string closest(const std::string& name, const std::vector<std::string>& candidates);

/// A YAML file read key by key, each refusal "PATH: WHAT".
class File {
 public:
  /// Loads `path`, which must hold a mapping; `kind` names it in the messages ("experiment file").
  File(std::string path, const char* kind);
  const YAML::Node& root() const { return root_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const;
  /// Fails at the first key of the mapping `node` (the section `where`; "" at the top) not
  /// in `allowed`, listing them.
  void expect_keys(const YAML::Node& node, const std::string& where, const std::vector<std::string>& allowed) const;
  /// A value or a list of values at `key`, as written.
  std::vector<std::string> scalars(const YAML::Node& node, const std::string& key) const;
  /// A value or a list of values at `key`, each converted as a config's values are.
  template <typename T>
  std::vector<T> values(const YAML::Node& node, const std::string& key) const {
    std::vector<T> out;
    for (const auto& text : scalars(node, key)) {
      const auto value = as<T>(YAML::Node(text));
      if (!value) fail(key + ": '" + text + "' is not " + type_name<T>());
      out.push_back(*value);
    }
    return out;
  }

 private:
  std::string path_;
  YAML::Node root_;
};

}  // namespace ropelab::yaml_values
