#include "ropelab/run/ownership.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <utility>

#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/run.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

std::string lock_path(const std::string& dir) { return (fs::path(dir) / ".lock").string(); }

/// Descriptor `fd` is open on the file now at `path`.
bool is_file_at(int fd, const std::string& path) {
  struct stat open_file {
  }, at_path{};
  return fd >= 0 && ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &at_path) == 0 &&
         open_file.st_dev == at_path.st_dev && open_file.st_ino == at_path.st_ino;
}

}  // namespace

RunLock RunLock::acquire(const std::string& dir, const std::string& holder) {
  const auto path = lock_path(dir);
  RunLock lock;
  // A holder that created DIR removes DIR/.lock when it gives the lock up unused (release).
  // Whoever opened that file before it went would lock a file no longer at PATH while the
  // next comer creates and locks a new one: two holders. So the lock counts only when the
  // locked file is still PATH's; otherwise it is taken again.
  bool created = false;
  for (;;) {
    std::error_code ec;
    created = fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error(dir + ": cannot create the run directory: " + ec.message());
    lock.release();
    lock.dir_ = dir;
    lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock.fd_ < 0) throw std::runtime_error(path + ": cannot open the run's lock file: " + std::strerror(errno));
    if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) throw std::runtime_error(path + ": cannot lock: " + std::strerror(errno));
      std::ifstream in(path);
      std::string pid, command;
      in >> pid;
      std::getline(in >> std::ws, command);
      throw std::runtime_error(dir + ": in use by another process (PID " + (pid.empty() ? "unknown" : pid) +
                               (command.empty() ? "" : ": " + command) +
                               "); wait for it to end, or choose another directory");
    }
    if (is_file_at(lock.fd_, path)) break;
  }
  // Only a lock held may remove what it created: a refused acquire (above) or a lost race
  // leaves DIR to the holder.
  lock.created_ = created;
  // Ours now: say who holds it, for whoever is refused next.
  const std::string text = std::to_string(::getpid()) + " " + holder + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 || ::pwrite(lock.fd_, text.data(), text.size(), 0) < 0)
    throw std::runtime_error(path + ": cannot write the lock holder: " + std::strerror(errno));
  return lock;
}

RunLock RunLock::inherit(const std::string& dir, int fd) {
  const auto path = lock_path(dir);
  if (!is_file_at(fd, path))
    throw std::runtime_error(std::string(kRunLockFdVariable) + "=" + std::to_string(fd) + " is not the lock of " + dir);
  // The launcher's open file description already holds the lock: this succeeds at once. It
  // fails only if the descriptor is another open of the file while someone else holds it.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw std::runtime_error(path + ": the inherited descriptor is not the lock holder's: " + std::strerror(errno));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  RunLock lock;
  lock.fd_ = fd;
  return lock;
}

RunLock::RunLock(RunLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), dir_(std::move(other.dir_)), created_(std::exchange(other.created_, false)) {}

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    dir_ = std::move(other.dir_);
    created_ = std::exchange(other.created_, false);
  }
  return *this;
}

void RunLock::release() {
  if (fd_ < 0) return;
  if (created_) {  // still ours while the lock is held: no other writer can have added a file
    std::error_code ec;
    bool only_lock = true;
    for (const auto& entry : fs::directory_iterator(dir_, ec))
      if (entry.path().filename() != ".lock") only_lock = false;
    if (!ec && only_lock && fs::remove(lock_path(dir_), ec)) fs::remove(dir_, ec);  // fails harmlessly if not empty
  }
  ::close(fd_);
  fd_ = -1;
}

RunLock::~RunLock() { release(); }

int RunLock::share_with_children() {
  if (fd_ < 0 || ::fcntl(fd_, F_SETFD, 0) != 0) throw std::runtime_error("run lock: cannot share with the workers");
  created_ = false;
  return fd_;
}

RunState run_state(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / "config.yaml", ec)) return RunState::none;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("checkpoint_", 0) == 0 && entry.path().extension() == ".pt") return RunState::trained;
  }
  if (fs::exists(RunPaths(dir).trained, ec) || fs::exists(AblationLayout::done(dir), ec)) return RunState::record;
  return RunState::unfinished;
}

std::string move_run_aside(const std::string& dir, const std::string& suffix) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  auto base = fs::path(dir).lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (!suffix.empty() && base.size() > suffix.size() &&
      base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0)
    base.resize(base.size() - suffix.size());
  std::string target = base + ".old-" + stamp + suffix;
  for (int n = 2; fs::exists(target); ++n) target = base + ".old-" + stamp + "-" + std::to_string(n) + suffix;
  std::error_code ec;
  fs::rename(dir, target, ec);
  if (ec) throw std::runtime_error(dir + ": cannot move the old run aside to " + target + ": " + ec.message());
  return target;
}

RunPlan plan_run(const std::string& dir, RunRequest request, bool same_config) {
  const auto state = run_state(dir);
  // its evaluations are a finished run's results: training into it would mix two runs
  if (state == RunState::record && request != RunRequest::overwrite)
    throw RunDirRefused(dir +
                        ": a finished run without its checkpoints (a run record): nothing to continue; train it "
                        "again with --overwrite (the record is moved to " +
                        dir + ".old-TIMESTAMP), or choose another -o");
  RunPlan plan;
  switch (request) {
    case RunRequest::resume:
      if (state == RunState::none)
        throw RunDirRefused(dir + ": no run to resume (no config.yaml); start one with: ropelab train CONFIG -o " +
                            dir);
      plan.resume = state == RunState::trained;
      if (!plan.resume)
        plan.message =
            dir + ": no checkpoint yet (the run stopped before its first save): starting it again from step 0";
      return plan;
    case RunRequest::overwrite:
      if (state != RunState::none) {
        plan.moved_to = move_run_aside(dir);
        plan.message = dir + ": the previous run was moved to " + plan.moved_to;
      }
      return plan;
    case RunRequest::start:
      if (state == RunState::unfinished)
        plan.message = dir + ": reusing a run directory without checkpoints (a run that stopped before its first save)";
      if (state != RunState::trained) return plan;
      if (!same_config)
        throw RunDirRefused(dir +
                            " holds a trained run of another config: continue it with --resume, start again with "
                            "--overwrite (the old run is moved to " +
                            dir + ".old-TIMESTAMP), or choose another -o");
      plan.resume = true;
      plan.message = dir + " holds a run of this same config: continuing it (--overwrite starts again)";
      return plan;
  }
  throw std::logic_error("unhandled RunRequest");
}

}  // namespace ropelab
