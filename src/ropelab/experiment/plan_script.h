#pragma once
/// An ablation's plan as shell command lines, so that a grid too large for one machine runs
/// under a cluster's scheduler, on a lent GPU machine or on several machines: each line is
/// one run's steps (experiment/plan.h), exactly the commands `ropelab ablate` would run for
/// it, its output appended to the run's log. Once the lines have run, `ropelab ablate` on
/// the first machine finds the runs trained and evaluated, marks them finished and writes
/// the tables, as for runs it ran itself.

#include <string>
#include <vector>

#include "ropelab/experiment/ablation.h"

namespace ropelab {

/// `word` as a POSIX shell reads it back: as it is where it holds only characters a shell
/// leaves alone, else in single quotes.
std::string shell_quote(const std::string& word);

/// One job's steps as one shell line: each `EXECUTABLE ARGS... >> LOG 2>&1`, joined by &&;
/// after a training, `test -e RUN/trained` (a training a signal stopped exits 0 before its
/// end, and is not evaluated); a run started anew first moves its previous log aside
/// (RUN.old-YYYYMMDD-HHMMSS.log), as ablate does.
std::string job_command_line(const Job& job, const std::string& executable);

/// The command lines of every run left to do in the experiment, in the order `ropelab
/// ablate` runs them, and the fine-tunes whose source has not finished (one line each in
/// `waiting`: plan again once it has). Creates OUT/runs, where the logs go.
std::vector<std::string> planned_command_lines(const ExperimentSpec& spec, const AblationOptions& options,
                                               std::vector<std::string>* waiting);

/// A Slurm array script of `lines` (at least one): task i runs line i in `directory` (where
/// ablate was planned, as its paths are relative to it) with `threads` CPUs, and one GPU
/// with `gpu` (runs on --device cuda); each task's output goes to OUT/slurm-JOB_TASK.out.
std::string slurm_array_script(const std::vector<std::string>& lines, const std::string& name,
                               const std::string& directory, int64_t threads, const std::string& out_dir, bool gpu);

}  // namespace ropelab
