// ropelab train
#include <cstdlib>
#include <iostream>
#include <memory>

#include "commands.h"
#include "ropelab/config/config.h"
#include "ropelab/run/run.h"
#include "ropelab/train/launcher.h"
#include "ropelab/train/trainer.h"

namespace ropelab::apps {

void add_train(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("train", "train a model from YAML configs");
  struct Args {
    RuntimeFlags flags;
    ConfigSources sources;
    std::vector<std::string> more;  // -c files, after the positional ones
    std::string run_dir = "runs/run";
    bool resume = false, dump = false;
    int64_t nproc = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->sources.files, "YAML config file(s); later files win")->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", a->more, "further YAML config files, applied after CONFIG (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sources.overrides, "override a key: --set model.d_model=256 (repeatable)");
  cmd->add_option("-o,--run-dir", a->run_dir, "run directory for checkpoints, tokenizer, logs")->capture_default_str();
  cmd->add_flag("--resume", a->resume, "continue the run in --run-dir from its last checkpoint");
  cmd->add_flag("--dump-config", a->dump, "print the merged config as YAML and exit");
  cmd->add_option("--nproc", a->nproc,
                  "data-parallel: start N local workers (torchrun-style; Gloo on CPU, NCCL on CUDA)")
      ->check(positive());
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    if (a->nproc > 1 && !a->dump && !std::getenv("RANK")) {
      std::vector<std::string> argv{"/proc/self/exe"};  // this command line again, without --nproc
      const auto& line = command_line();
      for (size_t i = 1; i < line.size(); ++i) {
        if (line[i] == "--nproc")
          ++i;
        else if (line[i].rfind("--nproc=", 0) != 0)
          argv.push_back(line[i]);
      }
      if (const int code = launch_workers(argv, a->nproc)) {
        throw std::runtime_error("train --nproc " + std::to_string(a->nproc) + ": a worker exited with status " +
                                 std::to_string(code));
      }
      return;
    }
    auto sources = a->sources;
    sources.files.insert(sources.files.end(), a->more.begin(), a->more.end());
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
