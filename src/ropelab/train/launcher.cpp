#include "ropelab/train/launcher.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "ropelab/run/ownership.h"
#include "ropelab/run/run.h"
#include "ropelab/train/trainer.h"
#include "ropelab/util/subprocess.h"

namespace ropelab {

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

/// Refuses a fine-tune (train.init_from) whose source is the run directory it trains into,
/// or a file inside it: the run would start by moving its own parameters aside
/// (--overwrite) or be taken for a run to continue.
void refuse_init_from_itself(const std::string& init_from, const std::string& run_dir) {
  if (init_from.empty()) return;
  namespace fs = std::filesystem;
  std::error_code source_error, dir_error;
  const auto source = fs::weakly_canonical(init_from, source_error), dir = fs::weakly_canonical(run_dir, dir_error);
  if (source_error || dir_error) return;                 // the training that follows names what it cannot read
  const auto relative = source.lexically_relative(dir);  // ".", "a/b" inside; "../x" outside
  if (!relative.empty() && *relative.begin() != "..")
    throw ConfigError("train.init_from: " + init_from + " is in the run directory -o " + run_dir +
                      " trains into; fine-tune into another directory (-o)");
}

}  // namespace

bool run_train_command(const TrainInvocation& in, const std::function<Config()>& load, const ConfigFiles& files) {
  const bool launcher = in.nproc > 1 && !std::getenv("RANK");
  const char* inherited = std::getenv(kRunLockFdVariable);
  const char* rank = std::getenv("RANK");
  std::string holder;  // the command line, named to a second writer
  for (const auto& word : in.command_line) holder += (holder.empty() ? "" : " ") + word;
  RunLock lock;
  RunPlan plan;
  std::optional<Config> config;
  if (inherited) {  // a worker of `--nproc`: the launcher holds the lock and has decided
    lock = RunLock::inherit(in.run_dir, std::atoi(inherited));
    plan.resume = in.resume;
  } else if (rank && std::atoi(rank) != 0) {  // another launcher's worker: rank 0 owns the directory
    plan.resume = in.resume && std::filesystem::exists(RunPaths(in.run_dir).resume_from());
  } else {
    const auto request = in.resume ? RunRequest::resume : in.overwrite ? RunRequest::overwrite : RunRequest::start;
    if (request == RunRequest::resume && !std::filesystem::is_directory(in.run_dir))
      plan_run(in.run_dir, request, false);  // refuses (nothing to resume) without creating the directory
    lock = RunLock::acquire(in.run_dir, holder);
    // Workers of another launcher cannot learn rank 0's decision: they continue only when told.
    const bool may_continue = !rank;
    if (request == RunRequest::resume) plan = plan_run(in.run_dir, request, false);
    config = load();
    if (request != RunRequest::resume) {
      refuse_init_from_itself(config->train.init_from(), in.run_dir);
      plan = plan_run(in.run_dir, request, may_continue && run_started_with(in.run_dir, *config, files));
    }
    if (!plan.moved_to.empty()) lock = RunLock::acquire(in.run_dir, holder);
    if (!plan.message.empty()) std::cout << plan.message << std::endl;
  }
  if (launcher) {  // this command line again for each worker, without --nproc, deciding --resume
    std::vector<std::string> argv{"/proc/self/exe"};
    const auto& line = in.command_line;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == "--nproc")
        ++i;
      else if (line[i].rfind("--nproc=", 0) != 0 && line[i] != "--resume" && line[i] != "--overwrite")
        argv.push_back(line[i]);
    }
    if (plan.resume) argv.push_back("--resume");
    if (!plan.resume && in.resume) argv.insert(argv.end(), {"-c", RunPaths(in.run_dir).config});
    const auto fd = std::to_string(lock.share_with_children());
    if (const int code = launch_workers(argv, in.nproc, {{kRunLockFdVariable, fd}})) {
      throw std::runtime_error("train --nproc " + std::to_string(in.nproc) + ": a worker exited with status " +
                               std::to_string(code));
    }
    return true;
  }
  train(config ? *config : load(), files, in.run_dir, plan.resume);
  return !inherited && (!rank || std::atoi(rank) == 0);
}

int launch_workers(const std::vector<std::string>& argv, int64_t nproc,
                   const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string port = std::to_string(free_port());
  std::vector<pid_t> workers;
  for (int64_t rank = 0; rank < nproc; ++rank) {
    const auto r = std::to_string(rank), n = std::to_string(nproc);
    std::vector<std::pair<std::string, std::string>> variables{{"RANK", r},
                                                               {"LOCAL_RANK", r},
                                                               {"WORLD_SIZE", n},
                                                               {"LOCAL_WORLD_SIZE", n},
                                                               {"MASTER_ADDR", "127.0.0.1"},
                                                               {"MASTER_PORT", port}};
    variables.insert(variables.end(), env.begin(), env.end());
    workers.push_back(spawn(argv, variables, "--nproc"));
  }
  std::cout << "launched " << nproc << " workers (MASTER_PORT " << port << "):";
  for (auto pid : workers) std::cout << ' ' << pid;
  std::cout << std::endl;
  SignalForwarder signals;  // Ctrl-C or SIGTERM reaches every worker, which saves and stops
  int exit_code = 0;
  while (!workers.empty()) {
    const auto child = wait_any("--nproc", [&] { signals.forward(workers); });
    workers.erase(std::remove(workers.begin(), workers.end(), child.pid), workers.end());
    if (child.code != 0 && exit_code == 0) exit_code = child.code;
  }
  return exit_code;
}

}  // namespace ropelab
