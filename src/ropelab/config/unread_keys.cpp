#include "ropelab/config/unread_keys.h"

#include "ropelab/attention/settings.h"
#include "ropelab/position/unused_settings.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {

namespace {

/// The scalar text of `node`, or a short form of a list or mapping.
std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  return node.IsSequence() ? "[...]" : "{...}";
}

}  // namespace

std::vector<UnreadKey> unread_keys(const Config& config, const YAML::Node& root, const yaml_merge::Origins& origins,
                                   const std::set<std::string>& ropelab_written) {
  std::vector<UnreadKey> out;
  auto check = [&](const std::string& key, bool read, const std::string& chosen, const std::string& readers) {
    if (read) return;
    const auto node = yaml_merge::find_key(root, key);
    if (!node) return;
    const auto origin = yaml_merge::origin_of(origins, key);
    if (ropelab_written.count(origin)) return;
    out.push_back(
        {key, origin,
         origin + ": " + key + "=" + shown(node) + " is not read (" + chosen + "); it applies to " + readers});
  };
  // a decoder-only task builds one stack, the decoder's
  std::vector<std::pair<std::string, const PositionOptions*>> stacks;
  if (task_traits(config.task).encoder_decoder)
    stacks.emplace_back("model.encoder_position", &config.model.encoder_position());
  stacks.emplace_back("model.decoder_position", &config.model.decoder_position());
  for (const auto& [section, p] : stacks) {
    const auto chosen = section + ".type=" + to_string(p->type()) + ", scaling.type=" + to_string(p->scaling().type()) +
                        (p->cope() ? ", cope" : "");
    for (const auto& setting : position_settings())
      check(section + "." + setting.key, setting.read_by(*p), chosen, setting.readers());
  }
  const auto& attention = config.model.attention();
  const auto chosen =
      "model.attention.type=" + to_string(attention.type()) + ", window=" + std::to_string(attention.window());
  for (const auto& setting : attention_settings())
    check("model.attention." + std::string(setting.key), setting.read_by(attention), chosen, setting.readers);
  return out;
}

}  // namespace ropelab
