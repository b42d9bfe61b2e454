#pragma once
/// Running planned jobs (experiment/plan.h) as child processes of the ropelab binary,
/// without a shell: each job's steps in order, a few jobs at a time.

#include <cstdint>
#include <string>
#include <vector>

#include "ropelab/experiment/plan.h"

namespace ropelab {

/// What run_jobs did: the jobs that failed, and, when SIGINT or SIGTERM stopped it, the
/// signal and the jobs it stopped under way.
struct JobsOutcome {
  int64_t failed = 0;
  int64_t stopped = 0;
  int signal = 0;
};

/// Runs `jobs`, `parallel` at a time. A job's steps run in order, each `executable` with
/// the step's arguments, their output in the job's log (a job that is the run's whole work,
/// Job::whole, starts it anew, a previous RUN.log moved aside to RUN.old-YYYYMMDD-HHMMSS.log
/// as train --overwrite moves the old run; a resumed training and the evaluations append); the first
/// step that fails ends the job. A training step must leave the run at its end (a training
/// stopped by a signal exits 0 without: the job fails, and the next ablate resumes it). A
/// job whose steps all succeed gets its done marker (AblationLayout::done). Prints a line
/// as each job starts and ends; `skipped` and `total` number them among the experiment's
/// runs. SIGINT or SIGTERM is passed on to the steps under way (a training saves its
/// checkpoint and exits); then no step starts, and the jobs it ended unfinished are
/// reported stopped, not failed.
JobsOutcome run_jobs(const std::vector<Job>& jobs, const std::string& executable, int64_t parallel, size_t skipped,
                     size_t total);

}  // namespace ropelab
