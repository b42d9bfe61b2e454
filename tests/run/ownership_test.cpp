// Run-directory ownership: the lock, what `train` decides for each state, space checks.
#include "ropelab/run/ownership.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <utility>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

using Ownership = ropelab::testing::TempDir;  // a fresh directory per test

namespace {
/// Makes DIR look like a run: a config, and a checkpoint when `trained`.
void make_run(const std::filesystem::path& dir, bool trained) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "task: lm\n";
  if (trained) std::ofstream(dir / "checkpoint_last.pt") << "weights";
}

/// Run once by the next flock(2) of this program, before it: a test's way to act between an
/// open of RUN/.lock and its lock.
std::function<void()> before_flock;
}  // namespace

/// flock(2) for this test program (the library's calls link to it): the libc call, after
/// before_flock when one is set.
extern "C" int flock(int fd, int operation) {
  static const auto libc_flock = reinterpret_cast<int (*)(int, int)>(::dlsym(RTLD_NEXT, "flock"));
  if (before_flock) std::exchange(before_flock, nullptr)();
  return libc_flock(fd, operation);
}

namespace {
/// Whether RUN/.lock is locked, as another process would find it: a separate open of the file
/// (a new open file description) cannot take the lock.
bool locked(const std::string& run) {
  const int fd = ::open((run + "/.lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return busy;
}
}  // namespace

// A second lock on the same directory is refused, naming the holder; released, it is free.
TEST_F(Ownership, TheLockIsExclusiveAndNamesItsHolder) {
  const auto run = (dir_ / "run").string();
  auto first = std::make_unique<RunLock>(RunLock::acquire(run, "ropelab train a.yaml -o run"));
  EXPECT_TRUE(first->held());
  EXPECT_TRUE(locked(run));
  // flock belongs to an open file description: a second open in this process conflicts too
  const auto message = error_of([&] { RunLock::acquire(run, "ropelab train b.yaml -o run"); });
  EXPECT_NE(message.find(run + ": in use by another process (PID " + std::to_string(::getpid()) +
                         ": ropelab train a.yaml -o run)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  first.reset();
  EXPECT_FALSE(locked(run));
  const auto second = RunLock::acquire(run, "ropelab train b.yaml -o run");
  EXPECT_TRUE(second.held());
  EXPECT_TRUE(locked(run));
}

// A lock released unused removes the directory its acquire created, and nothing else: a
// directory that existed, or one the holder wrote into, stays.
TEST_F(Ownership, AnUnusedNewRunDirectoryIsRemoved) {
  namespace fs = std::filesystem;
  const auto fresh = (dir_ / "fresh").string();
  auto lock = std::make_unique<RunLock>(RunLock::acquire(fresh, "ropelab train a.yaml -o fresh"));
  ASSERT_TRUE(fs::is_directory(fresh));
  auto moved = std::make_unique<RunLock>(std::move(*lock));  // the directory goes with the lock
  lock.reset();
  EXPECT_TRUE(fs::is_directory(fresh));
  EXPECT_TRUE(locked(fresh));
  moved.reset();
  EXPECT_FALSE(fs::exists(fresh));

  const auto existing = (dir_ / "existing").string();
  fs::create_directories(existing);
  RunLock::acquire(existing, "ropelab train a.yaml -o existing");  // released at once
  EXPECT_TRUE(fs::is_directory(existing));
  EXPECT_FALSE(locked(existing));

  const auto written = (dir_ / "written").string();
  {
    const auto used = RunLock::acquire(written, "ropelab train a.yaml -o written");
    std::ofstream(written + "/config.yaml") << "task: lm\n";
  }
  EXPECT_TRUE(fs::exists(written + "/config.yaml"));
  EXPECT_FALSE(locked(written));
}

// A holder that gives up the lock of a directory it created removes RUN/.lock. One that
// opened that file just before it went must not count the removed file's lock as RUN's: the
// next comer has made and locked a new RUN/.lock by then. The hook acts out that order
// between acquire's open and its flock.
TEST_F(Ownership, ALockOnARemovedLockFileIsNotTheRunsLock) {
  const auto run = (dir_ / "run").string();
  auto first = std::make_unique<RunLock>(RunLock::acquire(run, "first"));
  std::unique_ptr<RunLock> next;
  before_flock = [&] {
    first.reset();  // created RUN, wrote nothing: removes RUN/.lock and RUN
    ASSERT_FALSE(std::filesystem::exists(run));
    next = std::make_unique<RunLock>(RunLock::acquire(run, "next"));
  };
  const auto message = error_of([&] { RunLock::acquire(run, "late"); });
  EXPECT_NE(message.find("in use by another process"), std::string::npos) << message;
  EXPECT_NE(message.find(": next"), std::string::npos) << message;
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->held());
  EXPECT_TRUE(locked(run));
}

// An acquire refused because another took the lock between its open and its flock leaves
// the directory to that holder, though the refused one created it.
TEST_F(Ownership, ARefusedAcquireRemovesNothing) {
  const auto run = (dir_ / "run").string();
  std::unique_ptr<RunLock> first;
  before_flock = [&] {  // RUN and RUN/.lock made by the acquire below, not yet locked
    first = std::make_unique<RunLock>(RunLock::acquire(run, "first"));
  };
  const auto message = error_of([&] { RunLock::acquire(run, "second"); });
  EXPECT_NE(message.find(": first"), std::string::npos) << message;
  EXPECT_TRUE(locked(run));
  EXPECT_TRUE(first && first->held());
}

// The kernel releases the lock of a killed holder: no stale lock survives a SIGKILL.
TEST_F(Ownership, AKilledHolderLeavesNoStaleLock) {
  const auto run = (dir_ / "run").string();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = RunLock::acquire(run, "child");
    const char ok = 1;
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  EXPECT_NE(error_of([&] { RunLock::acquire(run, "parent"); }).find("PID " + std::to_string(child) + ": child"),
            std::string::npos);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(locked(run));
  EXPECT_TRUE(RunLock::acquire(run, "parent").held());
  ::close(ready[0]), ::close(ready[1]);
}

// Workers inherit the launcher's lock through a descriptor, checked to be the run's.
TEST_F(Ownership, AnInheritedLockMustBeTheRunsOwn) {
  const auto run = (dir_ / "run").string(), other = (dir_ / "other").string();
  auto lock = RunLock::acquire(run, "launcher");
  const int fd = lock.share_with_children();
  auto other_lock = RunLock::acquire(other, "someone");
  const int copy = ::dup(fd);  // not taken over by a refused inherit: closed here
  EXPECT_NE(error_of([&] { RunLock::inherit(other, copy); }).find("is not the lock of " + other), std::string::npos);
  ::close(copy);
  EXPECT_TRUE(RunLock::inherit(run, ::dup(fd)).held());  // the same open file description: already ours
  // the inherited descriptor alone keeps the run locked once the launcher's is closed
  auto inherited = RunLock::inherit(run, ::dup(fd));
  lock = RunLock();
  EXPECT_TRUE(locked(run));
  inherited = RunLock();
  EXPECT_FALSE(locked(run));
}

TEST_F(Ownership, RunStates) {
  EXPECT_EQ(run_state((dir_ / "missing").string()), RunState::none);
  std::filesystem::create_directories(dir_ / "stray");
  std::ofstream(dir_ / "stray" / "spm_input.txt.tmp") << "half";
  EXPECT_EQ(run_state((dir_ / "stray").string()), RunState::none);
  make_run(dir_ / "half", false);
  std::filesystem::create_directories(dir_ / "half" / "data");
  EXPECT_EQ(run_state((dir_ / "half").string()), RunState::unfinished);
  make_run(dir_ / "done", true);
  EXPECT_EQ(run_state((dir_ / "done").string()), RunState::trained);
  // a run record (scripts/run_records.sh): finished, its checkpoints left out
  make_run(dir_ / "record", false);
  std::ofstream(dir_ / "record" / "trained") << "step 2000\n";
  EXPECT_EQ(run_state((dir_ / "record").string()), RunState::record);
  make_run(dir_ / "evaluated", false);
  std::ofstream(dir_ / "evaluated" / "ablation.done") << "";
  EXPECT_EQ(run_state((dir_ / "evaluated").string()), RunState::record);
}

// What `train -o DIR` does, for every request and state.
TEST_F(Ownership, PlansForEveryRequestAndState) {
  const auto none = (dir_ / "none").string(), half = (dir_ / "half").string(), done = (dir_ / "done").string();
  make_run(half, false);
  make_run(done, true);

  auto p = plan_run(none, RunRequest::start, false);
  EXPECT_FALSE(p.resume);
  EXPECT_EQ(p.message, "");
  p = plan_run(half, RunRequest::start, false);
  EXPECT_FALSE(p.resume);
  EXPECT_NE(p.message.find("reusing a run directory without checkpoints"), std::string::npos) << p.message;
  p = plan_run(done, RunRequest::start, true);  // the same config: continued, as fairseq does
  EXPECT_TRUE(p.resume);
  EXPECT_NE(p.message.find("holds a run of this same config: continuing it"), std::string::npos) << p.message;
  try {
    plan_run(done, RunRequest::start, false);
    ADD_FAILURE() << "another config over a trained run was not refused";
  } catch (const RunDirRefused& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(done + " holds a trained run of another config"), std::string::npos) << m;
    EXPECT_NE(m.find("--resume"), std::string::npos) << m;
    EXPECT_NE(m.find("--overwrite"), std::string::npos) << m;
  }

  EXPECT_THROW(plan_run(none, RunRequest::resume, false), RunDirRefused);
  p = plan_run(half, RunRequest::resume, false);
  EXPECT_FALSE(p.resume);
  EXPECT_NE(p.message.find("starting it again from step 0"), std::string::npos) << p.message;
  EXPECT_TRUE(plan_run(done, RunRequest::resume, false).resume);

  EXPECT_EQ(plan_run(none, RunRequest::overwrite, false).moved_to, "");
  p = plan_run(done, RunRequest::overwrite, false);
  EXPECT_FALSE(p.resume);
  EXPECT_EQ(p.moved_to.rfind(done + ".old-", 0), 0u) << p.moved_to;
  EXPECT_FALSE(std::filesystem::exists(done));
  EXPECT_TRUE(std::filesystem::exists(p.moved_to + "/checkpoint_last.pt"));  // kept, not deleted

  // a run record is refused but for --overwrite, which moves it aside
  const auto record = (dir_ / "record").string();
  make_run(record, false);
  std::ofstream(record + "/trained") << "step 2000\n";
  for (const auto request : {RunRequest::start, RunRequest::resume})
    for (const bool same : {true, false}) {
      try {
        plan_run(record, request, same);
        ADD_FAILURE() << "a run record was trained into";
      } catch (const RunDirRefused& e) {
        EXPECT_EQ(std::string(e.what()), record +
                                             ": a finished run without its checkpoints (a run record): nothing to "
                                             "continue; train it again with --overwrite (the record is moved to " +
                                             record + ".old-TIMESTAMP), or choose another -o");
      }
    }
  p = plan_run(record, RunRequest::overwrite, false);
  EXPECT_TRUE(std::filesystem::exists(p.moved_to + "/trained"));
}

// Two moves in one second take two names.
TEST_F(Ownership, MovingAsideNeverReplacesAnEarlierOldRun) {
  const auto run = (dir_ / "run").string();
  make_run(run, true);
  const auto first = move_run_aside(run);
  make_run(run, true);
  const auto second = move_run_aside(run + "/");
  EXPECT_NE(first, second);
  EXPECT_TRUE(std::filesystem::exists(first + "/checkpoint_last.pt"));
  EXPECT_TRUE(std::filesystem::exists(second + "/checkpoint_last.pt"));
}

// A run's log goes aside beside its run: RUN.log -> RUN.old-STAMP.log, a second in the same
// second RUN.old-STAMP-2.log; a path without the suffix keeps its whole name.
TEST_F(Ownership, ALogMovedAsideKeepsItsSuffixLast) {
  const auto log = (dir_ / "run.log").string();
  std::ofstream(log) << "first\n";
  const auto first = move_run_aside(log, ".log");
  std::ofstream(log) << "second\n";
  const auto second = move_run_aside(log, ".log");
  EXPECT_EQ(first.rfind((dir_ / "run.old-").string(), 0), 0u) << first;
  EXPECT_EQ(std::filesystem::path(first).extension(), ".log") << first;
  EXPECT_EQ(std::filesystem::path(second).extension(), ".log") << second;
  EXPECT_NE(first, second);
  EXPECT_EQ(ropelab::testing::read_text(first), "first\n");
  EXPECT_EQ(ropelab::testing::read_text(second), "second\n");
  const auto other = (dir_ / "notes").string();
  std::ofstream(other) << "x";
  EXPECT_EQ(move_run_aside(other, ".log").rfind((dir_ / "notes.old-").string(), 0), 0u);
}
