// ropelab score, ropelab average
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ropelab/data/text.h"
#include "ropelab/eval/metrics.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/run/run.h"

namespace ropelab::apps {

void add_score(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "score", "score detokenized hypotheses like `sacrebleu REF -i HYP -m bleu chrf` (chrF and chrF++)");
  struct Args {
    std::vector<std::string> refs;
    std::string hyp, smooth = "exp";
    bool json = false, lowercase = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--ref", a->refs, "reference file (repeat for several references)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--hyp", a->hyp, "hypothesis file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--smooth", a->smooth, "BLEU smoothing: exp | floor | add-k | none")
      ->check(CLI::IsMember({"exp", "floor", "add-k", "none"}))
      ->capture_default_str();
  cmd->add_flag("--lowercase", a->lowercase, "case-insensitive");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] {
    const auto hyps = read_text_lines(a->hyp);
    std::vector<std::vector<std::string>> refs;
    for (const auto& path : a->refs) {
      refs.push_back(read_text_lines(path));
      if (refs.back().size() != hyps.size())
        throw std::runtime_error(path + " has " + std::to_string(refs.back().size()) + " lines but " + a->hyp +
                                 " has " + std::to_string(hyps.size()));
    }
    BleuOptions bleu_options;
    bleu_options.smoothing = parse_bleu_smoothing(a->smooth);
    bleu_options.lowercase = a->lowercase;
    ChrfOptions chrf_options, chrfpp_options = chrf_plus_plus();
    chrf_options.lowercase = chrfpp_options.lowercase = a->lowercase;
    // Independent passes over the corpus: chrF and chrF++ on a second thread beside BLEU.
    auto chrf_pass = std::async(std::launch::async, [&] {
      return corpus_chrf(hyps, refs, {chrf_options, chrfpp_options});
    });
    const auto bleu = corpus_bleu(hyps, refs, bleu_options);
    const auto chrfs = chrf_pass.get();
    const auto &chrf = chrfs[0], &chrfpp = chrfs[1];
    if (a->json) {
      const nlohmann::ordered_json json = {{"bleu", bleu.score},
                                           {"bleu_signature", bleu.signature},
                                           {"bleu_line", bleu.format()},
                                           {"chrf", chrf.score},
                                           {"chrf_signature", chrf.signature},
                                           {"chrfpp", chrfpp.score},
                                           {"chrfpp_signature", chrfpp.signature}};
      std::cout << json.dump() << std::endl;
    } else {
      std::cout << bleu.format() << "\n  " << bleu.signature << '\n'
                << chrf.format() << "\n  " << chrf.signature << '\n'
                << chrfpp.format() << "\n  " << chrfpp.signature << std::endl;
    }
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
    const auto run = open_run_untrained(a->run_dir);
    const auto output =
        a->output.empty() ? a->run_dir + "/checkpoint_avg" + std::to_string(a->last) + ".pt" : a->output;
    average_checkpoints(chosen, run.model->module(), output);
    std::cout << "averaged";
    for (const auto& c : chosen) std::cout << ' ' << c;
    std::cout << "\nwrote " << output << " (use with --checkpoint " << output << ")" << std::endl;
  });
}

}  // namespace ropelab::apps
