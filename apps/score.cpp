// ropelab score, ropelab average
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ropelab/data/text.h"
#include "ropelab/metrics/score_report.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/run/run.h"

namespace ropelab::apps {

void add_score(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "score",
      "score detokenized hypotheses like `sacrebleu REF -i HYP... -m bleu chrf ter`, with paired significance tests");
  struct Args {
    std::vector<std::string> refs, hyps, metrics{"bleu", "chrf", "chrf++"};
    std::string smooth = "exp";
    bool json = false, lowercase = false, ter_case_sensitive = false, paired_bs = false, paired_ar = false;
    int64_t bs_n = 1000, ar_n = 10000, ci_n = 1000;
    uint64_t seed = 12345;
    int width = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--ref", a->refs, "reference file (repeat for several references)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--hyp", a->hyps, "hypothesis file; repeat to score several systems (the first is the baseline)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-m,--metrics", a->metrics, "metrics: bleu chrf chrf++ ter")
      ->check(CLI::IsMember(text_metric_names()))
      ->capture_default_str();
  cmd->add_option("--smooth", a->smooth, "BLEU smoothing: exp | floor | add-k | none")
      ->check(CLI::IsMember({"exp", "floor", "add-k", "none"}))
      ->capture_default_str();
  cmd->add_flag("--lowercase", a->lowercase, "case-insensitive BLEU and chrF (TER is case-insensitive by default)");
  cmd->add_flag("--ter-case-sensitive", a->ter_case_sensitive, "case-sensitive TER");
  auto* bs =
      cmd->add_flag("--paired-bs", a->paired_bs, "paired bootstrap resampling test of every system against the first");
  auto* ar = cmd->add_flag("--paired-ar", a->paired_ar,
                           "paired approximate randomization test of every system against the first");
  bs->excludes(ar);
  cmd->add_option("--paired-bs-n", a->bs_n, "bootstrap resamples")->check(positive())->capture_default_str();
  cmd->add_option("--paired-ar-n", a->ar_n, "randomization trials")->check(positive())->capture_default_str();
  cmd->add_option("--paired-ci-n", a->ci_n,
                  "bootstrap resamples for the confidence intervals of --paired-ar (0: none, as sacreBLEU's CLI)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "random seed of the paired tests' draws")->capture_default_str();
  cmd->add_option("-w,--width", a->width, "decimals in the tables")->check(CLI::Range(0, 10))->capture_default_str();
  cmd->add_flag("--json", a->json, "print one JSON document");
  cmd->callback([a] {
    std::vector<SystemOutput> refs, systems;
    for (const auto& path : a->refs) refs.push_back({path, read_text_lines(path)});
    for (const auto& path : a->hyps) systems.push_back({path, read_text_lines(path)});
    ScoreRequest request;
    request.metrics = a->metrics;
    request.options.smoothing = parse_bleu_smoothing(a->smooth);
    request.options.lowercase = a->lowercase;
    request.options.case_sensitive_ter = a->ter_case_sensitive;
    request.width = a->width;
    if (a->paired_bs || a->paired_ar) {
      if (systems.size() < 2)
        throw std::runtime_error("--paired-" + std::string(a->paired_bs ? "bs" : "ar") +
                                 " compares systems with the first: give --hyp at least twice");
      PairedTestOptions paired;
      paired.test = a->paired_bs ? PairedTest::bootstrap : PairedTest::randomization;
      paired.samples = a->paired_bs ? a->bs_n : a->ar_n;
      paired.confidence_samples = a->paired_bs ? 0 : a->ci_n;
      paired.seed = a->seed;
      request.paired = paired;
    }
    const auto report = score_systems(systems, std::move(refs), request);
    if (a->json)
      std::cout << report.json().dump() << std::endl;
    else
      std::cout << report.text() << std::flush;
  });
}

void add_average(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("average", "average the last N numbered checkpoints of a run");
  struct Args {
    std::string run_dir, output;
    int64_t last = 5;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--run", a->run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--last", a->last, "how many of the newest checkpoints")->check(positive())->capture_default_str();
  cmd->add_option("-o,--output", a->output, "output file (default: RUN/checkpoint_avgN.pt)");
  cmd->callback([a] {
    RunPaths paths(a->run_dir);
    auto all = paths.numbered_checkpoints();
    if (static_cast<int64_t>(all.size()) < a->last)
      throw std::runtime_error(a->run_dir + ": asked to average " + std::to_string(a->last) + " checkpoints but " +
                               std::to_string(all.size()) + " numbered checkpoints exist (train.keep_checkpoints)");
    std::vector<std::string> chosen(all.end() - a->last, all.end());
    const auto run = open_run_untrained(a->run_dir, yaml_config_files());
    const auto output = a->output.empty() ? paths.averaged(a->last) : a->output;
    average_checkpoints(chosen, run.model->module(), output);
    std::cout << "averaged";
    for (const auto& c : chosen) std::cout << ' ' << c;
    std::cout << "\nwrote " << output << " (use with --checkpoint " << output << ")" << std::endl;
  });
}

}  // namespace ropelab::apps
