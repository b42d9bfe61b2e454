// Flags shared by several subcommands.
#include "commands.h"

namespace ropelab::apps {

void RuntimeFlags::add_to(CLI::App& app) {
  app.add_option("--device", device, "cpu | cuda | cuda:N");
  app.add_option("--threads", threads, "intra-op threads, 0 = all cores")->check(nonnegative());
}

void RuntimeFlags::append_overrides(std::vector<std::string>& overrides) const {
  if (!device.empty()) overrides.push_back("train.device=" + device);
  if (threads >= 0) overrides.push_back("train.threads=" + std::to_string(threads));
}

}  // namespace ropelab::apps
