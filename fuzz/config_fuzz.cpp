// libFuzzer target: the YAML config loader (files and --set overrides). A config is
// accepted, and then its dump loads back to the same config, or rejected with a
// ConfigError naming the file in one line; any other exception or a crash is a finding.
#include "fuzz_util.h"
#include "ropelab/config/config.h"

using namespace ropelab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto path = fuzz::write_input("config.yaml", text);
  try {
    const auto config = load_config({{path}, {}});
    const auto dumped = dump_config(config);
    const auto again = load_config({{fuzz::write_input("dump.yaml", dumped)}, {}});
    fuzz::check(dump_config(again) == dumped, "dump_config round trip");
  } catch (const ConfigError& e) {
    fuzz::expect_one_line_naming(e.what(), path);
  }
  // the same bytes as a --set override: rejected naming "--set", or accepted
  try {
    load_config({{}, {text}});
  } catch (const ConfigError& e) {
    fuzz::check(std::string(e.what()).find('\n') == std::string::npos, "one-line --set error");
  }
  return 0;
}
