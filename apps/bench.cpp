// ropelab bench ...: timing tables for the README's figures. Never part of the tests.
#include "commands.h"

#include "ropelab/bench/benchmarks.h"
#include "ropelab/eval/evaluate.h"
#include "ropelab/train/run.h"
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

void add_bench_decode(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("decode", "beam decoding with the key/value cache vs recomputing the prefix");
  struct Args {
    RuntimeFlags flags;
    std::string run_dir, split = "test", checkpoint = "best";
    int64_t beam = 4;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--run", a->run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--split", a->split, "test | valid | FILE")->capture_default_str();
  cmd->add_option("--checkpoint", a->checkpoint, "best | last | FILE")->capture_default_str();
  cmd->add_option("--beam", a->beam, "beam size")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = parse_device(a->flags.device_or("cpu"));
    const auto threads = set_threads(a->flags.threads < 0 ? 0 : a->flags.threads);
    auto run = open_run(a->run_dir, a->checkpoint, device);
    const auto path = a->split == "test" ? run.config.data.test() : a->split == "valid" ? run.config.data.valid() : a->split;
    TranslateOptions options;
    options.decode = run.config.decode;
    options.decode.beam(a->beam);
    const auto r = bench_decode(run, path, options, device);
    const double speedup = r.uncached_seconds / r.cached_seconds;
    if (a->json) {
      std::printf("{\"bench\":\"decode\",\"sentences\":%ld,\"beam\":%ld,\"threads\":%ld,\"cached_s\":%.3f,"
                  "\"uncached_s\":%.3f,\"speedup\":%.2f,\"identical\":%ld}\n",
                  static_cast<long>(r.sentences), static_cast<long>(a->beam), static_cast<long>(threads),
                  r.cached_seconds, r.uncached_seconds, speedup, static_cast<long>(r.identical));
    } else {
      std::printf("beam %ld decoding of %ld sentences (%s), %ld threads\n", static_cast<long>(a->beam),
                  static_cast<long>(r.sentences), path.c_str(), static_cast<long>(threads));
      std::printf("  cached keys/values:  %8.2f s\n  recomputed prefix:   %8.2f s\n  speedup %.2fx, identical "
                  "outputs %ld/%ld\n",
                  r.cached_seconds, r.uncached_seconds, speedup, static_cast<long>(r.identical),
                  static_cast<long>(r.sentences));
    }
  });
}

void add_bench_rotary(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("rotary", "seed 000's runtime table: additive embedding vs rotary implementations");
  struct Args {
    RuntimeFlags flags;
    std::vector<int64_t> shape = {2048, 16, 12, 64};
    int64_t repeats = 10;
    std::string dtype = "float";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->shape, "T,B,H,Dh of q and k (the seed's layout)")->delimiter(',')->expected(4);
  cmd->add_option("--repeats", a->repeats, "timed repeats (median reported)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "float | double | bfloat16")
      ->check(CLI::IsMember({"float", "double", "bfloat16"}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object per row");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = parse_device(a->flags.device_or("cpu"));
    const auto threads = set_threads(a->flags.threads < 0 ? 0 : a->flags.threads);
    const auto dtype = a->dtype == "double" ? torch::kDouble : a->dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
    const auto rows = bench_rotary(a->shape, device, dtype, a->repeats);
    if (!a->json)
      std::printf("q, k [%ld, %ld, %ld, %ld] %s on %s, %ld threads, median of %ld\n%-10s %10s %8s %12s\n",
                  static_cast<long>(a->shape[0]), static_cast<long>(a->shape[1]), static_cast<long>(a->shape[2]),
                  static_cast<long>(a->shape[3]), a->dtype.c_str(), device.str().c_str(), static_cast<long>(threads),
                  static_cast<long>(a->repeats), "method", "ms", "ratio", "max |diff|");
    for (const auto& r : rows) {
      if (a->json)
        std::printf("{\"bench\":\"rotary\",\"method\":\"%s\",\"median_ms\":%.3f,\"min_ms\":%.3f,\"ratio\":%.3f,"
                    "\"max_diff\":%.3g,\"threads\":%ld}\n",
                    r.name.c_str(), 1e3 * r.timing.median, 1e3 * r.timing.min, r.ratio, r.max_diff,
                    static_cast<long>(threads));
      else
        std::printf("%-10s %10.2f %8.2f %12.2g\n", r.name.c_str(), 1e3 * r.timing.median, r.ratio, r.max_diff);
    }
  });
}

}  // namespace

void add_bench(CLI::App& cli) {
  auto* bench = cli.add_subcommand("bench", "benchmarks (timings for reports; not tests)");
  bench->require_subcommand(1);
  add_bench_train(*bench);
  add_bench_decode(*bench);
  add_bench_rotary(*bench);
}

}  // namespace ropelab::apps
