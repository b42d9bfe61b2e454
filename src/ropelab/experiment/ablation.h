#pragma once
/// `ropelab ablate`: runs every variant x seed of an experiment (config/experiment.h) as
/// `ropelab train` and evaluation child processes (experiment/plan.h, experiment/runner.h),
/// skips finished runs (so a stopped ablation resumes, continuing an interrupted run from
/// its last checkpoint), then the fine-tunes of the finished runs, and writes the tables and
/// plots (experiment/results.h). The directory's layout is run/ablation_layout.h; an
/// ablate holds its lock (RunLock on OUT) from start to end, so a second one is refused.

#include <string>

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

/// Runs what is missing, then writes the result files. Returns the runs that failed (their
/// logs are named on stderr); results cover the runs that finished. Stopped by SIGINT or
/// SIGTERM (passed on to the runs under way), it returns the signal and the runs stopped at
/// once, without the fine-tunes or the result files.
JobsOutcome run_ablation(const ExperimentSpec& spec, const AblationOptions& options);

}  // namespace ropelab
