// ropelab train
#include "commands.h"

#include "ropelab/config/config.h"
#include "ropelab/train/run.h"
#include "ropelab/train/trainer.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>

namespace ropelab::apps {

void RuntimeFlags::add_to(CLI::App& app) {
  app.add_option("--device", device, "cpu | cuda | cuda:N");
  app.add_option("--threads", threads, "intra-op threads, 0 = all cores")->check(nonnegative());
}

void RuntimeFlags::append_overrides(std::vector<std::string>& overrides) const {
  if (!device.empty()) overrides.push_back("train.device=" + device);
  if (threads >= 0) overrides.push_back("train.threads=" + std::to_string(threads));
}

namespace {

/// A TCP port free on loopback right now (the kernel's choice).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0)
    throw std::runtime_error(std::string("--nproc: cannot find a free port: ") + std::strerror(errno));
  ::close(fd);
  return ntohs(addr.sin_port);
}

volatile std::sig_atomic_t g_forward_signal = 0;
extern "C" void on_launcher_signal(int signal) { g_forward_signal = signal; }

/// `ropelab train --nproc N`: runs this command line again as N workers with the torchrun
/// variables set (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
/// MASTER_PORT), forwards SIGINT/SIGTERM to them and waits for all. Returns the first
/// non-zero exit status (a worker that fails makes the others fail within the timeout).
int launch_workers(int64_t nproc) {
  std::vector<std::string> args;
  const auto& line = command_line();
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == "--nproc") {
      ++i;
      continue;
    }
    if (line[i].rfind("--nproc=", 0) == 0) continue;
    args.push_back(line[i]);
  }
  const std::string port = std::to_string(free_port());
  std::vector<pid_t> workers;
  for (int64_t rank = 0; rank < nproc; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("--nproc: fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::_Exit(127);
    }
    workers.push_back(pid);
  }
  std::cout << "launched " << nproc << " workers (MASTER_PORT " << port << "):";
  for (auto pid : workers) std::cout << ' ' << pid;
  std::cout << std::endl;
  auto old_int = std::signal(SIGINT, on_launcher_signal);
  auto old_term = std::signal(SIGTERM, on_launcher_signal);
  int exit_code = 0;
  size_t running = workers.size();
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno != EINTR) break;
      if (g_forward_signal)
        for (auto w : workers) ::kill(w, g_forward_signal);
      g_forward_signal = 0;
      continue;
    }
    --running;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && exit_code == 0) exit_code = code;
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return exit_code;
}

}  // namespace

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
      if (const int code = launch_workers(a->nproc)) {
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
