// ropelab train
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "ropelab/config/config.h"
#include "ropelab/report/run_plots.h"
#include "ropelab/run/run.h"
#include "ropelab/train/launcher.h"
#include "ropelab/train/trainer.h"

namespace ropelab::apps {

namespace {

/// The config sources of a `train` command line (files, -c files, --init-from's run config
/// and checkpoint, the runtime flags' overrides), and where unread keys go.
struct TrainSources {
  ConfigSources sources;
  std::vector<std::string> more;  // -c files, after the positional ones
  std::string init_from;
  bool allow_unread = false;
  std::vector<UnreadKey> unread;

  ConfigSources gathered(const RuntimeFlags& flags) {
    auto out = sources;
    out.files.insert(out.files.end(), more.begin(), more.end());
    if (!init_from.empty()) {  // the initial run's config unless files are given; init_from set last
      if (out.files.empty()) {
        const auto dir = std::filesystem::is_directory(init_from)
                             ? init_from
                             : std::filesystem::path(init_from).parent_path().string();
        out.files = {RunPaths(dir.empty() ? "." : dir).config};
      }
      out.overrides.push_back("train.init_from=" + init_from);
    }
    flags.append_overrides(out.overrides);
    if (allow_unread) out.unread = &unread;
    return out;
  }
  /// Names on stderr the keys left unread since the last call.
  void warn() {
    for (const auto& key : unread) std::cerr << "warning: " << key.message << std::endl;
    unread.clear();
  }
};

}  // namespace

void add_train(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("train", "train a model from YAML configs");
  struct Args {
    RuntimeFlags flags;
    TrainSources in;
    std::string run_dir = "runs/run";
    bool resume = false, overwrite = false, dump = false;
    int64_t nproc = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("CONFIG", a->in.sources.files, "YAML config file(s); later files win")->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", a->in.more, "further YAML config files, applied after CONFIG (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->in.sources.overrides, "override a key: --set model.d_model=256 (repeatable)");
  cmd->add_option("-o,--run-dir", a->run_dir, "run directory for checkpoints, tokenizer, logs")->capture_default_str();
  cmd->add_flag("--resume", a->resume, "continue the run in --run-dir from its last checkpoint");
  cmd->add_flag("--dump-config", a->dump, "print the merged config as YAML and exit");
  cmd->add_option("--init-from", a->in.init_from,
                  "fine-tune: start from RUN's best checkpoint (or a checkpoint file) and tokenizer; without a "
                  "config file, RUN's config is the base (change it with --set, e.g. data.context)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--nproc", a->nproc,
                  "data-parallel: start N local workers (torchrun-style; Gloo on CPU, NCCL on CUDA)")
      ->check(positive());
  cmd->add_flag("--overwrite", a->overwrite,
                "start again in a --run-dir that holds a run, moving the old run aside to RUN.old-TIMESTAMP");
  cmd->add_flag("--allow-unread", a->in.allow_unread,
                "keys the chosen encoder, scaling or attention backend does not read are named on stderr, not "
                "refused (ablate passes it: a grid sets keys that some variants do not read)");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    if (a->resume && a->overwrite) throw CLI::ValidationError("train", "--resume and --overwrite exclude each other");
    if (a->resume && !a->in.init_from.empty())
      throw CLI::ValidationError("train", "--resume continues a run; --init-from starts a new one from another");
    // --resume reads the run's own config, then any overrides given now
    auto sources = a->in.gathered(a->flags);
    if (!a->resume && sources.files.empty())
      throw CLI::ValidationError("train", "a config file is required (ropelab train CONFIG.yaml)");
    auto load = [&] {
      if (a->resume) sources.files = {RunPaths(a->run_dir).config};
      sources.training = true;
      auto config = load_config(sources);
      a->in.warn();
      return config;
    };
    if (a->dump) {
      std::cout << dump_config(load());
      return;
    }
    if (run_train_command({a->run_dir, command_line(), a->resume, a->overwrite, a->nproc}, load, yaml_config_files()))
      write_run_loss_curve(a->run_dir);  // by the one process that owns the directory
  });
}

}  // namespace ropelab::apps
