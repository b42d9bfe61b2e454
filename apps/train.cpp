// ropelab train
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "ropelab/config/config.h"
#include "ropelab/run/ownership.h"
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
    bool resume = false, overwrite = false, dump = false;
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
  cmd->add_flag("--overwrite", a->overwrite,
                "start again in a --run-dir that holds a run, moving the old run aside to RUN.old-TIMESTAMP");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    if (a->resume && a->overwrite) throw CLI::ValidationError("train", "--resume and --overwrite exclude each other");
    // --resume reads the run's own config, then any overrides given now
    auto sources = a->sources;
    sources.files.insert(sources.files.end(), a->more.begin(), a->more.end());
    if (!a->resume && sources.files.empty())
      throw CLI::ValidationError("train", "a config file is required (ropelab train CONFIG.yaml)");
    a->flags.append_overrides(sources.overrides);
    auto load = [&] {
      if (a->resume) sources.files = {RunPaths(a->run_dir).config};
      return load_config(sources);
    };
    if (a->dump) {
      std::cout << dump_config(load());
      return;
    }
    const bool launcher = a->nproc > 1 && !std::getenv("RANK");
    const char* inherited = std::getenv(kRunLockFdVariable);
    const char* rank = std::getenv("RANK");
    std::string holder;  // the command line, named to a second writer
    for (const auto& word : command_line()) holder += (holder.empty() ? "" : " ") + word;
    RunLock lock;
    RunPlan plan;
    std::optional<Config> config;
    if (inherited) {  // a worker of `--nproc`: the launcher holds the lock and has decided
      lock = RunLock::inherit(a->run_dir, std::atoi(inherited));
      plan.resume = a->resume;
    } else if (rank && std::atoi(rank) != 0) {  // another launcher's worker: rank 0 owns the directory
      plan.resume = a->resume && std::filesystem::exists(RunPaths(a->run_dir).last);
    } else {
      const auto request = a->resume ? RunRequest::resume : a->overwrite ? RunRequest::overwrite : RunRequest::start;
      if (request == RunRequest::resume && !std::filesystem::is_directory(a->run_dir))
        plan_run(a->run_dir, request, false);  // refuses (nothing to resume) without creating the directory
      lock = RunLock::acquire(a->run_dir, holder);
      // Workers of another launcher cannot learn rank 0's decision: they continue only when told.
      const bool may_continue = !rank;
      if (request == RunRequest::resume) plan = plan_run(a->run_dir, request, false);
      config = load();
      if (request != RunRequest::resume)
        plan = plan_run(a->run_dir, request, may_continue && run_started_with(a->run_dir, *config));
      if (!plan.moved_to.empty()) lock = RunLock::acquire(a->run_dir, holder);
      if (!plan.message.empty()) std::cout << plan.message << std::endl;
    }
    if (launcher) {  // this command line again for each worker, without --nproc, deciding --resume
      std::vector<std::string> argv{"/proc/self/exe"};
      const auto& line = command_line();
      for (size_t i = 1; i < line.size(); ++i) {
        if (line[i] == "--nproc")
          ++i;
        else if (line[i].rfind("--nproc=", 0) != 0 && line[i] != "--resume" && line[i] != "--overwrite")
          argv.push_back(line[i]);
      }
      if (plan.resume) argv.push_back("--resume");
      if (!plan.resume && a->resume) argv.insert(argv.end(), {"-c", RunPaths(a->run_dir).config});
      const auto fd = std::to_string(lock.share_with_children());
      if (const int code = launch_workers(argv, a->nproc, {{kRunLockFdVariable, fd}})) {
        throw std::runtime_error("train --nproc " + std::to_string(a->nproc) + ": a worker exited with status " +
                                 std::to_string(code));
      }
      return;
    }
    train(config ? *config : load(), a->run_dir, plan.resume);
  });
}

}  // namespace ropelab::apps
