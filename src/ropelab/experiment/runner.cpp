#include "ropelab/experiment/runner.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/ownership.h"
#include "ropelab/run/run.h"
#include "ropelab/util/clock.h"
#include "ropelab/util/subprocess.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

/// A job under way: which step runs now, and since when the job runs.
struct Running {
  size_t job = 0, step = 0;
  double began = 0;
};

pid_t start_step(const Job& job, size_t step, const std::string& executable) {
  std::vector<std::string> argv{executable};
  argv.insert(argv.end(), job.steps[step].begin(), job.steps[step].end());
  // A run started anew (train --overwrite) starts the log anew (the old run's log was moved
  // aside with it); a resumed training and a finished run's added evaluations append to it,
  // so that the log keeps every attempt.
  return spawn(argv, {}, "ablate", job.log, !(step == 0 && job.whole));
}

/// The time the `left` jobs take, `parallel` at a time, at the pace of the `whole` jobs that
/// did a run's whole work in `whole_seconds` (those that resumed or only evaluated finish
/// sooner and say little of the rest).
std::string eta(double whole_seconds, size_t whole, size_t left, int64_t parallel) {
  if (left == 0) return format_duration(0);
  if (whole == 0) return "unknown until a run trained from its start finishes";
  return format_duration(whole_seconds / static_cast<double>(whole) * static_cast<double>(left) /
                         static_cast<double>(parallel));
}

}  // namespace

JobsOutcome run_jobs(const std::vector<Job>& jobs, const std::string& executable, int64_t parallel, size_t skipped,
                     size_t total) {
  std::map<pid_t, Running> running;
  size_t next = 0, done = 0, whole = 0;  // whole: jobs finished that did a run's whole work
  JobsOutcome outcome;
  double whole_seconds = 0;  // their wall time
  SignalForwarder signals;
  auto under_way = [&] {
    std::vector<pid_t> pids;
    for (const auto& entry : running) pids.push_back(entry.first);
    return pids;
  };
  while ((next < jobs.size() && !signals.received()) || !running.empty()) {
    while (!signals.received() && next < jobs.size() && static_cast<int64_t>(running.size()) < parallel) {
      const auto& job = jobs[next];
      fs::create_directories(fs::path(job.dir).parent_path());
      std::error_code ec;
      if (job.whole && fs::file_size(job.log, ec) > 0 && !ec)  // the log of the run that train --overwrite moves
        std::cout << "ablate: the previous log of " << job.variant << " seed " << job.seed << " moved to "
                  << move_run_aside(job.log, ".log") << std::endl;
      running[start_step(job, 0, executable)] = {next, 0, now_seconds()};
      ++next;
      std::cout << "ablate: [" << (skipped + next) << "/" << total << "] start " << job.variant << " seed " << job.seed
                << " (log " << job.log << ")" << std::endl;
    }
    if (running.empty()) break;  // caught before any started
    const auto child = wait_any("ablate", [&] { signals.forward(under_way()); });
    const auto it = running.find(child.pid);
    if (it == running.end()) continue;
    const Running r = it->second;
    running.erase(it);
    const auto& job = jobs[r.job];
    bool ok = child.code == 0;
    if (ok && r.step == 0 && job.trains && !fs::exists(RunPaths(job.dir).trained)) {
      std::ofstream(job.log, std::ios::app)
          << "ablate: the training stopped before its end; run ablate again to resume it\n";
      ok = false;
    }
    const bool more = r.step + 1 < job.steps.size();
    if (signals.received() && (!ok || more)) {  // ended unfinished by the signal, or not to go on
      ++outcome.stopped;
      std::cout << "ablate: stopped " << job.variant << " seed " << job.seed << " after "
                << format_duration(now_seconds() - r.began) << std::endl;
      continue;
    }
    if (ok && more) {  // the job's next step
      running[start_step(job, r.step + 1, executable)] = {r.job, r.step + 1, r.began};
      continue;
    }
    if (ok && job.finetune_source) AblationLayout::mark_finetune_source(job.dir);  // before it counts finished
    if (ok) AblationLayout::mark_done(job.dir);
    ++done;
    if (!ok) ++outcome.failed;
    if (ok && job.whole) {
      whole_seconds += now_seconds() - r.began;
      ++whole;
    }
    std::cout << "ablate: " << (ok ? "finished " : "FAILED ") << job.variant << " seed " << job.seed << " in "
              << format_duration(now_seconds() - r.began) << "; " << (jobs.size() - done) << " left, ETA "
              << eta(whole_seconds, whole, jobs.size() - done, parallel) << std::endl;
    if (!ok) std::cerr << "ablate: run failed, see " << job.log << std::endl;
  }
  outcome.signal = signals.received();
  if (outcome.signal)
    std::cout << "ablate: " << (outcome.signal == SIGINT ? "SIGINT" : "SIGTERM") << ": " << outcome.stopped
              << " runs stopped, " << (jobs.size() - next) << " not started" << std::endl;
  return outcome;
}

}  // namespace ropelab
