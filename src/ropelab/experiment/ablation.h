#pragma once
/// `ropelab ablate`: runs every variant x seed of an experiment (config/experiment.h) as
/// `ropelab train` and evaluation child processes (experiment/plan.h, experiment/runner.h),
/// skips finished runs (so a stopped ablation resumes, continuing an interrupted run from
/// its last checkpoint), then the fine-tunes of the finished runs, and writes the tables and
/// plots (experiment/results.h). The directory's layout is run/ablation_layout.h; an
/// ablate holds its lock (RunLock on OUT) from start to end, so a second one is refused.

#include <string>
#include <vector>

#include "ropelab/experiment/runner.h"
#include "ropelab/experiment/spec.h"

namespace ropelab {

struct AblationOptions {
  std::string out_dir;
  std::string executable;  // the ropelab binary the runs use
  int64_t jobs = 1;        // runs at a time
  int64_t threads = 0;     // threads per run; 0 = cores / jobs
  std::string device;      // --device for every run (empty: the configs')
};

/// Threads per run: `threads`, or the cores shared among `jobs`.
int64_t ablation_threads(const AblationOptions& options);

/// Every run of the experiment's grid (variants x seeds, fine-tunes aside), planned against
/// what `disk` holds; the runs fine-tunes start from are marked Job::finetune_source.
std::vector<Job> plan_grid(const ExperimentSpec& spec, const PlanOptions& plan, const RunsOnDisk& disk);

/// The fine-tunes of the experiment whose source run in `grid` (plan_grid's) has finished
/// or has nothing left to do, each seed from its own; one line per fine-tune still waiting for its source goes to
/// `waiting`.
std::vector<Job> plan_finetunes(const ExperimentSpec& spec, const std::vector<Job>& grid, const PlanOptions& plan,
                                const RunsOnDisk& disk, std::vector<std::string>* waiting);

/// Runs what is missing, then writes the result files. Returns the runs that failed (their
/// logs are named on stderr); results cover the runs that finished. Stopped by SIGINT or
/// SIGTERM (passed on to the runs under way), it returns the signal and the runs stopped at
/// once, without the fine-tunes or the result files.
JobsOutcome run_ablation(const ExperimentSpec& spec, const AblationOptions& options);

}  // namespace ropelab
