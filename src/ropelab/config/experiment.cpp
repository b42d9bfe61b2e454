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
  static const std::set<std::string> known = {"base",          "set",          "grid",         "seeds",
                                              "eval_contexts", "eval_strides", "eval_scaling", "finetune"};
  for (const auto& entry : root) {
    const auto key = entry.first.Scalar();
    if (!known.count(key))
      fail(path, "unknown key " + key +
                     " (expected base, set, grid, seeds, eval_contexts, eval_strides, eval_scaling, finetune)");
  }
  if (!root["base"]) fail(path, "base (the config file(s) every variant starts from) is required");
  spec.base = scalars(root["base"], path, "base");
  for (const auto& file : spec.base)
    if (!std::filesystem::exists(file))
      fail(path, "base: " + file + " not found (paths are from the working directory)");
  if (root["set"]) spec.set = scalars(root["set"], path, "set");
  auto read_grid = [&](const YAML::Node& node, const std::string& name) {
    std::vector<std::pair<std::string, std::vector<std::string>>> grid;
    if (!node.IsMap()) fail(path, name + " must map config keys to lists of values");
    for (const auto& entry : node) {
      const auto key = entry.first.Scalar();
      auto values = scalars(entry.second, path, name + "." + key);
      if (values.empty()) fail(path, name + "." + key + " has no values");
      grid.emplace_back(key, std::move(values));
    }
    return grid;
  };
  if (root["grid"]) spec.grid = read_grid(root["grid"], "grid");
  if (const auto node = root["finetune"]) {
    if (!node.IsMap()) fail(path, "finetune must map from, set and grid");
    for (const auto& entry : node)
      if (entry.first.Scalar() != "from" && entry.first.Scalar() != "set" && entry.first.Scalar() != "grid")
        fail(path, "finetune: unknown key " + entry.first.Scalar() + " (expected from, set, grid)");
    FinetuneSpec f;
    if (!node["from"] || !node["from"].IsScalar()) fail(path, "finetune.from (the variant to start from) is required");
    f.from = node["from"].Scalar();
    if (node["set"]) f.set = scalars(node["set"], path, "finetune.set");
    if (node["grid"]) f.grid = read_grid(node["grid"], "finetune.grid");
    spec.finetune.push_back(std::move(f));
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

  if (!spec.finetune.empty()) {
    std::string names;
    bool found = false;
    for (const auto& v : expand_grid(spec)) {
      found = found || v.name == spec.finetune[0].from;
      names += (names.empty() ? "" : ", ") + v.name;
    }
    if (!found) fail(path, "finetune.from: " + spec.finetune[0].from + " is not a variant of the grid (" + names + ")");
  }
  // Every variant, fine-tunes included, must load and validate before any run starts.
  auto variants = expand_grid(spec);
  for (auto& v : finetune_variants(spec)) variants.push_back(std::move(v));
  for (const auto& variant : variants) {
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

std::vector<Variant> finetune_variants(const ExperimentSpec& spec) {
  if (spec.finetune.empty()) return {};
  const auto& f = spec.finetune[0];
  std::vector<std::string> from;
  for (const auto& v : expand_grid(spec))
    if (v.name == f.from) from = v.overrides;
  ExperimentSpec points;
  points.grid = f.grid;
  std::vector<Variant> out;
  for (auto& point : expand_grid(points)) {
    Variant v;
    v.overrides = from;
    v.overrides.insert(v.overrides.end(), f.set.begin(), f.set.end());
    v.overrides.insert(v.overrides.end(), point.overrides.begin(), point.overrides.end());
    v.name = "finetune" + (point.name.empty() ? std::string() : ":" + point.name);
    out.push_back(std::move(v));
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
