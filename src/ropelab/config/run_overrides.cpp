#include "ropelab/config/run_overrides.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "ropelab/config/schema.h"
#include "ropelab/config/yaml_merge.h"

namespace ropelab {

namespace {

using MarkedKeys = std::vector<std::pair<std::string, bool>>;

/// Every key of the schema in its order, and whether run_may_change marks it.
class OverrideMarks {
 public:
  template <typename T>
  void operator()(const std::string& name, T&) {
    keys.emplace_back(prefix_ + name, marked_ > 0);
  }
  template <typename E>
  void choice(const std::string& name, E& value, E (*)(const std::string&)) {
    (*this)(name, value);
  }
  template <typename F>
  void section(const std::string& name, F&& body) {
    const auto outer = prefix_;
    prefix_ += name + ".";
    body();
    prefix_ = outer;
  }
  template <typename F>
  void run_may_change(F&& body) {
    ++marked_;
    body();
    --marked_;
  }

  MarkedKeys keys;

 private:
  std::string prefix_;
  int marked_ = 0;
};

const MarkedKeys& schema_keys() {
  static const MarkedKeys keys = [] {
    OverrideMarks marks;
    Config config;
    schema::describe(marks, config);
    return marks.keys;
  }();
  return keys;
}

/// `key` is a marked key, or a section whose keys are all marked.
bool marked(const MarkedKeys& keys, const std::string& key) {
  bool any = false;
  for (const auto& [k, m] : keys) {
    if (k == key) return m;
    if (k.rfind(key + ".", 0) != 0) continue;
    if (!m) return false;
    any = true;
  }
  return any;
}

/// The dotted keys of the leaves of `node` (a --set tree), below `prefix`.
void leaf_keys(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.IsMap() || node.size() == 0) {
    out.push_back(prefix);
    return;
  }
  for (const auto& entry : node)
    leaf_keys(entry.second, (prefix.empty() ? "" : prefix + ".") + entry.first.Scalar(), out);
}

/// run_override_keys' text, built from the marks.
std::string compact_override_keys() {
  MarkedKeys spelled;  // in the shorthand's spelling, each once
  for (const auto& [key, m] : schema_keys()) {
    const auto shown = yaml_merge::shorthand_spelling(key);
    auto it = std::find_if(spelled.begin(), spelled.end(), [&](const auto& entry) { return entry.first == shown; });
    if (it == spelled.end())
      spelled.emplace_back(shown, m);
    else
      it->second = it->second && m;
  }
  // a section whose keys are all marked as "section.*", siblings as "parent.{a,b}"
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  std::set<std::string> whole;
  for (const auto& [key, m] : spelled) {
    if (!m) continue;
    std::string section;
    for (auto dot = key.find('.'); dot != std::string::npos && section.empty(); dot = key.find('.', dot + 1))
      if (marked(spelled, key.substr(0, dot))) section = key.substr(0, dot);
    if (!section.empty()) {
      if (whole.insert(section).second) groups.push_back({section + ".*", {}});
      continue;
    }
    const auto dot = key.rfind('.');
    const auto parent = key.substr(0, dot == std::string::npos ? 0 : dot), name = key.substr(dot + 1);
    if (!groups.empty() && groups.back().first == parent && !groups.back().second.empty())
      groups.back().second.push_back(name);
    else
      groups.push_back({parent, {name}});
  }
  std::string out;
  for (const auto& [head, names] : groups) {
    out += out.empty() ? "" : ", ";
    if (names.empty())
      out += head;
    else if (names.size() == 1)
      out += head + "." + names.front();
    else {
      out += head + ".{";
      for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i];
      out += "}";
    }
  }
  return out;
}

}  // namespace

std::string run_override_keys() {
  static const std::string keys = compact_override_keys();  // every command's --set help reads it
  return keys;
}

std::string run_override_error(const std::string& assignment) {
  const auto key = assignment.substr(0, assignment.find('='));
  std::vector<std::string> keys;
  try {
    leaf_keys(yaml_merge::parse_override(assignment), "", keys);
  } catch (const ConfigError&) {
    keys = {key};  // the config's reader names what is wrong with the value
  }
  for (const auto& leaf : keys)
    for (const auto& target : yaml_merge::shorthand_targets(leaf))
      if (!marked(schema_keys(), target))
        return "--set " + assignment + ": a trained run takes only " + run_override_keys() +
               " (other keys would not match its parameters)";
  return "";
}

}  // namespace ropelab
