#include "ropelab/util/subprocess.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ropelab {

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& what, const std::string& output, bool append) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  for (auto& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  int fd = -1;
  if (!output.empty()) {
    fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0) throw std::runtime_error(what + ": cannot open " + output + ": " + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(what + ": fork failed: " + std::strerror(error));
  }
  if (pid == 0) {
    if (fd >= 0 && (::dup2(fd, STDOUT_FILENO) < 0 || ::dup2(fd, STDERR_FILENO) < 0)) std::_Exit(127);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(pointers[0], pointers.data());
    std::_Exit(127);
  }
  if (fd >= 0) ::close(fd);
  return pid;
}

ChildExit wait_any(const std::string& what, const std::function<void()>& on_interrupt) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid >= 0) return {pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
    if (errno != EINTR)
      throw std::runtime_error(what + ": waiting for child processes failed: " + std::strerror(errno));
    if (on_interrupt) on_interrupt();
  }
}

}  // namespace ropelab
