#include "ropelab/config/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "ropelab/config/run_overrides.h"
#include "ropelab/config/schema.h"
#include "ropelab/config/unread_keys.h"
#include "ropelab/config/validate.h"
#include "ropelab/config/yaml_merge.h"
#include "ropelab/config/yaml_values.h"
#include "ropelab/position/context_defaults.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/run/ownership.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

using schema::describe;
using yaml_merge::origin_of;
using yaml_merge::Origins;
using yaml_values::type_name;

std::string join_key(const std::vector<std::string>& path, const std::string& name) {
  std::string key;
  for (const auto& p : path) key += p + ".";
  return key + name;
}

/// Reads the merged tree into a Config; records every key the schema knows.
class Reader {
 public:
  Reader(YAML::Node root, const Origins& origins) : root_(std::move(root)), origins_(origins) {}

  template <typename T>
  void operator()(const std::string& name, T& value) {
    const auto key = join_key(path_, name);
    known_.insert(key);
    auto node = lookup(key);
    if (!node) return;
    if (node.IsNull()) {  // `key:` or `--set key=`: empty for strings, a mistake otherwise
      if constexpr (std::is_same_v<T, std::string>) {
        value.clear();
        return;
      }
      fail(key, " has no value (expected " + std::string(type_name<T>()) + ")");
    }
    if (!node.IsScalar()) fail(key, " expected " + std::string(type_name<T>()) + ", got a list or mapping");
    const auto read = yaml_values::as<T>(node);
    if (!read) fail(key, "=" + node.Scalar() + " is not " + type_name<T>());
    value = *read;
  }

  template <typename E>
  void choice(const std::string& name, E& value, E (*parse)(const std::string&)) {
    std::string spelling;
    (*this)(name, spelling);
    if (spelling.empty()) return;
    try {
      value = parse(spelling);
    } catch (const c10::Error& e) {
      fail(join_key(path_, name), std::string(": ") + e.what_without_backtrace());
    }
  }

  template <typename F>
  void run_may_change(F&& body) {
    body();
  }
  template <typename F>
  void section(const std::string& name, F&& body) {
    const auto key = join_key(path_, name);
    known_.insert(key);
    if (auto node = lookup(key); node && !node.IsMap()) fail(key, " must be a mapping of keys");
    path_.push_back(name);
    body();
    path_.pop_back();
  }

  /// Every key in the tree must be one the schema visited.
  void reject_unknown() const { walk(root_, ""); }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ConfigError(origin_of(origins_, key) + ": " + key + message);
  }

 private:
  YAML::Node lookup(const std::string& key) const { return yaml_merge::find_key(root_, key); }

  void walk(const YAML::Node& node, const std::string& prefix) const {
    for (const auto& entry : node) {
      const auto key = prefix + entry.first.Scalar();
      if (!known_.count(key)) {
        std::vector<std::string> siblings;  // the keys of the same section
        for (const auto& k : known_)
          if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos)
            siblings.push_back(k.substr(prefix.size()));
        const auto meant = yaml_values::closest(entry.first.Scalar(), siblings);
        const auto best = meant.empty() ? meant : prefix + meant;
        throw ConfigError(origin_of(origins_, key) + ": unknown key " + key +
                          (best.empty() ? "" : " (did you mean " + best + "?)"));
      }
      if (entry.second.IsMap()) walk(entry.second, key + ".");
    }
  }

  YAML::Node root_;
  const Origins& origins_;
  std::vector<std::string> path_;
  std::set<std::string> known_;
};

/// Emits the whole Config as YAML.
class Writer {
 public:
  explicit Writer(YAML::Emitter& out) : out_(out) {}
  template <typename T>
  void operator()(const std::string& name, T& value) {
    out_ << YAML::Key << name << YAML::Value << value;
  }
  /// The shortest text that reads back as the same double (0.1, not 0.10000000000000001).
  void operator()(const std::string& name, double& value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    std::string shown(text, end);
    if (shown.find_first_of(".en") == std::string::npos) shown += ".0";  // stays a float in YAML
    out_ << YAML::Key << name << YAML::Value << shown;
  }
  template <typename E>
  void choice(const std::string& name, E& value, E (*)(const std::string&)) {
    out_ << YAML::Key << name << YAML::Value << to_string(value);
  }
  template <typename F>
  void run_may_change(F&& body) {
    body();
  }
  template <typename F>
  void section(const std::string& name, F&& body) {
    out_ << YAML::Key << name << YAML::Value << YAML::BeginMap;
    body();
    out_ << YAML::EndMap;
  }

 private:
  YAML::Emitter& out_;
};

