#include "ropelab/train/launcher.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <stdexcept>

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

volatile std::sig_atomic_t g_forward_signal = 0;
extern "C" void on_launcher_signal(int signal) { g_forward_signal = signal; }
}  // namespace

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
  // Without SA_RESTART (which std::signal sets): the signal interrupts waitpid, so it is
  // forwarded at once instead of after the workers end on their own.
  struct sigaction forward {
  }, old_int{}, old_term{};
  forward.sa_handler = on_launcher_signal;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = 0;
  ::sigaction(SIGINT, &forward, &old_int);
  ::sigaction(SIGTERM, &forward, &old_term);
  int exit_code = 0;
  for (size_t running = workers.size(); running > 0; --running) {
    const auto child = wait_any("--nproc", [&] {
      if (g_forward_signal)
        for (auto w : workers) ::kill(w, g_forward_signal);
      g_forward_signal = 0;
    });
    if (child.code != 0 && exit_code == 0) exit_code = child.code;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return exit_code;
}

}  // namespace ropelab
