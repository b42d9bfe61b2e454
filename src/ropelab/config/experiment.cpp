#include "ropelab/config/experiment.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "ropelab/task/task.h"

namespace ropelab {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw ConfigError(path + ": " + what); }

std::vector<std::string> scalars(const YAML::Node& node, const std::string& path, const std::string& key) {
  std::vector<std::string> out;
  if (node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) fail(path, key + " must be a value or a list of values");
  for (const auto& item : node) {
    if (!item.IsScalar()) fail(path, key + " must list plain values");
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace

ExperimentSpec load_experiment(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    fail(path, "cannot open");
  } catch (const YAML::Exception& e) {
    fail(path, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) fail(path, "expected a mapping with base, grid and seeds");
  ExperimentSpec spec;
  spec.path = path;
  static const std::set<std::string> known = {"base",          "set",          "grid",        "seeds",
                                              "eval_contexts", "eval_strides", "eval_scaling"};
  for (const auto& entry : root) {
    const auto key = entry.first.Scalar();
    if (!known.count(key))
      fail(path,
           "unknown key " + key + " (expected base, set, grid, seeds, eval_contexts, eval_strides, eval_scaling)");
  }
  if (!root["base"]) fail(path, "base (the config file(s) every variant starts from) is required");
  spec.base = scalars(root["base"], path, "base");
  for (const auto& file : spec.base)
    if (!std::filesystem::exists(file))
      fail(path, "base: " + file + " not found (paths are from the working directory)");
  if (root["set"]) spec.set = scalars(root["set"], path, "set");
  if (root["grid"]) {
    if (!root["grid"].IsMap()) fail(path, "grid must map config keys to lists of values");
    for (const auto& entry : root["grid"]) {
      const auto key = entry.first.Scalar();
      auto values = scalars(entry.second, path, "grid." + key);
      if (values.empty()) fail(path, "grid." + key + " has no values");
      spec.grid.emplace_back(key, std::move(values));
    }
  }
  auto integers = [&](const char* key) {
    std::vector<int64_t> out;
    for (const auto& s : scalars(root[key], path, key)) {
      try {
        size_t used = 0;
        out.push_back(std::stoll(s, &used));
        if (used != s.size()) throw std::invalid_argument(s);
      } catch (const std::exception&) {
        fail(path, std::string(key) + ": '" + s + "' is not an integer");
      }
    }
    return out;
  };
  if (root["seeds"]) spec.seeds = integers("seeds");
  if (spec.seeds.empty()) fail(path, "seeds has no values");
  if (root["eval_contexts"]) spec.eval_contexts = integers("eval_contexts");
  for (auto c : spec.eval_contexts)
    if (c <= 0) fail(path, "eval_contexts: " + std::to_string(c) + " must be positive");
  if (root["eval_strides"]) spec.eval_strides = integers("eval_strides");
  for (auto s : spec.eval_strides)
    if (s <= 0) fail(path, "eval_strides: " + std::to_string(s) + " must be positive");
  if (root["eval_scaling"]) spec.eval_scaling = scalars(root["eval_scaling"], path, "eval_scaling");
  for (const auto& s : spec.eval_scaling) {
    RopeScalingType type = RopeScalingType::none;
    try {
      type = parse_rope_scaling_type(s);
    } catch (const std::exception&) {
      fail(path, "eval_scaling: " + s + " is not a RoPE scaling (linear, ntk, dynamic_ntk, yarn)");
    }
    if (type == RopeScalingType::none) fail(path, "eval_scaling: none is the plain evaluation; list scalings only");
  }

  // Every variant must load and validate before any run starts.
  for (const auto& variant : expand_grid(spec)) {
    try {
      const auto config = variant_config(spec, variant, spec.seeds.front());
      if (config.data.test().empty()) fail(path, "data.test is not set (every run is evaluated on the test split)");
      if ((!spec.eval_contexts.empty() || !spec.eval_strides.empty() || !spec.eval_scaling.empty()) &&
          !make_task(config)->takes_eval_context())
        fail(path, std::string(!spec.eval_contexts.empty()  ? "eval_contexts"
                               : !spec.eval_strides.empty() ? "eval_strides"
                                                            : "eval_scaling") +
                       " applies to language models (task lm)");
    } catch (const ConfigError& e) {
      if (std::string(e.what()).rfind(path + ":", 0) == 0) throw;
      fail(path, "variant " + (variant.name.empty() ? std::string("(base)") : variant.name) + ": " + e.what());
    }
  }
  return spec;
}

std::vector<Variant> expand_grid(const ExperimentSpec& spec) {
  std::vector<Variant> out{{}};
  for (const auto& [key, values] : spec.grid) {
    std::vector<Variant> next;
    for (const auto& partial : out)
      for (const auto& value : values) {
        Variant v = partial;
        v.overrides.push_back(key + "=" + value);
        v.name += (v.name.empty() ? "" : ",") + key + "=" + value;
        next.push_back(std::move(v));
      }
    out = std::move(next);
  }
  return out;
}

Config variant_config(const ExperimentSpec& spec, const Variant& variant, int64_t seed) {
  ConfigSources sources;
  sources.files = spec.base;
  sources.overrides = spec.set;
  sources.overrides.insert(sources.overrides.end(), variant.overrides.begin(), variant.overrides.end());
  sources.overrides.push_back("train.seed=" + std::to_string(seed));
  return load_config(sources);
}

}  // namespace ropelab
