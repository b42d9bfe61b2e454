// ropelab ablate --plan: the runs left as command lines and as a Slurm array script; run by
// hand, they give the runs ablate accepts as finished.
#include "cli_util.h"

using namespace ropelab::cli_test;

namespace {

/// The command lines --plan prints (those of the ropelab binary; other output aside).
std::vector<std::string> plan_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find("/ropelab ") != std::string::npos && line.rfind("ablate:", 0) != 0) lines.push_back(line);
  return lines;
}

}  // namespace

TEST(Cli, AblatePlanRunsByHandGiveTheRunsAblateFinishes) {
  const auto root = fresh_dir("ablate_plan");
  const auto exp = tiny_finetune_experiment(root);
  const auto out = (root / "out").string();
  const std::string ablate = "ablate " + exp + " -o " + out + " --threads 1";

  // the grid's two runs, each a training and its evaluations; the fine-tune waits for its source
  auto r = run(ablate + " --plan");
  ASSERT_EQ(r.code, 0) << r.output;
  auto lines = plan_lines(r.output);
  ASSERT_EQ(lines.size(), 2u) << r.output;
  for (const auto& line : lines) {
    EXPECT_NE(line.find(" train "), std::string::npos) << line;
    EXPECT_NE(line.find(" --threads 1 "), std::string::npos) << line;
    EXPECT_NE(line.find(".log 2>&1 && test -e "), std::string::npos) << line;  // trained to its end,
    EXPECT_NE(line.find("/trained && "), std::string::npos) << line;           // then its evaluations
    EXPECT_EQ(line.rfind("{ test ! -s ", 0), 0u) << line;                      // a new run's log starts anew
  }
  EXPECT_NE(r.output.find("ablate: finetune seed 1 not run: its source run (model.position.type=rotary seed 1) did "
                          "not finish; plan again once it has"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/runs/model.position.type=rotary.seed1"));  // planning runs nothing

  // the Slurm array of the same lines, its tasks run here as Slurm would
  r = run(ablate + " --plan slurm");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote " + out + "/ablate.slurm (2 runs)"), std::string::npos) << r.output;
  const auto script = read_text(out + "/ablate.slurm");
  EXPECT_NE(script.find("#SBATCH --array=0-1\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=1\n"), std::string::npos) << script;
  for (const auto& line : lines) EXPECT_NE(script.find(") " + line + " ;;\n"), std::string::npos) << script;
  EXPECT_NE(run_shell("bash " + out + "/ablate.slurm").code, 0);  // not an array task
  for (int task = 0; task < 2; ++task) {
    r = run_shell("SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " bash " + out + "/ablate.slurm");
    ASSERT_EQ(r.code, 0) << r.output;
  }

  // now the fine-tune's source has nothing left: the plan is the fine-tune alone, run by hand
  r = run(ablate + " --plan");
  ASSERT_EQ(r.code, 0) << r.output;
  lines = plan_lines(r.output);
  ASSERT_EQ(lines.size(), 1u) << r.output;
  EXPECT_NE(lines[0].find("train.init_from="), std::string::npos) << lines[0];
  r = run_shell(lines[0]);
  ASSERT_EQ(r.code, 0) << r.output;

  // ablate finds every run finished, runs nothing, marks them and writes the tables
  r = run(ablate);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 variants x 1 seeds = 2 runs; 2 finished already, 0 to run"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("= 1 runs; 1 finished already, 0 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/runs/model.position.type=rotary.seed1/finetune.source"));
  EXPECT_TRUE(std::filesystem::exists(out + "/runs/finetune.seed1/ablation.done"));
  EXPECT_TRUE(std::filesystem::exists(out + "/results.md"));
  r = run(ablate + " --plan");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(plan_lines(r.output).empty()) << r.output;
  r = run(ablate + " --plan slurm");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ablate: no run left to do; no script written"), std::string::npos) << r.output;

  r = run(ablate + " --plan pbs");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--plan: unknown format 'pbs' (expected lines | slurm)"), std::string::npos) << r.output;
  std::filesystem::remove_all(root);
}