// A trained run's config.yaml holds every key the program that wrote it knew. A key added
// since then changed what its absence means: the run was trained (and is evaluated) with the
// behaviour from before the key, not with today's default. These are the keys whose default
// differs from that behaviour, with the run's own type (or scaling) that they act on.
struct SavedRunDefault {
  const char* key;       // under model.encoder_position / model.decoder_position
  const char* value;     // the behaviour before the key existed
  const char* on_key;    // where the key has an effect: this key of the same stack ...
  const char* on_value;  // ... has this value
};
const SavedRunDefault kSavedRunDefaults[] = {
    {"t5_init_std", "1", "type", "t5_bias"},
    {"kerple_bound", "clamp", "type", "kerple"},
    {"kerple_bound", "clamp", "type", "kerple_power"},
    {"scaling.ramp", "continuous", "scaling.type", "yarn"},
    {"scaling.dynamic", "call", "scaling.type", "dynamic_ntk"},
};

/// Whether `file` is a trained run's config.yaml (or a record of one).
bool run_config_file(const std::string& file) {
  const auto path = fs::path(file);
  const auto state = path.filename() == "config.yaml" ? run_state(path.parent_path().string()) : RunState::none;
  return state == RunState::trained || state == RunState::record;
}

/// Whether ropelab wrote `file` (it starts with kConfigHeader); ConfigError if it then lacks
/// the line kConfigFooter, as a partial copy does (lines added after it are an edit).
bool written_by_ropelab(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line) || line != kConfigHeader) return false;
  while (std::getline(in, line))
    if (line == kConfigFooter) return true;
  throw ConfigError(file + ": incomplete: written by ropelab, but the line '" + kConfigFooter +
                    "' that ends it is missing (a partial copy?)");
}

// Fills the keys a trained run's config.yaml predates with the behaviour it was trained
// with; any other file is left as written.
void fill_saved_run_defaults(const std::string& file, const YAML::Node& root) {
  if (!run_config_file(file)) return;
  for (const char* stack : {"model.encoder_position", "model.decoder_position"}) {
    const auto position = yaml_merge::find_key(root, stack);
    for (const auto& saved : kSavedRunDefaults) {
      const auto acts_on = yaml_merge::find_key(position, saved.on_key);
      if (!acts_on || !acts_on.IsScalar() || acts_on.Scalar() != saved.on_value) continue;
      const std::string key = saved.key;
      const auto dot = key.rfind('.');
      auto parent = dot == std::string::npos ? position : yaml_merge::find_key(position, key.substr(0, dot));
      if (parent.IsMap() && !yaml_merge::find_key(position, key)) parent[key.substr(dot + 1)] = saved.value;
    }
  }
}

}  // namespace

Config load_config(const ConfigSources& sources) {
  using namespace yaml_merge;
  YAML::Node root(YAML::NodeType::Map);
  Origins origins;
  std::set<std::string> ropelab_written;  // files that hold every key
  for (const auto& file : sources.files) {
    auto node = load_file(file);
    if (written_by_ropelab(file) || run_config_file(file)) ropelab_written.insert(file);
    fill_saved_run_defaults(file, node);
    merge_into(root, node, "", file, origins);
  }
  expand_position_shorthand(root, origins);  // a file's shorthand; its per-stack keys win
  for (const auto& assignment : sources.overrides) merge_override(root, assignment, origins);

  Config config;
  const auto stacks = {&config.model.encoder_position(), &config.model.decoder_position()};
  for (auto* p : stacks) unset_length_settings(*p);
  Reader reader(root, origins);
  describe(reader, config);
  reader.reject_unknown();
  // Settings measured in tokens follow a language model's training context, data.context
  // (position/context_defaults.h); scaling that needs the training context takes it too.
  const int64_t context = task_traits(config.task).windowed ? config.data.context() : 0;
  for (auto* p : stacks) {
    resolve_length_settings(*p, context);
    if (p->scaling().original_max() == 0) p->scaling().original_max(context);
  }
  const ConfigFail fail = [&](const std::string& key, const std::string& what) { reader.fail(key, what); };
  validate_config(config, fail);
  if (sources.training) validate_training(config, fail);
  // after validation, whose messages say more where a setting is also invalid
  for (const auto& unread : unread_keys(config, root, origins, ropelab_written)) {
    if (!sources.unread) throw ConfigError(unread.message);
    sources.unread->push_back(unread);
  }
  return config;
}

std::string dump_config(const Config& config) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap;
  Writer writer(out);
  Config copy = config;
  describe(writer, copy);
  out << YAML::EndMap;
  return std::string(kConfigHeader) + "\n" + out.c_str() + "\n" + kConfigFooter + "\n";
}

const ConfigFiles& yaml_config_files() {
  static const ConfigFiles files{[](const std::vector<std::string>& paths, const std::vector<std::string>& overrides) {
                                   return load_config({paths, overrides});
                                 },
                                 [](const Config& config) { return dump_config(config); }, &run_override_error};
  return files;
}

}  // namespace ropelab
