#pragma once
/// Child processes: start one (fork + exec), wait for any of them, and pass SIGINT and
/// SIGTERM on to them. Used by the data-parallel launcher (`ropelab train --nproc`) and by
/// `ropelab ablate`.

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ropelab {

/// Starts `argv[0]` (a path) with arguments `argv` and, on top of this process's
/// environment, the variables `env`. With an `output` file, the child's stdout and stderr
/// go to it (appended, or replacing it without `append`). Throws naming `what` when fork
/// fails or `output` cannot be opened; a child that cannot exec exits with 127. A SIGINT or
/// SIGTERM that this process catches is at its default action in the child from the fork
/// on (an ignored one stays ignored, as across exec): one sent to the child before its exec
/// (by a SignalForwarder, say) ends it instead of reaching a handler the exec discards.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& what, const std::string& output = "", bool append = true);

/// A child that ended: its exit status, or 128 + the signal that killed it.
struct ChildExit {
  pid_t pid = -1;
  int code = 0;
};

/// Waits until any child ends. With `on_wait`, it calls it every 50 ms meanwhile and at
/// once when a signal interrupts the wait (a signal caught by another thread of the process
/// interrupts nothing: the period bounds the delay). Throws naming `what` when no child can
/// be waited for.
ChildExit wait_any(const std::string& what, const std::function<void()>& on_wait = {});

/// SIGINT and SIGTERM caught for the object's lifetime, to be passed on to child processes
/// (the previous handlers restored after): wait_any's `on_wait` calls `forward`. One at a
/// time (a second while one lives throws).
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;
  /// Sends each signal caught since the last call to every child in `children`: children
  /// not yet waited for (a pid waited for may belong to another process by now).
  void forward(const std::vector<pid_t>& children);
  /// The first signal caught (SIGINT or SIGTERM), 0 while none.
  int received() const;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace ropelab
