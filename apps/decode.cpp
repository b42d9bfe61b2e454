// ropelab translate, ropelab generate: decoding lines with a trained run through its task
// (src/ropelab/task/).
#include <csignal>
#include <iostream>
#include <memory>

#include "ropelab/data/text.h"
#include "ropelab/util/stop_signals.h"
#include "run_args.h"

namespace ropelab::apps {

namespace {

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
  auto* cmd = cli.add_subcommand(
      "generate", "continue prompts with a language model (task lm), writing the text as it is produced");
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
    StopSignals signals;  // SIGINT (Ctrl-C), SIGTERM: stop after the current token
    auto stop = [&] {
      const int signal = signals.received();
      throw Interrupted(std::string("generate: interrupted (") + (signal == SIGINT ? "Ctrl-C" : "SIGTERM") +
                            "); the text produced so far is above",
                        128 + signal);
    };
    // each prompt's line: the prompt, then each token's text flushed as it comes
    auto emit = [&](const std::string& piece) {
      std::cout << piece << std::flush;
      return signals.received() == 0;
    };
    auto generate = [&](const std::string& prompt) {
      if (signals.received()) stop();
      run.task->stream_line(*run.model, *run.tokenizer, prompt, request, device, emit);
      std::cout << std::endl;
      if (signals.received()) stop();
    };
    if (a->prompts.empty()) for_each_line("/dev/stdin", [&](std::string& line, int64_t) { generate(line); });
    for (const auto& prompt : a->prompts) generate(prompt);
  });
}

}  // namespace ropelab::apps
