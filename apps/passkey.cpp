// ropelab passkey make | eval: passkey-retrieval documents and a language model's accuracy
// on them (Mohtashami and Jaggi 2023).
#include <iostream>
#include <memory>
#include <optional>

#include "ropelab/build_config.h"
#include "ropelab/eval/passkey_eval.h"
#include "ropelab/report/run_plots.h"
#include "ropelab/task/task_registry.h"
#include "ropelab/util/files.h"
#include "run_args.h"

namespace ropelab::apps {

namespace {

struct EvalArgs : RunArgs {
  PasskeyGrid grid;
};

/// Everything a partial file must agree on: the grid, the settings, the program's version,
/// the run's config.yaml and the checkpoint's bytes as loaded.
PasskeyEvaluation passkey_evaluation(const EvalArgs& e, const torch::Device& device, const std::string& checkpoint) {
  PasskeyEvaluation evaluation;
  evaluation.grid = e.grid;
  evaluation.version = ROPELAB_VERSION;
  evaluation.precision = e.precision;
  evaluation.device = device.str();
  evaluation.overrides = e.overrides;
  evaluation.config_fingerprint = file_fingerprint(RunPaths(e.run_dir).config);
  evaluation.checkpoint_fingerprint = checkpoint;
  return evaluation;
}

std::string passkey_command(const EvalArgs& e) {
  std::string command = "ropelab passkey eval --run " + e.run_dir;
  for (const auto& arg : passkey_eval_args(e.grid)) command += " " + arg;
  for (const auto& o : e.overrides) command += " --set " + o;
  return command + (e.precision == Precision::fp32 ? "" : " --precision " + to_string(e.precision));
}

}  // namespace

void add_passkey(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("passkey", "passkey retrieval: make documents, evaluate a language model");
  cmd->require_subcommand(1);

  auto* make = cmd->add_subcommand(
      "make", "write passkey documents, one per line: with their answers (training), or prompt TAB key (--prompts)");
  auto m = std::make_shared<PasskeyDocumentSet>();
  make->add_option("--count", m->count, "documents")->check(positive())->capture_default_str();
  make->add_option("--length", m->length, "characters of each prompt (the longest, with --min-length)")
      ->check(positive())
      ->capture_default_str();
  make->add_option("--min-length", m->min_length, "lengths drawn uniformly from [this, --length] (0: all --length)")
      ->check(CLI::NonNegativeNumber);
  make->add_option("--digits", m->digits, "digits of the key")->check(CLI::Range(1, 18))->capture_default_str();
  make->add_option("--seed", m->seed, "random seed: the same seed writes the same documents")->capture_default_str();
  make->add_flag("--prompts", m->prompts, "write PROMPT<TAB>KEY lines instead of documents ending in their key");
  make->callback([m] { write_passkey_documents(*m, std::cout); });

  auto* eval = cmd->add_subcommand(
      "eval",
      "a language model's passkey accuracy per document length and key depth (a stopped one goes on from its "
      "RUN/passkey.partial.jsonl)");
  auto e = std::make_shared<EvalArgs>();
  e->add_to(*eval);
  eval->add_option("--lengths", e->grid.lengths, "document lengths in characters")
      ->delimiter(',')
      ->check(positive())
      ->capture_default_str();
  eval->add_option("--depths", e->grid.depths, "depths of the key, 0 (start) to 1 (end)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  eval->add_option("--documents", e->grid.documents, "documents per cell")->check(positive())->capture_default_str();
  eval->add_option("--digits", e->grid.digits, "digits of the key")->check(CLI::Range(1, 18))->capture_default_str();
  eval->add_option("--passkey-seed", e->grid.seed, "random seed of the documents")->capture_default_str();
  eval->callback([e] {
    torch::Device device(torch::kCPU);
    std::optional<LoadedRun> run;
    // An evaluation stopped part-way goes on from its partial file when that was written by
    // this same evaluation (passkey_evaluation): a checkpoint saved since, a config edited by
    // hand or another release starts again.
    const auto checkpoint = fingerprint_while_reading(RunPaths(e->run_dir).checkpoint(e->checkpoint),
                                                      [&] { run.emplace(e->open(&device)); });
    if (!task_traits(run->config.task).offers(ProtocolKind::passkey))
      throw std::runtime_error("passkey retrieval tests language models; " + e->run_dir + " is a " +
                               run->task->model_noun());
    for (auto l : e->grid.lengths) check_passkey_length(l, e->grid.digits, "--lengths:");
    // beside the plain fp32 report: in bf16, or under --set (a window with sinks)
    const auto files = RunPaths(e->run_dir).passkey(e->report_suffix());
    // a line per cell on stderr as it is scored; stdout keeps the table alone
    const auto cells = score_passkey_resuming(
        e->grid, files.partial, passkey_evaluation_key(passkey_evaluation(*e, device, checkpoint)),
        [&](const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored) {
          return evaluate_passkey(*run->task, *run->model, *run->tokenizer, e->grid, device, progress, scored);
        },
        std::cerr);
    write_passkey_results(files, cells, e->grid, e->run_dir + ": passkey accuracy", passkey_command(*e), std::cout,
                          std::cerr);
  });
}

}  // namespace ropelab::apps
