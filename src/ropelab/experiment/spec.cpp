#include "ropelab/experiment/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "ropelab/config/yaml_values.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {

namespace {

using Grid = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// An experiment file, its values read as a config's are (config/yaml_values.h), with the
/// checks that only experiments make.
class Reader : public yaml_values::File {
 public:
  using File::File;

  std::vector<int64_t> integers(const YAML::Node& node, const std::string& key) const {
    return values<int64_t>(node, key);
  }
  std::vector<int64_t> positive_integers(const YAML::Node& node, const std::string& key) const {
    const auto read = integers(node, key);
    for (auto v : read)
      if (v <= 0) fail(key + ": " + std::to_string(v) + " must be positive");
    return read;
  }
  int64_t positive_integer(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(key + " must be one number");
    return positive_integers(node, key).front();
  }
  /// Depths of a needle: numbers in [0, 1].
  std::vector<double> depths(const YAML::Node& node, const std::string& key) const {
    const auto read = values<double>(node, key);
    for (auto d : read)
      if (!(d >= 0 && d <= 1)) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", d);
        fail(key + ": " + std::string(text) + " is not between 0 and 1");
      }
    return read;
  }

  /// A grid: keys to lists of values, each a value or {value: V, label: L} (labels by "key=value").
  Grid grid(const YAML::Node& node, const std::string& name, std::map<std::string, std::string>& labels) const {
    Grid grid;
    if (!node.IsMap()) fail(name + " must map config keys to lists of values");
    for (const auto& entry : node) {
      const auto key = entry.first.Scalar(), where = name + "." + key;
      std::vector<std::string> values;
      for (const auto& item : entry.second.IsSequence() ? entry.second : YAML::Node()) {
        if (item.IsScalar()) {
          values.push_back(item.Scalar());
          continue;
        }
        if (!item.IsMap()) fail(where + " must list plain values or {value, label} mappings");
        expect_keys(item, where, {"value", "label"});
        if (!item["value"] || !item["value"].IsScalar() || !item["label"] || !item["label"].IsScalar())
          fail(where + ": a labelled value must give one value and one label");
        values.push_back(item["value"].Scalar());
        labels[key + "=" + values.back()] = item["label"].Scalar();
      }
      if (!entry.second.IsSequence()) values = scalars(entry.second, where);
      if (values.empty()) fail(where + " has no values");
      grid.emplace_back(key, std::move(values));
    }
    return grid;
  }
};

FinetuneSpec read_finetune(const Reader& r, const YAML::Node& node, std::map<std::string, std::string>& labels) {
  if (!node.IsMap()) r.fail("finetune must map from, set and grid");
  r.expect_keys(node, "finetune", {"from", "set", "grid"});
  FinetuneSpec f;
  if (!node["from"] || !node["from"].IsScalar()) r.fail("finetune.from (the variant to start from) is required");
  f.from = node["from"].Scalar();
  if (node["set"]) f.set = r.scalars(node["set"], "finetune.set");
  if (node["grid"]) f.grid = r.grid(node["grid"], "finetune.grid", labels);
  return f;
}

PasskeyGrid read_passkey(const Reader& r, const YAML::Node& node, bool& per_seed) {
  if (!node.IsMap()) r.fail("passkey must map lengths, depths and documents");
  r.expect_keys(node, "passkey", {"lengths", "depths", "documents", "documents_per_seed"});
  if (node["documents_per_seed"]) {
    const auto value =
        node["documents_per_seed"].IsScalar() ? yaml_values::as<bool>(node["documents_per_seed"]) : std::nullopt;
    if (!value) r.fail("passkey.documents_per_seed must be true or false");
    per_seed = *value;
  }
  PasskeyGrid grid;
  if (!node["lengths"]) r.fail("passkey.lengths (the prompts' characters) is required");
  grid.lengths = r.positive_integers(node["lengths"], "passkey.lengths");
  for (auto l : grid.lengths)
    if (l < passkey_minimum_length(grid.digits))
      r.fail("passkey.lengths: " + std::to_string(l) + " is below the " +
             std::to_string(passkey_minimum_length(grid.digits)) + " characters of the key sentence and the question");
  if (node["depths"]) grid.depths = r.depths(node["depths"], "passkey.depths");
  if (node["documents"]) grid.documents = r.positive_integer(node["documents"], "passkey.documents");
  if (grid.lengths.empty() || grid.depths.empty()) r.fail("passkey: lengths and depths need values");
  return grid;
}

