#pragma once
/// Who may write a run directory, and what `train` does with one that holds a run.
///
/// A training process (and every worker of a data-parallel run, which inherit the
/// launcher's descriptor) holds an exclusive `flock` on RUN/.lock for as long as it lives
/// (and `ablate` holds one on its output directory, OUT/.lock, the same way);
/// the kernel releases it when the process dies, so a killed run never leaves a stale lock.
/// Readers (eval, translate, average, generate) take no lock: checkpoints are renamed into
/// place, so a reader sees the old or the new file, never a torn one.

#include <stdexcept>
#include <string>

namespace ropelab {

/// A refusal the user resolves by choosing another flag or directory (exit 2).
class RunDirRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An exclusive lock on DIR/.lock, held until destruction (or the process's end).
class RunLock {
 public:
  /// Creates DIR if needed and locks it for this process; `holder` (the command line) is
  /// written into the lock file for whoever is refused. Throws naming DIR and the holder's
  /// PID and command when another process holds it. Released with DIR still empty but for
  /// the lock, a DIR it created is removed again; a lock file removed so between this
  /// open and this lock is not taken for DIR's (the lock is taken again).
  static RunLock acquire(const std::string& dir, const std::string& holder);
  /// A lock a parent process took and passed down as descriptor `fd` (checked to be DIR's).
  static RunLock inherit(const std::string& dir, int fd);
  RunLock() = default;
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();
  bool held() const { return fd_ >= 0; }
  /// Lets child processes inherit the lock: clears close-on-exec and returns the descriptor.
  /// Shared, the directory is no longer this lock's to remove (a child may still hold it).
  int share_with_children();

 private:
  /// Gives the lock up. When `acquire` created DIR and DIR still holds nothing but its lock
  /// file, removes both: a command refused before it wrote anything (a config error, a
  /// device it cannot use) leaves no empty run directory. A directory that existed is kept.
  void release();

  int fd_ = -1;
  std::string dir_;       // set by acquire
  bool created_ = false;  // acquire created dir_
};

/// The environment variable that hands a launcher's lock descriptor to its workers.
inline constexpr const char* kRunLockFdVariable = "ROPELAB_RUN_LOCK_FD";

/// What a run directory holds.
enum class RunState {
  none,        // no config.yaml: nothing of a run (or a directory that is not one)
  unfinished,  // a config but no checkpoint: a run stopped before its first save
  trained,     // at least one checkpoint
  record,      // finished (RUN/trained or ablation.done) without its checkpoints: a packed run record
};
RunState run_state(const std::string& dir);

/// What the user asked `train -o DIR` to do.
enum class RunRequest { start, resume, overwrite };

/// The decision for `train -o DIR`, taken while holding DIR's lock.
struct RunPlan {
  bool resume = false;   // load checkpoint_last.pt and continue
  std::string message;   // what was decided, for the log ("" when there is nothing to say)
  std::string moved_to;  // --overwrite: where the old run went
};

/// Decides what `train` does with DIR. `same_config`: this invocation's config is the one
/// the run there was started with (run_started_with). A trained run is continued when asked
/// (--resume) or when the config is the same; with another config it is refused
/// (RunDirRefused) unless --overwrite, which moves it aside to DIR.old-YYYYMMDD-HHMMSS. An
/// unfinished run starts again from step 0, saying so. --resume without a run is refused.
RunPlan plan_run(const std::string& dir, RunRequest request, bool same_config);

/// Moves DIR to a free name DIR.old-YYYYMMDD-HHMMSS[-N] and returns it. With a `suffix`
/// that DIR ends with (a run's log, RUN.log), the stamp goes before it: RUN.old-...log.
std::string move_run_aside(const std::string& dir, const std::string& suffix = "");

}  // namespace ropelab
