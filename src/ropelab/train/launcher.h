#pragma once
/// `ropelab train` once its flags are parsed: the run directory taken (lock, decision) and
/// training in this process or in N local data-parallel workers, torchrun-style.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ropelab/options/config.h"

namespace ropelab {

/// What `ropelab train` was asked.
struct TrainInvocation {
  std::string run_dir;
  std::vector<std::string> command_line;  // argv: the lock's holder line, and the workers' command
  bool resume = false, overwrite = false;
  int64_t nproc = 1;
};

/// Takes the run directory (RunLock, plan_run: continue, start, refuse or move aside), then
/// trains here or launches `nproc` workers that share the lock and are told whether to
/// resume. `load` gives the effective config (with --resume, the run's own); `files` reads
/// and writes the run's config.yaml. A worker of
/// another launcher (RANK set) leaves the directory to rank 0, which then never continues
/// a run by itself: its workers could not learn that it did. Returns whether this process
/// owns the directory's files (the single process, the launcher, rank 0 of another
/// launcher), so that one process alone writes what follows the training.
bool run_train_command(const TrainInvocation& invocation, const std::function<Config()>& load,
                       const ConfigFiles& files);

/// Runs `argv` (argv[0] a path) as N workers with the torchrun variables set (RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT a free
/// loopback port), forwards SIGINT/SIGTERM to them and waits for all. Returns the first
/// non-zero exit status (a worker that fails makes the others fail within the timeout).
/// `env` adds variables of the caller's (the run lock's descriptor).
int launch_workers(const std::vector<std::string>& argv, int64_t nproc,
                   const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace ropelab
