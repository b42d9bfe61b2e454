#include "ropelab/util/subprocess.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace ropelab {

namespace {
volatile std::sig_atomic_t g_first_signal = 0, g_pending_signal = 0;
extern "C" void on_forwarded_signal(int signal) {
  if (!g_first_signal) g_first_signal = signal;
  g_pending_signal = signal;
}
struct sigaction g_old_int, g_old_term;  // the handlers before a SignalForwarder
}  // namespace

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

ChildExit wait_any(const std::string& what, const std::function<void()>& on_wait) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, on_wait ? WNOHANG : 0);
    if (pid > 0) return {pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
    if (pid < 0 && errno != EINTR)
      throw std::runtime_error(what + ": waiting for child processes failed: " + std::strerror(errno));
    if (!on_wait) continue;
    on_wait();
    if (pid == 0) {
      const timespec period{0, 50'000'000};
      ::nanosleep(&period, nullptr);  // a signal ends it early
    }
  }
}

SignalForwarder::SignalForwarder() {
  g_first_signal = g_pending_signal = 0;
  struct sigaction caught {};
  caught.sa_handler = on_forwarded_signal;
  sigemptyset(&caught.sa_mask);
  caught.sa_flags = 0;  // no SA_RESTART: the wait's sleep ends at once
  ::sigaction(SIGINT, &caught, &g_old_int);
  ::sigaction(SIGTERM, &caught, &g_old_term);
}

SignalForwarder::~SignalForwarder() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

void SignalForwarder::forward(const std::vector<pid_t>& children) {
  const int signal = g_pending_signal;
  if (!signal) return;
  g_pending_signal = 0;
  for (auto child : children) ::kill(child, signal);
}

int SignalForwarder::received() const { return g_first_signal; }

}  // namespace ropelab
