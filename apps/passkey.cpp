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
#include "ropelab/util/random.h"
#include "run_args.h"

namespace ropelab::apps {

void add_passkey(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("passkey", "passkey retrieval: make documents, evaluate a language model");
  cmd->require_subcommand(1);

  auto* make = cmd->add_subcommand(
      "make", "write passkey documents, one per line: with their answers (training), or prompt TAB key (--prompts)");
  struct MakeArgs {
    int64_t count = 1000, length = 128, min_length = 0, digits = 5;
    uint64_t seed = 1;
    bool prompts = false;
  };
  auto m = std::make_shared<MakeArgs>();
  make->add_option("--count", m->count, "documents")->check(positive())->capture_default_str();
  make->add_option("--length", m->length, "characters of each prompt (the longest, with --min-length)")
      ->check(positive())
      ->capture_default_str();
  make->add_option("--min-length", m->min_length, "lengths drawn uniformly from [this, --length] (0: all --length)")
      ->check(CLI::NonNegativeNumber);
  make->add_option("--digits", m->digits, "digits of the key")->check(CLI::Range(1, 18))->capture_default_str();
  make->add_option("--seed", m->seed, "random seed: the same seed writes the same documents")->capture_default_str();
  make->add_flag("--prompts", m->prompts, "write PROMPT<TAB>KEY lines instead of documents ending in their key");
  make->callback([m] {
    const int64_t low = m->min_length > 0 ? m->min_length : m->length;
    if (low > m->length) throw std::runtime_error("--min-length is above --length");
    if (low < passkey_minimum_length(m->digits))
      throw std::runtime_error("--length " + std::to_string(low) + " is below the " +
                               std::to_string(passkey_minimum_length(m->digits)) +
                               " characters of the key sentence and the question");
    // each document's length and depth from a stream of their own, its text from (seed, index)
    SplitMix64 shapes(m->seed ^ 0xA5A5A5A5A5A5A5A5ULL);
    for (int64_t i = 0; i < m->count; ++i) {
      const auto u = static_cast<uint64_t>(i);
      PasskeyOptions o;
      o.digits = m->digits;
      o.length = low + static_cast<int64_t>(shapes.below(static_cast<uint32_t>(m->length - low + 1)));
      o.depth = static_cast<double>(shapes.below(101)) / 100.0;
      const auto d = make_passkey_document(o, m->seed, u);
      std::cout << (m->prompts ? d.prompt + "\t" + d.key : d.with_answer()) << '\n';
    }
    std::cout << std::flush;
  });

  auto* eval = cmd->add_subcommand(
      "eval",
      "a language model's passkey accuracy per document length and key depth (a stopped one goes on from its "
      "RUN/passkey.partial.jsonl)");
  struct EvalArgs : RunArgs {
    PasskeyGrid grid;
  };
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
    // this same evaluation: the grid, the settings, the program's version, the run's
    // config.yaml and the checkpoint's bytes as loaded (so that a checkpoint saved since, a
    // config edited by hand or another release starts again).
    PasskeyEvaluation evaluation;
    evaluation.checkpoint_fingerprint = fingerprint_while_reading(RunPaths(e->run_dir).checkpoint(e->checkpoint),
                                                                  [&] { run.emplace(e->open(&device)); });
    if (!task_traits(run->config.task).offers(ProtocolKind::passkey))
      throw std::runtime_error("passkey retrieval tests language models; " + e->run_dir + " is a " +
                               run->task->model_noun());
    for (auto l : e->grid.lengths)
      if (l < passkey_minimum_length(e->grid.digits))
        throw std::runtime_error("--lengths: " + std::to_string(l) + " is below the " +
                                 std::to_string(passkey_minimum_length(e->grid.digits)) +
                                 " characters of the key sentence and the question");
    evaluation.grid = e->grid;
    evaluation.version = ROPELAB_VERSION;
    evaluation.precision = to_string(e->precision);
    evaluation.device = device.str();
    evaluation.overrides = e->overrides;
    evaluation.config_fingerprint = file_fingerprint(RunPaths(e->run_dir).config);
    const auto files = RunPaths(e->run_dir).passkey(e->precision_suffix());  // beside fp32's, in bf16
    std::string command = "ropelab passkey eval --run " + e->run_dir;
    for (const auto& arg : passkey_eval_args(e->grid)) command += " " + arg;
    command += (e->precision == Precision::fp32 ? "" : " --precision " + to_string(e->precision));
    // a line per cell on stderr as it is scored; stdout keeps the table alone
    const auto cells = score_passkey_resuming(
        e->grid, files.partial, passkey_evaluation_key(evaluation),
        [&](const PasskeyProgress& progress, const std::vector<PasskeyCell>& scored) {
          return evaluate_passkey(*run->task, *run->model, *run->tokenizer, e->grid, device, progress, scored);
        },
        std::cerr);
    // the summary last: `ablate` takes it as "evaluated", so a table or heat map that cannot
    // be written leaves none and the next `ablate` evaluates again (from the partial file)
    write_passkey_table(files.csv, cells);
    write_passkey_heat_map(files.svg, cells, e->grid, e->run_dir + ": passkey accuracy", command);
    write_passkey_summary(files.json, cells);
    remove_passkey_partial(files.partial, std::cerr);
    std::cout << format_passkey_cells(cells);
    std::cout << "wrote " << files.csv << ", " << files.json << " and " << files.svg << std::endl;
  });
}

}  // namespace ropelab::apps
