#include "ropelab/experiment/plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ropelab/config/config.h"
#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/eval_files.h"
#include "ropelab/run/run.h"

namespace ropelab {

namespace fs = std::filesystem;

std::vector<std::string> AblationDirectory::finished_runs() const {
  std::vector<std::string> out;
  const auto runs = AblationLayout(out_dir_).runs();
  if (!fs::is_directory(runs)) return out;
  for (const auto& entry : fs::directory_iterator(runs))
    if (entry.is_directory() && finished(entry.path().string())) out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool AblationDirectory::finished(const std::string& dir) const { return fs::exists(AblationLayout::done(dir)); }

bool AblationDirectory::trained(const std::string& dir) const { return fs::exists(RunPaths(dir).trained); }

bool AblationDirectory::started_with(const std::string& dir, const Config& config) const {
  return run_started_with(dir, config, yaml_config_files());
}

bool AblationDirectory::has_evaluation(const std::string& dir, const AblationEval& eval) const {
  for (const auto& file : {eval.items_file(dir), eval.positions_file(dir)})
    if (!file.empty() && !fs::exists(file)) return false;
  for (const auto& [key, column] : eval.columns)
    if (std::isnan(read_report_number(eval.report(dir), key))) return false;
  for (const auto& [key, value] : eval.report_equals) {
    const double held = read_report_number(eval.report(dir), key);
    if (std::isnan(held) ? !eval.report_may_lack : held != value) return false;
  }
  return true;
}

Job plan_job(const ExperimentSpec& spec, const Variant& variant, int64_t seed, const std::vector<std::string>& extra,
             const PlanOptions& options, const RunsOnDisk& disk) {
  Job job;
  job.variant = variant.name.empty() ? "base" : variant.name;
  job.label = variant.label;
  job.seed = seed;
  job.dir = AblationLayout(options.out_dir).run(variant.name, seed);
  Variant full = variant;
  full.overrides.insert(full.overrides.end(), extra.begin(), extra.end());
  std::vector<UnreadKey> unread;  // named once per variant by load_experiment
  job.config = variant_config(spec, full, seed, &unread);
  if (!disk.finished(job.dir))
    for (const auto& other : disk.finished_runs())
      if (disk.started_with(other, job.config)) {
        job.dir = other;
        break;
      }
  job.log = AblationLayout::log(job.dir);

  std::vector<std::string> runtime{"--threads", std::to_string(options.threads)};
  if (!options.device.empty()) runtime.insert(runtime.end(), {"--device", options.device});
  const bool same = disk.started_with(job.dir, job.config);
  const bool trained = same && (disk.finished(job.dir) || disk.trained(job.dir));
  if (!trained) {
    std::vector<std::string> train{"train"};
    if (same) {
      train.push_back("--resume");
    } else {
      train.insert(train.end(), {"--overwrite", "--allow-unread"});
      train.insert(train.end(), spec.base.begin(), spec.base.end());
      for (const auto& s : spec.set) train.insert(train.end(), {"--set", s});
      for (const auto& s : full.overrides) train.insert(train.end(), {"--set", s});
      train.insert(train.end(), {"--set", "train.seed=" + std::to_string(seed)});
      job.whole = true;
    }
    train.insert(train.end(), runtime.begin(), runtime.end());
    train.insert(train.end(), {"-o", job.dir});
    job.steps.push_back(std::move(train));
    job.trains = true;
  }
  const auto evals = ablation_evals(job.config, spec.evaluations);
  std::vector<const AblationEval*> missing;
  for (const auto& eval : evals)
    if (!trained || !disk.has_evaluation(job.dir, eval)) missing.push_back(&eval);
  for (const auto* eval : missing) {
    // an evaluation whose report another one left to run writes too is not run on its own
    if (std::any_of(missing.begin(), missing.end(),
                    [&](const AblationEval* o) { return !o->also_writes.empty() && o->also_writes == eval->tag; }))
      continue;
    auto step = eval->args;
    step.insert(step.end(), {"--run", job.dir});
    step.insert(step.end(), runtime.begin(), runtime.end());
    job.steps.push_back(std::move(step));
  }
  return job;
}

}  // namespace ropelab
