// ropelab bench train, and the registration of every bench subcommand: timings for
// bench/README.md. Never part of the tests.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ropelab/bench/bench_reports.h"
#include "ropelab/model/precision.h"
#include "ropelab/util/device.h"
#include "ropelab/util/machine.h"
#include "ropelab/util/threads.h"

namespace ropelab::apps {

namespace {

/// The toy translator's shape (experiments/toy_en_es.yaml): d_model 256, 3+3 layers, 4 heads, d_ff 1024.
const std::vector<std::string> kTrainBenchDefaults = {"model.d_model=256", "model.heads=4", "model.d_ff=1024",
                                                      "model.encoder_layers=3", "model.decoder_layers=3"};

/// The model and batch a training benchmark runs: config files and --set (default: the toy
/// translator's shape), vocabulary, sentences and their length.
struct ModelArgs {
  ConfigSources sources;
  TrainBenchOptions options;

  void add_to(CLI::App& cmd) {
    cmd.add_option("CONFIG", sources.files,
                   "YAML config(s) for the model (default: d_model 256, 3+3 layers, "
                   "4 heads, d_ff 1024)")
        ->check(CLI::ExistingFile);
    cmd.add_option("--set", sources.overrides, "override a config key (repeatable)");
    cmd.add_option("--vocab", options.vocab_size, "vocabulary size")->capture_default_str()->check(positive());
    cmd.add_option("--batch", options.batch, "sentences per batch")->capture_default_str()->check(positive());
    cmd.add_option("--length", options.length, "tokens per sentence (source and target)")
        ->capture_default_str()
        ->check(positive());
  }

  Config config(const BenchFlags& flags) const {
    auto all = sources;
    if (all.files.empty())
      all.overrides.insert(all.overrides.begin(), kTrainBenchDefaults.begin(), kTrainBenchDefaults.end());
    flags.append_overrides(all.overrides);
    return load_config(all);
  }
};

void add_bench_train(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("train", "training target-tokens/s on fixed-shape synthetic batches");
  struct Args {
    BenchFlags flags;
    ModelArgs model;
    int64_t gemm_repeats = 5;
  };
  auto a = std::make_shared<Args>();
  a->model.add_to(*cmd);
  auto& options = a->model.options;
  cmd->add_option("--steps", options.steps, "timed updates")->capture_default_str()->check(positive());
  cmd->add_option("--warmup", options.warmup, "untimed updates first")->capture_default_str()->check(nonnegative());
  cmd->add_option("--profile", options.profile, "write a Chrome trace of the timed steps (LibTorch profiler)");
  cmd->add_option("--gemm-repeats", a->gemm_repeats,
                  "after the steps, time each of the update's matrix multiplications this often for the GEMM peak "
                  "(0: no utilisation)")
      ->capture_default_str()
      ->check(nonnegative());
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto config = a->model.config(a->flags);
    const auto device = use_device(config.train.device());
    const auto threads = set_threads(config.train.threads());
    const auto report = measure_train(config, a->model.options, device, threads, a->gemm_repeats);
    if (!a->flags.json_line(to_json(report))) print(report);
  });
}

void add_bench_gemm(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "gemm", "GEMM speed at the shapes of one training update of the model: the peak bench train compares with");
  struct Args {
    BenchFlags flags;
    ModelArgs model;
    Precision precision = Precision::fp32;
    int64_t repeats = 10;
  };
  auto a = std::make_shared<Args>();
  a->model.add_to(*cmd);
  add_precision_flag(*cmd, a->precision, "operand type: fp32, bf16 or fp16");
  cmd->add_option("--repeats", a->repeats, "timed calls per shape (median)")->capture_default_str()->check(positive());
  a->flags.add_to(*cmd, "one JSON object per shape, then one for the update");
  cmd->callback([a] {
    const auto config = a->model.config(a->flags);
    const auto& options = a->model.options;
    const auto device = use_device(config.train.device());
    if (a->precision == Precision::fp16 && !device.is_cuda())
      throw CLI::ValidationError("--precision", "fp16 runs on CUDA only (LibTorch 1.13 has no fp16 mm on the CPU)");
    const auto threads = set_threads(config.train.threads());
    GemmBenchReport report{config.train.device(), threads, a->precision,
                           bench_gemm(training_gemms(config, options.vocab_size, options.batch, options.length),
                                      matmul_dtype(a->precision), device, a->repeats),
                           machine_info()};
    if (!a->flags.json) return print(report);
    for (const auto& row : to_json_rows(report)) a->flags.json_line(row);
  });
}

}  // namespace

void add_bench(CLI::App& cli) {
  auto* bench = cli.add_subcommand("bench", "benchmarks (timings for reports; not tests)");
  bench->require_subcommand(1);
  add_bench_train(*bench);
  add_bench_gemm(*bench);
  add_bench_decode(*bench);     // bench_decode.cpp
  add_bench_rotary(*bench);     // bench_rotary.cpp
  add_bench_attention(*bench);  // bench_attention.cpp
}

}  // namespace ropelab::apps
