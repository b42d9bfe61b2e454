// ropelab translate, ropelab generate, ropelab eval: decoding and evaluating a trained run
// through its task (src/ropelab/task/).
#include "commands.h"

#include "ropelab/data/text.h"
#include "ropelab/run/run.h"
#include "ropelab/util/runtime.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace ropelab::apps {

namespace {

/// Search flags; they override the run's `decode` section.
struct SearchFlags {
  int64_t beam = -1, max_new = -1, top_k = 0, seed = 1, max_tokens = 2048;
  double lenpen = -1, temperature = -1, top_p = 1.0;
  std::string formula;
  bool sample = false, no_cache = false;
  void add_to(CLI::App& app, bool generating) {
    app.add_option("--beam", beam, "beam size (1 = greedy; default: the run's decode.beam)")->check(positive());
    app.add_option("--lenpen", lenpen, "length penalty alpha (default: the run's decode.lenpen)")->check(nonnegative());
    app.add_option("--lenpen-formula", formula, "gnmt: ((5+|Y|)/6)^alpha | average: |Y|^alpha")
        ->check(CLI::IsMember({"gnmt", "average"}));
    app.add_flag("--sample", sample, "sample each token instead of searching (see --temperature, --top-k, --top-p)");
    app.add_option("--temperature", temperature,
                   generating ? "sampling temperature; > 0 implies --sample (0 = greedy)" : "sampling temperature (1)")
        ->check(nonnegative());
    app.add_option("--top-k", top_k, "sample among the k likeliest tokens (0 = all)")->check(nonnegative());
    app.add_option("--top-p", top_p, "sample from the smallest set of tokens with probability >= p (1 = all)")
        ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"));
    app.add_option("--seed", seed, "random seed for sampling")->capture_default_str();
    if (generating)
      app.add_option("--max-new", max_new, "tokens to generate at most (default 100)")->check(positive());
    app.add_option("--max-tokens", max_tokens, "input tokens per decoding batch")->check(positive())->capture_default_str();
    app.add_flag("--no-cache", no_cache, "recompute the decoder over the whole prefix each step (slow; for comparison)");
  }
  /// The request for a run whose decode section is `decode`; `generating`: greedy unless
  /// told otherwise, at most --max-new tokens after the prompt.
  DecodeRequest request(DecodeOptions decode, bool generating) const {
    if (generating) decode.beam(1).max_len_a(0).max_len_b(max_new > 0 ? max_new : 100);
    if (beam > 0) decode.beam(beam);
    if (lenpen >= 0) decode.lenpen(lenpen);
    if (!formula.empty()) decode.lenpen_formula(parse_length_penalty(formula));
    DecodeRequest r;
    r.search.decode = decode;
    r.search.sample = sample || (generating && temperature > 0);
    if (temperature == 0 && sample) throw CLI::ValidationError("--temperature", "must be > 0 with --sample");
    r.search.sampling.temperature(temperature > 0 ? temperature : 1.0).top_k(top_k).top_p(top_p);
    if (top_p <= 0) throw CLI::ValidationError("--top-p", "must be in (0, 1], got 0");
    r.max_tokens = max_tokens;
    r.use_cache = !no_cache;
    torch::manual_seed(static_cast<uint64_t>(seed));
    return r;
  }
};

struct RunArgs {
  RuntimeFlags flags;
  SearchFlags search;
  std::string run_dir, checkpoint = "best";
  void add_to(CLI::App& cmd, bool generating = false) {
    cmd.add_option("--run", run_dir, "run directory from ropelab train")->required();
    cmd.add_option("--checkpoint", checkpoint, "best | last | FILE")->capture_default_str();
    flags.add_to(cmd);
    search.add_to(cmd, generating);
  }
  /// Loads the run on the chosen device with the chosen threads.
  LoadedRun open(torch::Device* device) const {
    *device = parse_device(flags.device_or("cpu"));
    set_threads(flags.threads < 0 ? 0 : flags.threads);
    return open_run(run_dir, checkpoint, *device);
  }
};

/// `command` decodes lines of one task; a run of another is a usage mistake.
void require_command(const LoadedRun& run, const std::string& run_dir, const std::string& command) {
  const auto& own = run.task->decode_command();
  if (own != command)
    throw std::runtime_error(run_dir + ": a " + run.task->model_noun() + " (task " + to_string(run.config.task) +
                             "); use ropelab " + own);
}

/// Decodes the lines of `in` (or `prompts`), printing one output line per input, `batch`
/// lines at a time.
void decode_stream(const LoadedRun& run, const DecodeRequest& request, const torch::Device& device,
                   const std::string& input, int64_t batch) {
  int64_t truncated = 0;
  std::vector<std::string> lines;
  auto flush = [&] {
    for (const auto& out : run.task->decode_lines(*run.model, *run.tokenizer, lines, request, device, &truncated))
      std::cout << out << '\n';
    std::cout << std::flush;
    lines.clear();
  };
  for_each_line(input.empty() ? "/dev/stdin" : input, [&](std::string& line, int64_t) {
    lines.push_back(std::move(line));
    if (static_cast<int64_t>(lines.size()) >= batch) flush();
  });
  flush();
  if (truncated > 0)
    std::cerr << "ropelab: warning: " << truncated << " lines longer than data.max_len=" << run.config.data.max_len()
              << " tokens were truncated" << std::endl;
}

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
    require_command(run, a->run_dir, "translate");
    decode_stream(run, a->search.request(run.config.decode, false), device, a->input, a->batch);
  });
}

void add_generate(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("generate", "continue prompts with a language model (task lm)");
  struct Args : RunArgs {
    std::vector<std::string> prompts;
  };
  auto a = std::make_shared<Args>();
  a->add_to(*cmd, true);
  cmd->add_option("--prompt", a->prompts, "prompt text (repeatable; default: one prompt per stdin line)");
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    require_command(run, a->run_dir, "generate");
    const auto request = a->search.request(run.config.decode, true);
    if (a->prompts.empty()) return decode_stream(run, request, device, "", 1);
    for (const auto& out : run.task->decode_lines(*run.model, *run.tokenizer, a->prompts, request, device))
      std::cout << out << std::endl;
  });
}

void add_eval(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("eval", "evaluate a split: BLEU, chrF and perplexity, or LM perplexity");
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
    std::string path = a->split;
    if (a->split == "test") path = run.config.data.test();
    if (a->split == "valid") path = run.config.data.valid();
    if (path.empty()) throw std::runtime_error(a->run_dir + "/config.yaml: data." + a->split + " is not set");
    const auto name = std::filesystem::path(a->split).filename().string();
    const auto report = run.task->evaluate(*run.model, *run.tokenizer, name, path,
                                           a->search.request(run.config.decode, false), a->context, device);
    const std::filesystem::path dir(a->run_dir);
    std::string wrote;
    if (!report.hypotheses.empty()) {
      const auto hyp_path = (dir / ("hyp." + name + ".txt")).string();
      std::ofstream hyp(hyp_path);
      for (const auto& h : report.hypotheses) hyp << h << '\n';
      wrote = hyp_path + " and ";
    }
    nlohmann::ordered_json json = {{"split", a->split}, {"checkpoint", a->checkpoint}};
    json.update(report.fields);
    const auto json_path = (dir / ("eval." + report.file_tag + ".json")).string();
    std::ofstream(json_path) << json.dump() << '\n';
    std::cout << report.summary << "\nwrote " << wrote << json_path << std::endl;
    for (const auto& w : report.warnings) std::cerr << "ropelab eval: warning: " << w << std::endl;
  });
}

}  // namespace ropelab::apps
