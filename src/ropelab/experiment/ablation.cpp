#include "ropelab/experiment/ablation.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "ropelab/experiment/plan.h"
#include "ropelab/experiment/results.h"
#include "ropelab/experiment/runner.h"
#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/ownership.h"

namespace ropelab {

namespace {

/// Adds `job` to `todo` if it has steps left. A run with none left that lacks its markers
/// (stopped after its last evaluation, before them; a source of fine-tunes added to the
/// experiment later) gets them here.
void queue(const Job& job, const RunsOnDisk& disk, std::vector<Job>& todo) {
  if (!job.steps.empty()) {
    todo.push_back(job);
    return;
  }
  if (job.finetune_source) AblationLayout::mark_finetune_source(job.dir);
  if (!disk.finished(job.dir)) AblationLayout::mark_done(job.dir);
}

/// The results of every run of `all` that finished, labelled for the figures: the
/// experiment file's label, else the position registry's (a fine-tune's with its training
/// context).
std::vector<RunResult> finished_results(const ExperimentSpec& spec, const std::vector<Job>& all,
                                        const AblationDirectory& disk) {
  std::vector<RunResult> results;
  for (const auto& job : all) {
    if (!disk.finished(job.dir)) continue;
    auto r = read_run_result(job.dir, job.config, spec.evaluations);
    r.variant = job.variant;
    if (!job.label.empty())
      r.label = job.label;
    else if (job.variant.rfind("finetune", 0) == 0)
      r.label += " ft" + std::to_string(r.context);
    r.seed = job.seed;
    r.run = AblationLayout::run_in_out(job.dir);
    if (!r.items_error.empty())
      std::cerr << "ablate: warning: no paired test uses " << job.variant << " seed " << job.seed << ": "
                << r.items_error << std::endl;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

int64_t ablation_threads(const AblationOptions& o) {
  const int64_t jobs = std::max<int64_t>(1, o.jobs);
  return o.threads > 0 ? o.threads
                       : std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / jobs);
}

std::vector<Job> plan_grid(const ExperimentSpec& spec, const PlanOptions& plan, const RunsOnDisk& disk) {
  std::vector<Job> all;
  for (const auto& variant : expand_grid(spec))
    for (auto seed : spec.seeds) {
      all.push_back(plan_job(spec, variant, seed, {}, plan, disk));
      all.back().finetune_source = !spec.finetune.empty() && variant.name == spec.finetune[0].from;
    }
  return all;
}

std::vector<Job> plan_finetunes(const ExperimentSpec& spec, const std::vector<Job>& grid, const PlanOptions& plan,
                                const RunsOnDisk& disk, std::vector<std::string>* waiting) {
  std::vector<Job> out;
  for (const auto& variant : finetune_variants(spec))
    for (auto seed : spec.seeds) {
      const auto source = std::find_if(grid.begin(), grid.end(),
                                       [&](const Job& job) { return job.finetune_source && job.seed == seed; });
      // finished, or trained and evaluated with nothing left (by --plan's command lines)
      if (source == grid.end() || !(source->steps.empty() || disk.finished(source->dir))) {
        waiting->push_back(variant.name + " seed " + std::to_string(seed) + " not run: its source run (" +
                           spec.finetune[0].from + " seed " + std::to_string(seed) + ") did not finish");
        continue;
      }
      out.push_back(plan_job(spec, variant, seed, {"train.init_from=" + source->dir}, plan, disk));
    }
  return out;
}

JobsOutcome run_ablation(const ExperimentSpec& spec, const AblationOptions& o) {
  const int64_t jobs = std::max<int64_t>(1, o.jobs);
  const int64_t threads = ablation_threads(o);
  const AblationLayout layout(o.out_dir);
  const std::string command = "ropelab ablate " + spec.path + " -o " + o.out_dir;
  // One ablate per directory: a second would start, move aside or evaluate the same runs
  // as the first, and write the same tables.
  const auto lock = RunLock::acquire(o.out_dir, command);
  std::filesystem::create_directories(layout.runs());
  const AblationDirectory disk(o.out_dir);
  const PlanOptions plan{o.out_dir, threads, o.device};

  auto all = plan_grid(spec, plan, disk);  // every run of the experiment
  std::vector<Job> todo;                   // those with steps left
  for (const auto& job : all) queue(job, disk, todo);
  const size_t total = all.size(), skipped = total - todo.size();
  std::cout << "ablate: " << all.size() / std::max<size_t>(1, spec.seeds.size()) << " variants x " << spec.seeds.size()
            << " seeds = " << total << " runs; " << skipped << " finished already, " << todo.size() << " to run, "
            << jobs << " at a time, " << threads << " threads each" << std::endl;
  auto outcome = run_jobs(todo, o.executable, jobs, skipped, total);
  if (outcome.signal) return outcome;

  // Fine-tunes, once the runs they start from have finished: each seed from its own run.
  if (const auto variants = finetune_variants(spec); !variants.empty()) {
    std::vector<std::string> waiting;
    const auto finetunes = plan_finetunes(spec, all, plan, disk, &waiting);
    for (const auto& line : waiting) std::cerr << "ablate: " << line << std::endl;
    outcome.failed += static_cast<int64_t>(waiting.size());
    std::vector<Job> more;
    for (const auto& job : finetunes) queue(job, disk, more);
    const size_t added = finetunes.size();
    std::cout << "ablate: " << variants.size() << " fine-tunes of " << spec.finetune[0].from << " x "
              << spec.seeds.size() << " seeds = " << added << " runs; " << added - more.size() << " finished already, "
              << more.size() << " to run" << std::endl;
    all.insert(all.end(), finetunes.begin(), finetunes.end());
    const auto tuned = run_jobs(more, o.executable, jobs, added - more.size(), added);
    outcome.failed += tuned.failed;
    outcome.stopped += tuned.stopped;
    outcome.signal = tuned.signal;
    if (outcome.signal) return outcome;
  }

  write_ablation_results(spec, finished_results(spec, all, disk), o.out_dir, command);
  return outcome;
}

}  // namespace ropelab
