#pragma once
/// Child processes: start one (fork + exec) and wait for any of them. Used by the
/// data-parallel launcher (`ropelab train --nproc`) and by `ropelab ablate`.

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ropelab {

/// Starts `argv[0]` (a path) with arguments `argv` and, on top of this process's
/// environment, the variables `env`. With an `output` file, the child's stdout and stderr
/// go to it (appended, or replacing it without `append`). Throws naming `what` when fork
/// fails or `output` cannot be opened; a child that cannot exec exits with 127.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& what, const std::string& output = "", bool append = true);

/// A child that ended: its exit status, or 128 + the signal that killed it.
struct ChildExit {
  pid_t pid = -1;
  int code = 0;
};

/// Waits until any child ends. A wait interrupted by a signal calls `on_interrupt` (when
/// given) and waits again. Throws naming `what` when no child can be waited for.
ChildExit wait_any(const std::string& what, const std::function<void()>& on_interrupt = {});

}  // namespace ropelab