void read_retrieval(const Reader& r, const YAML::Node& node, TestEvaluations& asked) {
  if (!node.IsMap()) r.fail("retrieval must map tasks, lengths, depths, documents and corpus");
  r.expect_keys(node, "retrieval", {"tasks", "lengths", "depths", "documents", "corpus"});
  auto& grid = asked.retrieval_grid;
  grid.corpus = "data/corpora/sotu/test.txt", grid.seed = 1000;
  if (!node["tasks"] || !node["lengths"]) r.fail("retrieval: tasks and lengths are required");
  asked.retrieval_tasks = r.scalars(node["tasks"], "retrieval.tasks");
  grid.lengths = r.positive_integers(node["lengths"], "retrieval.lengths");
  if (node["depths"]) grid.depths = r.depths(node["depths"], "retrieval.depths");
  if (node["documents"]) grid.documents = r.positive_integer(node["documents"], "retrieval.documents");
  if (node["corpus"]) grid.corpus = r.scalars(node["corpus"], "retrieval.corpus").front();
  for (const auto& name : asked.retrieval_tasks) {
    RetrievalOptions sized;
    try {
      sized.task = parse_retrieval_task(name);
    } catch (const std::invalid_argument& e) {
      r.fail(std::string("retrieval.tasks: ") + e.what());
    }
    for (auto l : grid.lengths)
      if (l < retrieval_minimum_length(sized))
        r.fail("retrieval.lengths: " + std::to_string(l) + " is below the " +
               std::to_string(retrieval_minimum_length(sized)) + " characters " + name +
               "'s needles and question take");
    if (sized.task != RetrievalTask::mqar && !std::filesystem::exists(grid.corpus))
      r.fail("retrieval.corpus: " + grid.corpus + " not found (paths are from the working directory)");
  }
}

/// The test evaluations the file asks for: eval_*, passkey and retrieval.
void read_evaluations(const Reader& r, const YAML::Node& root, TestEvaluations& asked) {
  if (root["eval_contexts"]) asked.contexts = r.positive_integers(root["eval_contexts"], "eval_contexts");
  if (root["eval_strides"]) asked.strides = r.positive_integers(root["eval_strides"], "eval_strides");
  if (root["eval_tokens"]) asked.tokens = r.positive_integer(root["eval_tokens"], "eval_tokens");
  if (root["eval_context_gain"])
    asked.gain_windows = r.positive_integers(root["eval_context_gain"], "eval_context_gain");
  if (root["eval_window_sinks"]) {
    asked.window_sinks = r.integers(root["eval_window_sinks"], "eval_window_sinks");
    for (auto v : asked.window_sinks)
      if (v < 0) r.fail("eval_window_sinks: " + std::to_string(v) + " must be >= 0 (attention sinks)");
  }
  if (root["passkey"]) asked.passkey = read_passkey(r, root["passkey"], asked.passkey_per_seed);
  if (root["retrieval"]) read_retrieval(r, root["retrieval"], asked);
  if (root["eval_scaling"]) asked.scalings = r.scalars(root["eval_scaling"], "eval_scaling");
  for (const auto& s : asked.scalings) {
    RopeScalingType type = RopeScalingType::none;
    try {
      type = parse_rope_scaling_type(s);
    } catch (const std::exception&) {
      r.fail("eval_scaling: " + s + " is not a RoPE scaling (linear, ntk, dynamic_ntk, yarn)");
    }
    if (type == RopeScalingType::none) r.fail("eval_scaling: none is the plain evaluation; list scalings only");
  }
  if (root["eval_scaling_factors"]) {
    asked.scaling_factors = r.values<double>(root["eval_scaling_factors"], "eval_scaling_factors");
    for (auto f : asked.scaling_factors)
      if (!(f > 1)) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", f);
        r.fail("eval_scaling_factors: " + std::string(text) + " must exceed 1 (a factor of 1 is the plain evaluation)");
      }
    const bool fixed = std::any_of(asked.scalings.begin(), asked.scalings.end(),
                                   [](const std::string& s) { return s != "dynamic_ntk"; });
    if (!fixed) r.fail("eval_scaling_factors needs a static scaling in eval_scaling (linear, ntk or yarn)");
  }
}

