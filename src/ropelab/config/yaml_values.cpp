#include "ropelab/config/yaml_values.h"

#include <algorithm>

#include "ropelab/config/yaml_merge.h"
#include "ropelab/options/config.h"

namespace ropelab::yaml_values {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 4;  // suggest only close spellings
  for (const auto& candidate : candidates)
    if (const auto d = edit_distance(candidate, name); d < best_distance) best_distance = d, best = candidate;
  return best;
}

File::File(std::string path, const char* kind) : path_(std::move(path)), root_(yaml_merge::load_file(path_, kind)) {}

void File::fail(const std::string& what) const { throw ConfigError(path_ + ": " + what); }

void File::expect_keys(const YAML::Node& node, const std::string& where,
                       const std::vector<std::string>& allowed) const {
  for (const auto& entry : node) {
    const auto key = entry.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail((where.empty() ? "" : where + ": ") + "unknown key " + key + " (expected " + list + ")");
  }
}

std::vector<std::string> File::scalars(const YAML::Node& node, const std::string& key) const {
  if (node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) fail(key + " must be a value or a list of values");
  std::vector<std::string> out;
  for (const auto& item : node) {
    if (!item.IsScalar()) fail(key + " must list plain values");
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace ropelab::yaml_values
