#include "ropelab/experiment/plan_script.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/run.h"

namespace ropelab {

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=./:,@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string job_command_line(const Job& job, const std::string& executable) {
  std::string line;
  if (job.whole) {  // a new run starts a new log: the previous one moves aside, as ablate moves it
    line = "{ test ! -s " + shell_quote(job.log) + " || mv " + shell_quote(job.log) + " " + shell_quote(job.dir) +
           ".old-$(date +%Y%m%d-%H%M%S).log; }";
  }
  for (size_t i = 0; i < job.steps.size(); ++i) {
    line += line.empty() ? "" : " && ";
    line += shell_quote(executable);
    for (const auto& arg : job.steps[i]) line += " " + shell_quote(arg);
    line += " >> " + shell_quote(job.log) + " 2>&1";
    // a training stopped by a signal exits 0 before its end: no evaluation of it
    if (i == 0 && job.trains) line += " && test -e " + shell_quote(RunPaths(job.dir).trained);
  }
  return line;
}

std::vector<std::string> planned_command_lines(const ExperimentSpec& spec, const AblationOptions& options,
                                               std::vector<std::string>* waiting) {
  std::filesystem::create_directories(AblationLayout(options.out_dir).runs());
  const AblationDirectory disk(options.out_dir);
  const PlanOptions plan{options.out_dir, ablation_threads(options), options.device};
  const auto grid = plan_grid(spec, plan, disk);
  const auto finetunes = plan_finetunes(spec, grid, plan, disk, waiting);
  std::vector<std::string> lines;
  for (const auto* jobs : {&grid, &finetunes})
    for (const auto& job : *jobs)
      if (!job.steps.empty()) lines.push_back(job_command_line(job, options.executable));
  return lines;
}

std::string slurm_array_script(const std::vector<std::string>& lines, const std::string& name,
                               const std::string& directory, int64_t threads, const std::string& out_dir, bool gpu) {
  if (lines.empty()) throw std::invalid_argument("slurm_array_script: no runs");
  // Slurm resolves --output from the submitting directory: the logs go to OUT wherever that is
  const auto out = std::filesystem::path(out_dir).is_absolute() ? out_dir : directory + "/" + out_dir;
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# " << lines.size() << " runs of the ablation " << name
    << ", one array task each (ropelab ablate --plan slurm).\n"
    << "# Submit with `sbatch " << out_dir << "/ablate.slurm`; when the tasks are done, `ropelab ablate` with the\n"
    << "# same experiment and -o marks the runs finished and writes the tables.\n"
    << "#SBATCH --job-name=" << shell_quote("ropelab-" + name) << "\n"
    << "#SBATCH --array=0-" << lines.size() - 1 << "\n"
    << "#SBATCH --cpus-per-task=" << threads << "\n"
    << (gpu ? "#SBATCH --gres=gpu:1\n" : "") << "#SBATCH --output=" << out << "/slurm-%A_%a.out\n"
    << "cd " << shell_quote(directory) << " || exit 1\n"
    << "case \"${SLURM_ARRAY_TASK_ID:?run as a Slurm array task}\" in\n";
  for (size_t i = 0; i < lines.size(); ++i) s << "  " << i << ") " << lines[i] << " ;;\n";
  s << "  *) echo \"ablate.slurm: no task $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\n"
    << "esac\n";
  return s.str();
}

}  // namespace ropelab