/// The pairs the tests compare (baseline, pairs), named as the tables name `variants`.
void read_comparisons(const Reader& r, const YAML::Node& root, const std::vector<Variant>& variants,
                      ExperimentSpec& spec) {
  auto variant_named = [&](const YAML::Node& node, const std::string& key) {
    if (!node.IsScalar()) r.fail(key + " must name one variant");
    const auto name = node.Scalar();
    std::string names;
    for (const auto& v : variants) {
      if (v.name == name) return name;
      names += (names.empty() ? "" : ", ") + (v.name.empty() ? std::string("(base)") : v.name);
    }
    r.fail(key + ": " + name + " is not a variant of the experiment (" + names + ")");
  };
  if (root["baseline"]) spec.baseline = variant_named(root["baseline"], "baseline");
  if (const auto node = root["pairs"]) {
    if (!node.IsSequence()) r.fail("pairs must list pairs of variants, [[A, B], ...]");
    for (const auto& pair : node) {
      if (!pair.IsSequence() || pair.size() != 2) r.fail("pairs: each entry must be [VARIANT, BASELINE]");
      spec.pairs.emplace_back(variant_named(pair[0], "pairs"), variant_named(pair[1], "pairs"));
    }
  }
}

/// "EXPERIMENT: variant NAME does not read KEY=VALUE (...); ...": one line for a variant.
std::string unread_warning(const ExperimentSpec& spec, const Variant& variant, const std::vector<UnreadKey>& unread) {
  std::string line =
      spec.path + ": variant " + (variant.name.empty() ? std::string("(base)") : variant.name) + " does not read";
  std::vector<std::string> origins;
  for (size_t i = 0; i < unread.size(); ++i) {
    line += (i == 0 ? " " : ", ") + unread[i].key;
    if (std::find(origins.begin(), origins.end(), unread[i].origin) == origins.end())
      origins.push_back(unread[i].origin);
  }
  line += ", set by";
  for (size_t i = 0; i < origins.size(); ++i) line += (i == 0 ? " " : ", ") + origins[i];
  return line;
}

/// Every variant, fine-tunes included, loads and validates, and its task offers every
/// evaluation asked, before any run starts.
void check_variants(const Reader& r, ExperimentSpec& spec, const std::vector<Variant>& variants) {
  const auto& asked = spec.evaluations;
  for (const auto& variant : variants) {
    try {
      std::vector<UnreadKey> unread;
      const auto config = variant_config(spec, variant, spec.seeds.front(), &unread);
      if (!unread.empty()) spec.warnings.push_back(unread_warning(spec, variant, unread));
      if (config.data.test().empty()) r.fail("data.test is not set (every run is evaluated on the test split)");
      // each key asks for a protocol the run's task must offer
      const auto& task = task_traits(config.task);
      for (const auto& [key, protocol, asked_for] : std::vector<std::tuple<const char*, ProtocolKind, bool>>{
               {"eval_contexts", ProtocolKind::window_perplexity, !asked.contexts.empty()},
               {"eval_strides", ProtocolKind::window_perplexity, !asked.strides.empty()},
               {"eval_scaling", ProtocolKind::window_perplexity, !asked.scalings.empty()},
               {"eval_scaling_factors", ProtocolKind::window_perplexity, !asked.scaling_factors.empty()},
               {"eval_window_sinks", ProtocolKind::window_perplexity, !asked.window_sinks.empty()},
               {"eval_context_gain", ProtocolKind::context_gain, !asked.gain_windows.empty()},
               {"eval_tokens", ProtocolKind::window_perplexity, asked.tokens > 0},
               {"passkey", ProtocolKind::passkey, asked.passkey.has_value()},
               {"retrieval", ProtocolKind::retrieval, !asked.retrieval_tasks.empty()}})
        if (asked_for && !task.offers(protocol)) r.fail(std::string(key) + " applies to language models (task lm)");
      const auto longest = asked.contexts.empty() ? config.data.context()
                                                  : *std::max_element(asked.contexts.begin(), asked.contexts.end());
      for (auto w : asked.gain_windows)
        if (w >= longest)
          r.fail("eval_context_gain: " + std::to_string(w) + " is not below any evaluation context (the longest is " +
                 std::to_string(longest) + ")");
    } catch (const ConfigError& e) {
      if (std::string(e.what()).rfind(r.path() + ":", 0) == 0) throw;
      r.fail("variant " + (variant.name.empty() ? std::string("(base)") : variant.name) + ": " + e.what());
    }
  }
}

}  // namespace

