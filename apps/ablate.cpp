// ropelab ablate EXPERIMENT.yaml
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "ropelab/experiment/ablation.h"
#include "ropelab/experiment/plan_script.h"
#include "ropelab/run/ablation_layout.h"

namespace ropelab::apps {

namespace {

/// --plan: the runs left as command lines on stdout, or (`slurm`) as OUT/ablate.slurm.
void write_plan(const ExperimentSpec& spec, const AblationOptions& options, const std::string& format) {
  if (!format.empty() && format != "lines" && format != "slurm")
    throw ConfigError("--plan: unknown format '" + format + "' (expected lines | slurm)");
  std::vector<std::string> waiting;
  const auto lines = planned_command_lines(spec, options, &waiting);
  for (const auto& line : waiting) std::cerr << "ablate: " << line << "; plan again once it has" << std::endl;
  if (format != "slurm") {
    for (const auto& line : lines) std::cout << line << "\n";
    std::cout << std::flush;
    return;
  }
  if (lines.empty()) {
    std::cout << "ablate: no run left to do; no script written" << std::endl;
    return;
  }
  const auto path = options.out_dir + "/ablate.slurm";
  std::ofstream(path) << slurm_array_script(lines, std::filesystem::path(spec.path).stem().string(),
                                            std::filesystem::current_path().string(), ablation_threads(options),
                                            options.out_dir, options.device.rfind("cuda", 0) == 0);
  std::cout << "wrote " << path << " (" << lines.size() << " runs)" << std::endl;
}

}  // namespace

void add_ablate(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("ablate", "run an experiment grid x seeds; results.md, results.csv, curves");
  struct Args {
    std::string experiment, out_dir;
    std::vector<int64_t> seeds;
    AblationOptions options;
    std::string plan;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("EXPERIMENT", a->experiment, "experiment YAML (base, set, grid, seeds, eval_contexts)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", a->out_dir, "output directory (default: runs/ablate/EXPERIMENT_NAME)");
  cmd->add_option("--jobs", a->options.jobs, "runs at a time")->check(positive())->capture_default_str();
  cmd->add_option("--threads", a->options.threads, "threads per run (0 = cores / jobs)")
      ->check(nonnegative())
      ->capture_default_str();
  cmd->add_option("--device", a->options.device, "device for every run (default: the configs')");
  cmd->add_option("--seeds", a->seeds,
                  "only these of the experiment's seeds, comma-separated (default: all; the others can follow "
                  "later into the same directory)")
      ->delimiter(',');
  auto* plan = cmd->add_option("--plan", a->plan,
                               "print each run left as a shell command line (the commands ablate runs) and exit; "
                               "--plan slurm writes OUT/ablate.slurm, a Slurm array of them");
  plan->expected(0, 1);
  cmd->callback([a, plan] {
    auto spec = load_experiment(a->experiment);
    for (const auto& warning : spec.warnings) std::cerr << "warning: " << warning << std::endl;
    if (!a->seeds.empty()) try {
        spec = with_seeds(spec, a->seeds);
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("--seeds: ") + e.what());
      }
    auto options = a->options;
    options.out_dir =
        a->out_dir.empty() ? "runs/ablate/" + std::filesystem::path(a->experiment).stem().string() : a->out_dir;
    options.executable = std::filesystem::read_symlink("/proc/self/exe").string();
    if (plan->count() > 0) return write_plan(spec, options, a->plan);
    const auto outcome = run_ablation(spec, options);
    if (outcome.signal) {
      const auto failed = outcome.failed > 0 ? ", " + std::to_string(outcome.failed) + " runs failed (logs named above)"
                                             : std::string();
      throw Interrupted("ablate: stopped" + failed + "; the same command resumes the grid (results not written)",
                        128 + outcome.signal);
    }
    const AblationLayout layout(options.out_dir);
    std::cout << "wrote " << layout.results_md() << ", " << layout.results_csv() << ", " << layout.significance_csv()
              << " and " << layout.valid_curves_svg() << std::endl;
    if (outcome.failed > 0)
      throw std::runtime_error("ablate: " + std::to_string(outcome.failed) + " runs failed (logs named above)");
  });
}

}  // namespace ropelab::apps
