// ropelab train
#include "commands.h"

#include "ropelab/config/config.h"
#include "ropelab/train/run.h"
#include "ropelab/train/trainer.h"

#include <iostream>
#include <memory>

namespace ropelab::apps {

void RuntimeFlags::add_to(CLI::App& app) {
  app.add_option("--device", device, "cpu | cuda | cuda:N");
  app.add_option("--threads", threads, "intra-op threads, 0 = all cores")->check(CLI::NonNegativeNumber);
}

void RuntimeFlags::append_overrides(std::vector<std::string>& overrides) const {
  if (!device.empty()) overrides.push_back("train.device=" + device);
  if (threads >= 0) overrides.push_back("train.threads=" + std::to_string(threads));
}

void add_train(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("train", "train a model from YAML configs");
  struct Args {
    RuntimeFlags flags;
    ConfigSources sources;
    std::string run_dir = "runs/run";
    bool resume = false, dump = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->sources.files, "YAML config file(s); later files win")->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", a->sources.files, "further YAML config files")->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sources.overrides, "override a key: --set model.d_model=256 (repeatable)");
  cmd->add_option("-o,--run-dir", a->run_dir, "run directory for checkpoints, tokenizer, logs")->capture_default_str();
  cmd->add_flag("--resume", a->resume, "continue the run in --run-dir from its last checkpoint");
  cmd->add_flag("--dump-config", a->dump, "print the merged config as YAML and exit");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    auto sources = a->sources;
    if (a->resume) {  // the run's own config, then any overrides given now
      sources.files = {RunPaths(a->run_dir).config};
    } else if (sources.files.empty()) {
      throw CLI::ValidationError("train", "a config file is required (ropelab train CONFIG.yaml)");
    }
    a->flags.append_overrides(sources.overrides);
    const auto config = load_config(sources);
    if (a->dump) {
      std::cout << dump_config(config);
      return;
    }
    train(config, a->run_dir, a->resume);
  });
}

}  // namespace ropelab::apps