ExperimentSpec load_experiment(const std::string& path) {
  const Reader r(path, "experiment file");
  const auto& root = r.root();
  ExperimentSpec spec;
  spec.path = path;
  r.expect_keys(root, "",
                {"base", "set", "grid", "seeds", "eval_contexts", "eval_strides", "eval_scaling",
                 "eval_scaling_factors", "eval_window_sinks", "eval_context_gain", "eval_tokens", "passkey",
                 "retrieval", "finetune", "baseline", "pairs"});
  if (!root["base"]) r.fail("base (the config file(s) every variant starts from) is required");
  spec.base = r.scalars(root["base"], "base");
  for (const auto& file : spec.base)
    if (!std::filesystem::exists(file)) r.fail("base: " + file + " not found (paths are from the working directory)");
  if (root["set"]) spec.set = r.scalars(root["set"], "set");
  if (root["grid"]) spec.grid = r.grid(root["grid"], "grid", spec.labels);
  if (root["finetune"]) spec.finetune.push_back(read_finetune(r, root["finetune"], spec.labels));
  if (root["seeds"]) spec.seeds = r.integers(root["seeds"], "seeds");
  if (spec.seeds.empty()) r.fail("seeds has no values");
  read_evaluations(r, root, spec.evaluations);
  if (!spec.finetune.empty()) {
    std::string names;
    bool found = false;
    for (const auto& v : expand_grid(spec)) {
      found = found || v.name == spec.finetune[0].from;
      names += (names.empty() ? "" : ", ") + v.name;
    }
    if (!found) r.fail("finetune.from: " + spec.finetune[0].from + " is not a variant of the grid (" + names + ")");
  }
  auto variants = expand_grid(spec);
  for (auto& v : finetune_variants(spec)) variants.push_back(std::move(v));
  read_comparisons(r, root, variants, spec);
  check_variants(r, spec, variants);
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
        if (const auto it = spec.labels.find(key + "=" + value); it != spec.labels.end())
          v.label += (v.label.empty() ? "" : " ") + it->second;
        next.push_back(std::move(v));
      }
    out = std::move(next);
  }
  return out;
}

ExperimentSpec with_seeds(const ExperimentSpec& spec, const std::vector<int64_t>& seeds) {
  auto fail = [&](const std::string& what) { throw ConfigError(spec.path + ": " + what); };
  auto listed = [&] {
    std::string out;
    for (auto s : spec.seeds) out += (out.empty() ? "" : ", ") + std::to_string(s);
    return out;
  };
  if (seeds.empty()) fail("no seeds selected");
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (std::find(spec.seeds.begin(), spec.seeds.end(), seeds[i]) == spec.seeds.end())
      fail("seed " + std::to_string(seeds[i]) + " is not among its seeds (" + listed() + ")");
    if (std::find(seeds.begin(), seeds.begin() + static_cast<std::ptrdiff_t>(i), seeds[i]) !=
        seeds.begin() + static_cast<std::ptrdiff_t>(i))
      fail("seed " + std::to_string(seeds[i]) + " selected twice");
  }
  auto out = spec;
  out.seeds = seeds;
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
  points.labels = spec.labels;
  std::vector<Variant> out;
  for (auto& point : expand_grid(points)) {
    Variant v;
    v.overrides = from;
    v.overrides.insert(v.overrides.end(), f.set.begin(), f.set.end());
    v.overrides.insert(v.overrides.end(), point.overrides.begin(), point.overrides.end());
    v.name = "finetune" + (point.name.empty() ? std::string() : ":" + point.name);
    v.label = point.label.empty() ? "" : "ft " + point.label;
    out.push_back(std::move(v));
  }
  return out;
}

Config variant_config(const ExperimentSpec& spec, const Variant& variant, int64_t seed,
                      std::vector<UnreadKey>* unread) {
  ConfigSources sources;
  sources.unread = unread;
  sources.files = spec.base;
  sources.overrides = spec.set;
  sources.overrides.insert(sources.overrides.end(), variant.overrides.begin(), variant.overrides.end());
  sources.overrides.push_back("train.seed=" + std::to_string(seed));
  sources.training = true;  // a variant's runs are trained
  return load_config(sources);
}

}  // namespace ropelab
