#pragma once
/// `ropelab train --nproc N`: local data-parallel workers, torchrun-style.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ropelab {

/// Runs `argv` (argv[0] a path) as N workers with the torchrun variables set (RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT a free
/// loopback port), forwards SIGINT/SIGTERM to them and waits for all. Returns the first
/// non-zero exit status (a worker that fails makes the others fail within the timeout).
/// `env` adds variables of the caller's (the run lock's descriptor).
int launch_workers(const std::vector<std::string>& argv, int64_t nproc,
                   const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace ropelab
