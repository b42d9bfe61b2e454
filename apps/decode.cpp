// ropelab translate, ropelab eval, ropelab generate
#include "commands.h"

#include "ropelab/data/corpus.h"
#include "ropelab/decode/search.h"
#include "ropelab/eval/evaluate.h"
#include "ropelab/util/runtime.h"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>

namespace ropelab::apps {

namespace {

/// Decoding flags that override the run's `decode` section.
struct DecodeFlags {
  int64_t beam = -1;
  double lenpen = -1;
  std::string formula;
  bool no_cache = false;
  int64_t max_tokens = 2048;
  void add_to(CLI::App& app) {
    app.add_option("--beam", beam, "beam size (1 = greedy; default: the run's decode.beam)")
        ->check(positive());
    app.add_option("--lenpen", lenpen, "length penalty alpha (default: the run's decode.lenpen)")
        ->check(nonnegative());
    app.add_option("--lenpen-formula", formula, "gnmt: ((5+|Y|)/6)^alpha | average: |Y|^alpha")
        ->check(CLI::IsMember({"gnmt", "average"}));
    app.add_option("--max-tokens", max_tokens, "source tokens per decoding batch")
        ->check(positive())
        ->capture_default_str();
    app.add_flag("--no-cache", no_cache, "recompute the decoder over the whole prefix each step (slow; for comparison)");
  }
  TranslateOptions apply(DecodeOptions decode) const {
    if (beam > 0) decode.beam(beam);
    if (lenpen >= 0) decode.lenpen(lenpen);
    if (!formula.empty()) decode.lenpen_formula(parse_length_penalty(formula));
    TranslateOptions options;
    options.decode = decode;
    options.max_tokens = max_tokens;
    options.use_cache = !no_cache;
    return options;
  }
};

struct RunArgs {
  RuntimeFlags flags;
  DecodeFlags decode;
  std::string run_dir, checkpoint = "best";
  void add_to(CLI::App& cmd) {
    cmd.add_option("--run", run_dir, "run directory from ropelab train")->required();
    cmd.add_option("--checkpoint", checkpoint, "best | last | FILE")->capture_default_str();
    flags.add_to(cmd);
    decode.add_to(cmd);
  }
  /// Loads the run on the chosen device with the chosen threads.
  LoadedRun open(torch::Device* device) const {
    *device = parse_device(flags.device_or("cpu"));
    set_threads(flags.threads < 0 ? 0 : flags.threads);
    return open_run(run_dir, checkpoint, *device);
  }
};

}  // namespace

void add_translate(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("translate", "translate lines from stdin (or --input) to stdout, one for one");
  struct Args : RunArgs {
    std::string input;
    int64_t batch = 32;
  };
  auto a = std::make_shared<Args>();
  a->add_to(*cmd);
  cmd->add_option("--input", a->input, "file to translate (default: stdin)")->check(CLI::ExistingFile);
  cmd->add_option("--batch", a->batch, "lines per batch; output is flushed after each")
      ->check(positive())
      ->capture_default_str();
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    const auto options = a->decode.apply(run.config.decode);
    std::ifstream file;
    if (!a->input.empty()) file.open(a->input);
    std::istream& in = a->input.empty() ? std::cin : file;
    const std::string name = a->input.empty() ? "<stdin>" : a->input;
    int64_t line_number = 0, truncated = 0;
    std::vector<std::string> lines;
    auto flush = [&] {
      for (const auto& out : translate_lines(run, lines, options, device, &truncated)) std::cout << out << '\n';
      std::cout << std::flush;
      lines.clear();
    };
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!valid_utf8(line)) throw std::runtime_error(name + ":" + std::to_string(line_number) + ": invalid UTF-8");
      lines.push_back(std::move(line));
      if (static_cast<int64_t>(lines.size()) >= a->batch) flush();
    }
    flush();
    if (truncated > 0)
      std::cerr << "ropelab translate: warning: " << truncated << " lines longer than data.max_len="
                << run.config.data.max_len() << " tokens were truncated" << std::endl;
  });
}

