// ropelab passkey make | eval: passkey-retrieval documents and a language model's accuracy
// on them (Mohtashami and Jaggi 2023).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "ropelab/build_config.h"
#include "ropelab/eval/passkey_eval.h"
#include "ropelab/report/run_plots.h"
#include "ropelab/task/task_registry.h"
#include "ropelab/util/clock.h"
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
    // the checkpoint's bytes before the load ("" without one: open() says what is missing)
    const auto fingerprint = [&] {
      const auto path = RunPaths(e->run_dir).checkpoint(e->checkpoint);
      return std::filesystem::exists(path) ? file_fingerprint(path) : std::string();
    };
    const auto loaded = fingerprint();
    auto run = e->open(&device);
    if (!task_traits(run.config.task).offers(ProtocolKind::passkey))
      throw std::runtime_error("passkey retrieval tests language models; " + e->run_dir + " is a " +
                               run.task->model_noun());
    for (auto l : e->grid.lengths)
      if (l < passkey_minimum_length(e->grid.digits))
        throw std::runtime_error("--lengths: " + std::to_string(l) + " is below the " +
                                 std::to_string(passkey_minimum_length(e->grid.digits)) +
                                 " characters of the key sentence and the question");
    const auto files = RunPaths(e->run_dir).passkey(e->precision_suffix());  // beside fp32's, in bf16
    std::string command = "ropelab passkey eval --run " + e->run_dir;
    for (const auto& arg : passkey_eval_args(e->grid)) command += " " + arg;
    command += (e->precision == Precision::fp32 ? "" : " --precision " + to_string(e->precision));
    // An evaluation stopped part-way goes on from its partial file when that was written by
    // this same evaluation: the grid, the settings and the checkpoint's bytes, which a
    // fingerprint taken before and after the load holds to the model that was loaded
    // (the program's version and the run's config.yaml too, so that another release or a
    // config edited by hand starts again).
    PasskeyEvaluation evaluation;
    evaluation.grid = e->grid;
    evaluation.version = ROPELAB_VERSION;
    evaluation.precision = to_string(e->precision);
    evaluation.device = device.str();
    evaluation.overrides = e->overrides;
    evaluation.config_fingerprint = file_fingerprint(RunPaths(e->run_dir).config);
    if (fingerprint() != loaded)
      throw std::runtime_error(RunPaths(e->run_dir).checkpoint(e->checkpoint) +
                               ": replaced while it was loaded; run the evaluation again");
    evaluation.checkpoint_fingerprint = loaded;
    const auto key = passkey_evaluation_key(evaluation);
    bool other = false;
    auto scored = read_passkey_partial(files.partial, key, e->grid, &other);
    if (other)
      std::cerr << "passkey: " << files.partial
                << " holds the cells of another grid, checkpoint or setting: scoring every cell (they are replaced)"
                << std::endl;
    const auto failed =
        std::count_if(scored.begin(), scored.end(), [](const PasskeyCell& c) { return !c.error.empty(); });
    if (!scored.empty())
      std::cerr << "passkey: " << scored.size() - static_cast<size_t>(failed) << " of "
                << e->grid.lengths.size() * e->grid.depths.size() << " cells scored before, from " << files.partial
                << (failed ? " (" + std::to_string(failed) + " that failed are scored again)" : std::string())
                << std::endl;
    // a line per cell on stderr as it is scored: a grid to 32k characters takes the better
    // part of an hour on one core, and stdout keeps the table alone
    const double start = now_seconds();
    auto so_far = scored;
    const auto progress = [&](const PasskeyCell& cell, size_t done, size_t total) {
      so_far.push_back(cell);
      write_passkey_partial(files.partial, key, so_far);
      std::cerr << "passkey: cell " << done << "/" << total << ", length " << cell.length << " depth " << cell.depth
                << ": "
                << (cell.error.empty() ? std::to_string(cell.correct) + "/" + std::to_string(cell.documents) + " found"
                                       : "n/a")
                << ", " << format_duration(now_seconds() - start) << std::endl;
    };
    const auto cells = evaluate_passkey(*run.task, *run.model, *run.tokenizer, e->grid, device, progress, scored);
    // the summary last: `ablate` takes it as "evaluated", so a table or heat map that cannot
    // be written leaves none and the next `ablate` evaluates again (from the partial file)
    write_passkey_table(files.csv, cells);
    write_passkey_heat_map(files.svg, cells, e->grid, e->run_dir + ": passkey accuracy", command);
    write_passkey_summary(files.json, cells);
    std::error_code ec;
    if (!std::filesystem::remove(files.partial, ec) && ec)
      std::cerr << "passkey: warning: " << files.partial << " could not be removed (" << ec.message()
                << "); the next evaluation of this checkpoint takes its cells" << std::endl;
    std::cout << format_passkey_cells(cells);
    std::cout << "wrote " << files.csv << ", " << files.json << " and " << files.svg << std::endl;
  });
}

}  // namespace ropelab::apps
