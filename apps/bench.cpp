// ropelab bench train, and the registration of every bench subcommand: timings for
// bench/README.md. Never part of the tests.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ropelab/bench/benchmarks.h"
#include "ropelab/util/runtime.h"

namespace ropelab::apps {

namespace {

/// The toy translator's shape (experiments/toy_en_es.yaml): d_model 256, 3+3 layers, 4 heads, d_ff 1024.
const std::vector<std::string> kTrainBenchDefaults = {"model.d_model=256", "model.heads=4", "model.d_ff=1024",
                                                      "model.encoder_layers=3", "model.decoder_layers=3"};

void add_bench_train(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("train", "training target-tokens/s on fixed-shape synthetic batches");
  struct Args {
    BenchFlags flags;
    ConfigSources sources;
    TrainBenchOptions options;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->sources.files,
                  "YAML config(s) for the model (default: d_model 256, 3+3 layers, "
                  "4 heads, d_ff 1024)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sources.overrides, "override a config key (repeatable)");
  cmd->add_option("--vocab", a->options.vocab_size, "vocabulary size")->capture_default_str();
  cmd->add_option("--batch", a->options.batch, "sentences per batch")->capture_default_str();
  cmd->add_option("--length", a->options.length, "tokens per sentence (source and target)")->capture_default_str();
  cmd->add_option("--steps", a->options.steps, "timed updates")->capture_default_str();
  cmd->add_option("--warmup", a->options.warmup, "untimed updates first")->capture_default_str();
  cmd->add_option("--profile", a->options.profile, "write a Chrome trace of the timed steps (LibTorch profiler)");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    auto sources = a->sources;
    if (sources.files.empty())
      sources.overrides.insert(sources.overrides.begin(), kTrainBenchDefaults.begin(), kTrainBenchDefaults.end());
    a->flags.append_overrides(sources.overrides);
    const auto config = load_config(sources);
    const auto device = use_device(config.train.device());
    const auto threads = set_threads(config.train.threads());
    const auto r = bench_train(config, a->options, device);
    if (a->flags.json_line({{"bench", "train"},
                            {"device", config.train.device()},
                            {"threads", threads},
                            {"parameters", r.parameters},
                            {"dropout_sites", r.dropout_sites},
                            {"batch", a->options.batch},
                            {"length", a->options.length},
                            {"step_median_s", r.step.median},
                            {"step_min_s", r.step.min},
                            {"step_max_s", r.step.max},
                            {"target_tokens_per_s", r.target_tokens_per_second}}))
      return;
    std::printf("ropelab train step: %ld parameters, batch %ld x %ld, %s, %ld threads\n",
                static_cast<long>(r.parameters), static_cast<long>(a->options.batch),
                static_cast<long>(a->options.length), config.train.device().c_str(), static_cast<long>(threads));
    std::printf("  step median %.1f ms (min %.1f, max %.1f, %ld steps)\n  %.0f target tokens/s\n", 1e3 * r.step.median,
                1e3 * r.step.min, 1e3 * r.step.max, static_cast<long>(r.step.repeats), r.target_tokens_per_second);
  });
}

}  // namespace

void add_bench(CLI::App& cli) {
  auto* bench = cli.add_subcommand("bench", "benchmarks (timings for reports; not tests)");
  bench->require_subcommand(1);
  add_bench_train(*bench);
  add_bench_decode(*bench);     // bench_decode.cpp
  add_bench_rotary(*bench);     // bench_rotary.cpp
  add_bench_attention(*bench);  // bench_attention.cpp
}

}  // namespace ropelab::apps
