#include "ropelab/util/subprocess.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace ropelab {

namespace {
// Read and written by the handler and by any thread: lock-free atomics, not volatile.
std::atomic<int> g_first_signal{0}, g_pending_signal{0};
std::atomic<bool> g_forwarder_lives{false};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may use only lock-free atomics");
extern "C" void on_forwarded_signal(int signal) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, signal);
  g_pending_signal = signal;
}
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
  // SIGINT and SIGTERM held back over the fork: the child sets a caught one to its default
  // action before it lets them in, so one sent before its exec ends it rather than reaching
  // the handler it inherited (which would only set a flag in its copy of our memory).
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int stop : {SIGINT, SIGTERM}) {  // as the exec will: a caught signal to its default, an ignored one kept
      struct sigaction now;
      if (::sigaction(stop, nullptr, &now) == 0 && now.sa_handler != SIG_IGN) ::signal(stop, SIG_DFL);
    }
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (fd >= 0 && (::dup2(fd, STDOUT_FILENO) < 0 || ::dup2(fd, STDERR_FILENO) < 0)) std::_Exit(127);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(pointers[0], pointers.data());
    std::_Exit(127);
  }
  const int error = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (fd >= 0) ::close(fd);
  if (pid < 0) throw std::runtime_error(what + ": fork failed: " + std::strerror(error));
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
  if (g_forwarder_lives.exchange(true)) throw std::logic_error("SignalForwarder: one lives already");
  g_first_signal = g_pending_signal = 0;
  struct sigaction caught {};
  caught.sa_handler = on_forwarded_signal;
  sigemptyset(&caught.sa_mask);
  caught.sa_flags = SA_RESTART;  // a write to stdout is not cut short; the wait's sleep still is
  ::sigaction(SIGINT, &caught, &old_int_);
  ::sigaction(SIGTERM, &caught, &old_term_);
}

SignalForwarder::~SignalForwarder() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  g_forwarder_lives = false;
}

void SignalForwarder::forward(const std::vector<pid_t>& children) {
  if (const int signal = g_pending_signal.exchange(0))
    for (auto child : children) ::kill(child, signal);
}

int SignalForwarder::received() const { return g_first_signal; }

}  // namespace ropelab