void add_eval(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("eval", "translate a split, print BLEU, chrF and perplexity");
  struct Args : RunArgs {
    std::string split = "test";
    int64_t context = 0;
  };
  auto a = std::make_shared<Args>();
  a->add_to(*cmd);
  cmd->add_option("--split", a->split, "test | valid | a file in the run's data format")->capture_default_str();
  cmd->add_option("--context", a->context,
                  "language models: evaluate in chunks of N tokens (default: the run's data.context)")
      ->check(positive());
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    if (a->context > 0) run.config.data.context(a->context);
    std::string path = a->split;
    if (a->split == "test") path = run.config.data.test();
    if (a->split == "valid") path = run.config.data.valid();
    if (path.empty()) throw std::runtime_error(a->run_dir + "/config.yaml: data." + a->split + " is not set");
    const auto options = a->decode.apply(run.config.decode);
    auto report = evaluate_split(run, path, options, device);

    const std::string tag = std::filesystem::path(a->split).filename().string();
    if (report.language_model) {
      const auto json_path =
          (std::filesystem::path(a->run_dir) / ("eval." + tag + ".ctx" + std::to_string(run.config.data.context()) +
                                                ".json"))
              .string();
      std::ofstream(json_path) << report.json(a->split, a->checkpoint) << '\n';
      std::cout << "perplexity = " << report.perplexity << " (" << std::log2(report.perplexity)
                << " bits/token; " << report.tokens << " tokens in " << report.sentences << " chunks of "
                << run.config.data.context() << ")\nwrote " << json_path << std::endl;
      return;
    }
    const auto hyp_path = (std::filesystem::path(a->run_dir) / ("hyp." + tag + ".txt")).string();
    std::ofstream hyp(hyp_path);
    for (const auto& h : report.hypotheses) hyp << h << '\n';
    const auto json_path = (std::filesystem::path(a->run_dir) / ("eval." + tag + ".json")).string();
    std::ofstream(json_path) << report.json(a->split, a->checkpoint) << '\n';

    std::cout << report.bleu.format() << "\n  " << report.bleu.signature << '\n'
              << report.chrf.format() << "\n  " << report.chrf.signature << '\n'
              << "perplexity = " << report.perplexity << " (teacher-forced, " << report.sentences << " sentences)\n"
              << "exact match = " << std::fixed << std::setprecision(1) << 100.0 * report.exact_match
              << std::defaultfloat << std::setprecision(6) << "%\n"
              << "decoding: beam " << options.decode.beam() << ", " << report.decode_seconds << " s"
              << (options.use_cache ? "" : " (no cache)") << '\n'
              << "wrote " << hyp_path << " and " << json_path << std::endl;
    if (report.truncated > 0)
      std::cerr << "ropelab eval: warning: " << report.truncated << " source lines longer than data.max_len="
                << run.config.data.max_len() << " tokens were truncated" << std::endl;
    if (report.skipped_empty > 0)
      std::cerr << "ropelab eval: warning: " << report.skipped_empty << " pairs with an empty side were skipped"
                << std::endl;
  });
}

void add_generate(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("generate", "continue prompts with a language model (task lm)");
  struct Args : RunArgs {
    std::vector<std::string> prompts;
    GenerateOptions options;
    int64_t seed = 1;
  };
  auto a = std::make_shared<Args>();
  a->add_to(*cmd);
  cmd->add_option("--prompt", a->prompts, "prompt text (repeatable; default: one prompt per stdin line)");
  cmd->add_option("--max-new", a->options.max_tokens, "tokens to generate at most")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--temperature", a->options.temperature, "0 = greedy")
      ->check(nonnegative())
      ->capture_default_str();
  cmd->add_option("--top-k", a->options.top_k, "sample among the k likeliest (0 = all)")
      ->check(nonnegative())
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "sampling seed")->capture_default_str();
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    if (!run.model.lm)
      throw std::runtime_error(a->run_dir + ": a translation run; use ropelab translate (generate needs task lm)");
    torch::manual_seed(static_cast<uint64_t>(a->seed));
    auto continue_prompt = [&](const std::string& prompt) {
      auto ids = run.tokenizer->encode(prompt);
      auto out = generate(run.model.lm, ids, a->options);
      ids.insert(ids.end(), out.tokens.begin(), out.tokens.end());
      std::cout << run.tokenizer->decode(ids) << std::endl;
    };
    if (!a->prompts.empty()) {
      for (const auto& p : a->prompts) continue_prompt(p);
      return;
    }
    for (std::string line; std::getline(std::cin, line);) continue_prompt(line);
  });
}

}  // namespace ropelab::apps
