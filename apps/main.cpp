// ropelab: one executable, git-style subcommands. Each subcommand parses its flags,
// builds typed options through the config module and calls the library.
#include "ropelab/build_config.h"
#include "ropelab/config/config.h"
#include "ropelab/data/corpus.h"
#include "ropelab/decode/search.h"
#include "ropelab/train/run.h"
#include "ropelab/train/trainer.h"
#include "ropelab/util/runtime.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

namespace {

using namespace ropelab;

/// Flags every subcommand that touches tensors shares.
struct RuntimeFlags {
  std::string device;
  int64_t threads = -1;
  void add_to(CLI::App& app) {
    app.add_option("--device", device, "cpu | cuda | cuda:N (default: the config's train.device, else cpu)");
    app.add_option("--threads", threads, "intra-op threads, 0 = all cores (default: the config's, else all)")
        ->check(CLI::NonNegativeNumber);
  }
  /// --device/--threads become overrides of the config keys they stand for.
  void append_overrides(std::vector<std::string>& overrides) const {
    if (!device.empty()) overrides.push_back("train.device=" + device);
    if (threads >= 0) overrides.push_back("train.threads=" + std::to_string(threads));
  }
};

void add_train(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("train", "train a model from YAML configs");
  auto flags = std::make_shared<RuntimeFlags>();
  auto sources = std::make_shared<ConfigSources>();
  auto run_dir = std::make_shared<std::string>();
  auto resume = std::make_shared<bool>(false);
  auto dump = std::make_shared<bool>(false);
  cmd->add_option("config", sources->files, "YAML config file(s); later files win")->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", sources->files, "further YAML config files")->check(CLI::ExistingFile);
  cmd->add_option("--set", sources->overrides, "override a key: --set model.d_model=256 (repeatable)");
  cmd->add_option("-o,--run-dir", *run_dir, "run directory for checkpoints, tokenizer, logs")->default_val("runs/run");
  cmd->add_flag("--resume", *resume, "continue the run in --run-dir from its last checkpoint");
  cmd->add_flag("--dump-config", *dump, "print the merged config as YAML and exit");
  flags->add_to(*cmd);
  cmd->callback([=] {
    auto s = *sources;
    if (*resume) {  // the run's own config, then any overrides given now
      const RunPaths paths(*run_dir);
      s.files = {paths.config};
    } else if (s.files.empty()) {
      throw CLI::ValidationError("train", "a config file is required (ropelab train CONFIG.yaml)");
    }
    flags->append_overrides(s.overrides);
    auto config = load_config(s);
    if (*dump) {
      std::cout << dump_config(config);
      return;
    }
    train(config, *run_dir, *resume);
  });
}

void add_translate(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("translate", "translate lines from stdin (or --input) to stdout");
  auto flags = std::make_shared<RuntimeFlags>();
  auto run_dir = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto checkpoint = std::make_shared<std::string>("best");
  auto batch_size = std::make_shared<int64_t>(32);
  cmd->add_option("--run", *run_dir, "run directory from ropelab train")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--input", *input, "file to translate (default: stdin)")->check(CLI::ExistingFile);
  cmd->add_option("--checkpoint", *checkpoint, "best | last | FILE")->capture_default_str();
  cmd->add_option("--batch", *batch_size, "sentences per batch")->check(CLI::PositiveNumber)->capture_default_str();
  flags->add_to(*cmd);
  cmd->callback([=] {
    const auto device = parse_device(flags->device.empty() ? "cpu" : flags->device);
    set_threads(flags->threads < 0 ? 0 : flags->threads);
    auto run = open_run(*run_dir, *checkpoint, device);
    std::ifstream file;
    if (!input->empty()) file.open(*input);
    std::istream& in = input->empty() ? std::cin : file;
    const std::string name = input->empty() ? "<stdin>" : *input;

    std::vector<std::string> lines;
    int64_t line_number = 0;
    auto flush = [&] {
      // Empty lines pass through as empty lines; the rest are decoded as one batch.
      std::vector<Example> examples;
      std::vector<size_t> rows;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].empty()) continue;
        auto ids = run.tokenizer->encode(lines[i]);
        ids.resize(std::min<size_t>(ids.size(), static_cast<size_t>(run.config.data.max_len() - 1)));
        rows.push_back(examples.size());
        examples.push_back({std::move(ids), {}});
      }
      std::vector<Hypothesis> hyps;
      if (!examples.empty()) {
        std::vector<size_t> all(examples.size());
        std::iota(all.begin(), all.end(), 0);
        hyps = greedy_search(run.model, collate(examples, all, device).source, run.config.decode);
      }
      size_t h = 0;
      for (const auto& l : lines) std::cout << (l.empty() ? "" : run.tokenizer->decode(hyps[h++].tokens)) << '\n';
      std::cout << std::flush;
      lines.clear();
    };
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!valid_utf8(line)) throw std::runtime_error(name + ":" + std::to_string(line_number) + ": invalid UTF-8");
      lines.push_back(line);
      if (static_cast<int64_t>(lines.size()) >= *batch_size) flush();
    }
    flush();
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"ropelab: Transformers and their position encodings, in C++ (LibTorch)"};
  cli.set_version_flag("--version", std::string("ropelab ") + ROPELAB_VERSION);
  cli.require_subcommand(1);
  add_train(cli);
  add_translate(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  } catch (const ConfigError& e) {
    std::cerr << "ropelab: config error: " << e.what() << std::endl;
    return 2;
  } catch (const c10::Error& e) {
    std::cerr << "ropelab: error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ropelab: error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
