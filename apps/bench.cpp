// ropelab bench ...: timing tables for the README's figures. Never part of the tests.
#include "commands.h"

#include "ropelab/bench/benchmarks.h"
#include "ropelab/util/runtime.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace ropelab::apps {

namespace {

/// The translator-sized model of the speed target: d_model 256, 3+3 layers, 4 heads, d_ff 1024.
const std::vector<std::string> kTrainBenchDefaults = {"model.d_model=256", "model.heads=4", "model.d_ff=1024",
                                                      "model.encoder_layers=3", "model.decoder_layers=3"};

void add_bench_train(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("train", "training target-tokens/s on fixed-shape synthetic batches");
  struct Args {
    RuntimeFlags flags;
    ConfigSources sources;
    TrainBenchOptions options;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->sources.files, "YAML config(s) for the model (default: d_model 256, 3+3 layers, "
                                              "4 heads, d_ff 1024)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sources.overrides, "override a config key (repeatable)");
  cmd->add_option("--vocab", a->options.vocab_size, "vocabulary size")->capture_default_str();
  cmd->add_option("--batch", a->options.batch, "sentences per batch")->capture_default_str();
  cmd->add_option("--length", a->options.length, "tokens per sentence (source and target)")->capture_default_str();
  cmd->add_option("--steps", a->options.steps, "timed updates")->capture_default_str();
  cmd->add_option("--warmup", a->options.warmup, "untimed updates first")->capture_default_str();
  cmd->add_option("--profile", a->options.profile, "write a Chrome trace of the timed steps (LibTorch profiler)");
  cmd->add_flag("--json", a->json, "one JSON object");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    auto sources = a->sources;
    if (sources.files.empty())
      sources.overrides.insert(sources.overrides.begin(), kTrainBenchDefaults.begin(), kTrainBenchDefaults.end());
    a->flags.append_overrides(sources.overrides);
    const auto config = load_config(sources);
    const auto device = parse_device(config.train.device());
    const auto threads = set_threads(config.train.threads());
    const auto r = bench_train(config, a->options, device);
    if (a->json) {
      std::printf("{\"bench\":\"train\",\"device\":\"%s\",\"threads\":%ld,\"parameters\":%ld,\"batch\":%ld,"
                  "\"length\":%ld,\"step_median_s\":%.6f,\"step_min_s\":%.6f,\"step_max_s\":%.6f,"
                  "\"target_tokens_per_s\":%.1f}\n",
                  config.train.device().c_str(), static_cast<long>(threads), static_cast<long>(r.parameters),
                  static_cast<long>(a->options.batch), static_cast<long>(a->options.length), r.step.median, r.step.min,
                  r.step.max, r.target_tokens_per_second);
    } else {
      std::printf("ropelab train step: %ld parameters, batch %ld x %ld, %s, %ld threads\n",
                  static_cast<long>(r.parameters), static_cast<long>(a->options.batch),
                  static_cast<long>(a->options.length), config.train.device().c_str(), static_cast<long>(threads));
      std::printf("  step median %.1f ms (min %.1f, max %.1f, %ld steps)\n  %.0f target tokens/s\n",
                  1e3 * r.step.median, 1e3 * r.step.min, 1e3 * r.step.max, static_cast<long>(r.step.repeats),
                  r.target_tokens_per_second);
    }
  });
}

}  // namespace

void add_bench(CLI::App& cli) {
  auto* bench = cli.add_subcommand("bench", "benchmarks (timings for reports; not tests)");
  bench->require_subcommand(1);
  add_bench_train(*bench);
}

}  // namespace ropelab::apps
