// Flags shared by several subcommands.
#include <iostream>

#include "commands.h"
#include "ropelab/util/device.h"
#include "ropelab/util/threads.h"

namespace ropelab::apps {

void RuntimeFlags::add_to(CLI::App& app) {
  app.add_option("--device", device, "cpu | cuda | cuda:N");
  app.add_option("--threads", threads, "intra-op threads, 0 = all cores")->check(nonnegative());
}

void RuntimeFlags::append_overrides(std::vector<std::string>& overrides) const {
  if (!device.empty()) overrides.push_back("train.device=" + device);
  if (threads >= 0) overrides.push_back("train.threads=" + std::to_string(threads));
}

torch::Device RuntimeFlags::apply() const {
  set_threads(threads < 0 ? 0 : threads);
  return use_device(device_or("cpu"));
}

void BenchFlags::add_to(CLI::App& app, const char* json_help) {
  RuntimeFlags::add_to(app);
  app.add_flag("--json", json, json_help);
}

bool BenchFlags::json_line(const nlohmann::ordered_json& row) const {
  if (json) std::cout << row.dump() << std::endl;
  return json;
}

}  // namespace ropelab::apps
