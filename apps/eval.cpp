// ropelab eval: a split scored by the run's task; the report goes to stdout and RUN/.
#include <filesystem>
#include <iostream>
#include <memory>

#include "ropelab/eval/protocols.h"
#include "ropelab/report/run_plots.h"
#include "ropelab/run/eval_files.h"
#include "run_args.h"

namespace ropelab::apps {

namespace {

struct EvalArgs : RunArgs {
  std::string split = "test";
  int64_t context = 0, stride = 0, gain = 0;
  bool per_position = false;
};

/// One report's files in the run (and its loss-by-position plot, before the report: `ablate`
/// takes the report as "evaluated", so a plot that cannot be written leaves no report and the
/// next `ablate` evaluates again); its summary and what it wrote on stdout.
void write_report(const EvalArgs& a, const EvalReport& r, int64_t context) {
  const EvalFileOptions files{a.split, a.checkpoint, a.precision, a.overrides};
  std::string svg;
  if (!r.position_loss.empty()) {
    svg = eval_positions_plot(a.run_dir, r, files);
    write_position_loss_plot(svg, a.run_dir, r,
                             "ropelab eval --run " + a.run_dir + " --split " + a.split +
                                 (context > 0 ? " --context " + std::to_string(context) : "") +
                                 (a.stride > 0 ? " --stride " + std::to_string(a.stride) : "") + " --per-position");
  }
  std::string wrote;
  for (const auto& file : write_eval_files(a.run_dir, r, files)) wrote += file + " and ";
  if (!svg.empty()) wrote += svg + " and ";
  std::cout << r.summary << "\nwrote " << wrote.substr(0, wrote.size() - 5) << std::endl;
}

}  // namespace

void add_eval(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("eval", "evaluate a split: BLEU, chrF and perplexity, or LM perplexity");
  auto a = std::make_shared<EvalArgs>();
  a->add_to(*cmd);
  cmd->add_option("--split", a->split, "test | valid | a file in the run's data format")->capture_default_str();
  cmd->add_option("--context", a->context,
                  "language models: evaluate in chunks of N tokens (default: the run's data.context)")
      ->check(positive());
  cmd->add_option("--stride", a->stride,
                  "language models: sliding windows of --context tokens every N tokens, each scoring its last N "
                  "(default: N = the context, non-overlapping)")
      ->check(positive());
  cmd->add_option(
         "--context-gain", a->gain,
         "language models: the nats per token that keys farther than W bring, by position bucket [W, 2W), "
         "... up to the context, with bootstrap intervals (the loss with a window of W keys minus the loss "
         "with every key); also writes the perplexity at the context, as --per-position does, from the same pass")
      ->check(positive());
  cmd->add_flag("--per-position", a->per_position,
                "language models: also the mean loss at each position of the window (.positions.csv and .svg)");
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    std::string path = a->split;
    if (a->split == "test") path = run.config.data.test();
    if (a->split == "valid") path = run.config.data.valid();
    if (path.empty()) throw std::runtime_error(a->run_dir + "/config.yaml: data." + a->split + " is not set");
    const auto name = std::filesystem::path(a->split).filename().string();
    const auto protocol = eval_protocol(*run.task, {a->context, a->stride, a->per_position}, a->gain, a->run_dir);
    const auto report = evaluate(*run.task, *run.model, *run.tokenizer, name, path,
                                 a->search.request(run.config.decode, false), protocol, device);
    // a report's companions (the same passes under another protocol) before it, as its plot
    for (const auto& companion : report.companions)
      write_report(*a, companion, companion.fields.value("context", int64_t{0}));
    write_report(*a, report, a->context);
    for (const auto& w : report.warnings) std::cerr << "ropelab eval: warning: " << w << std::endl;
  });
}

}  // namespace ropelab::apps
