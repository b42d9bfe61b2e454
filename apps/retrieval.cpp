// ropelab retrieval make | eval: the retrieval probes of data/retrieval.h (multi-key and
// multi-value needles and variable tracking, Hsieh et al. 2024; MQAR, Arora et al. 2023).
#include <iostream>
#include <memory>

#include "retrieval_flags.h"
#include "ropelab/eval/retrieval_eval.h"
#include "ropelab/report/run_plots.h"
#include "ropelab/task/task_registry.h"
#include "run_args.h"

namespace ropelab::apps {

void add_retrieval(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("retrieval", "retrieval probes: make documents, evaluate a language model");
  cmd->require_subcommand(1);
  add_retrieval_make(*cmd);

  struct EvalArgs : RunArgs {
    RetrievalGrid grid;
    std::string name;
  };
  auto e = std::make_shared<EvalArgs>();
  e->grid.corpus = "data/corpora/sotu/test.txt";
  auto* eval = cmd->add_subcommand("eval", "a language model's exact-match accuracy per length (and depth)");
  e->add_to(*eval);
  add_task_flags(*eval, e->grid.task, e->name, e->grid.corpus);
  eval->add_option("--lengths", e->grid.lengths, "document lengths in characters")->delimiter(',')->check(positive());
  eval->add_option("--depths", e->grid.depths, "depths of the asked needle, 0 (start) to 1 (end): multikey, multivalue")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  eval->add_option("--documents", e->grid.documents, "documents per cell")->check(positive())->capture_default_str();
  eval->add_option("--retrieval-seed", e->grid.seed, "random seed of the documents")->capture_default_str();
  eval->callback([e, eval] {
    e->grid.task.task = parse_retrieval_task(e->name);
    if (!retrieval_has_depth(e->grid.task.task) && eval->count("--depths"))
      throw std::runtime_error("--depths: " + e->name + " places no needle at a depth");
    check_lengths(e->grid.task, e->grid.lengths, "--lengths");
    torch::Device device(torch::kCPU);
    auto run = e->open(&device);
    if (!task_traits(run.config.task).offers(ProtocolKind::retrieval))
      throw std::runtime_error("retrieval tests language models; " + e->run_dir + " is a " + run.task->model_noun());
    std::cerr << "retrieval " << e->name << ": " << e->grid.documents << " documents a cell from --retrieval-seed "
              << e->grid.seed << std::endl;
    const auto cells =
        evaluate_retrieval(*run.model, *run.tokenizer, e->grid, device, [](const auto& c, size_t i, size_t n) {
          std::cerr << "retrieval: cell " << i << "/" << n << " length " << c.length << ": " << c.correct << "/"
                    << c.documents << (c.error.empty() ? "" : " (" + c.error + ")") << std::endl;
        });
    const auto files = RunPaths(e->run_dir).retrieval(e->name, e->report_suffix());
    PasskeyGrid shape;  // the heat map's axes
    shape.lengths = e->grid.lengths, shape.depths = e->grid.cell_depths();
    write_passkey_results(files, cells, shape, e->run_dir + ": " + e->name + " accuracy",
                          "ropelab retrieval eval --run " + e->run_dir + " --task " + e->name, std::cout, std::cerr);
  });
}

}  // namespace ropelab::apps
