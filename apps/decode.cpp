// ropelab translate, ropelab generate: decoding lines with a trained run through its task
// (src/ropelab/task/).
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>

#include "ropelab/data/text.h"
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

namespace {

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted = true; }

/// Ctrl-C sets `interrupted` while it lives, once: a second Ctrl-C ends the process as
/// usual. Without SA_RESTART, a read from stdin that it interrupts ends the input.
class InterruptFlag {
 public:
  InterruptFlag() {
    interrupted = false;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptFlag() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;

 private:
  struct sigaction previous_ {};
};

}  // namespace

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
    InterruptFlag flag;
    // each prompt's line: the prompt, then each token's text flushed as it comes
    auto emit = [](const std::string& piece) {
      std::cout << piece << std::flush;
      return !interrupted;
    };
    auto generate = [&](const std::string& prompt) {
      const bool ended =
          !interrupted && run.task->stream_line(*run.model, *run.tokenizer, prompt, request, device, emit);
      if (!interrupted || !ended) std::cout << std::endl;
      if (interrupted) throw Interrupted("generate: interrupted (Ctrl-C); the text produced so far is above");
    };
    if (a->prompts.empty()) for_each_line("/dev/stdin", [&](std::string& line, int64_t) { generate(line); });
    for (const auto& prompt : a->prompts) generate(prompt);
    if (interrupted) throw Interrupted("generate: interrupted (Ctrl-C)");
  });
}

}  // namespace ropelab::apps
