#include "ropelab/attention/settings.h"

namespace ropelab {

namespace {
bool performer(const AttentionOptions& a) { return a.type() == AttentionType::performer; }
bool softmax(const AttentionOptions& a) { return a.type() == AttentionType::softmax; }
bool windowed(const AttentionOptions& a) { return softmax(a) && (a.window() > 0 || !a.layer_windows().empty()); }
}  // namespace

const std::vector<AttentionSetting>& attention_settings() {
  static const std::vector<AttentionSetting> settings = {
      {"num_features", performer, "type: performer"},
      {"redraw_every", performer, "type: performer"},
      {"chunk_size", performer, "type: performer"},
      {"kernel", softmax, "type: softmax"},
      {"layer_windows", softmax, "type: softmax"},
      {"window_positions", windowed, "type: softmax with a window (window > 0 or layer_windows)"},
  };
  return settings;
}

}  // namespace ropelab
