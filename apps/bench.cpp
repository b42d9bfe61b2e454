// ropelab bench train, and the registration of every bench subcommand: timings for
// bench/README.md. Never part of the tests.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ropelab/bench/benchmarks.h"
#include "ropelab/bench/gemm.h"
#include "ropelab/model/precision.h"
#include "ropelab/util/runtime.h"

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
    cmd.add_option("config", sources.files,
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

void add_machine(nlohmann::ordered_json& row, const MachineInfo& machine) {
  row["cpu"] = machine.cpu;
  row["aten_isa"] = machine.aten_isa;
  row["blas_core"] = machine.blas_core;
  row["thread_env"] = machine.thread_env;
}

void print_machine(const MachineInfo& machine) {
  std::printf("  %s; ATen kernels %s; OpenBLAS core %s; %s\n", machine.cpu.c_str(), machine.aten_isa.c_str(),
              machine.blas_core.empty() ? "(not OpenBLAS)" : machine.blas_core.c_str(),
              machine.thread_env.empty() ? "thread settings: defaults" : machine.thread_env.c_str());
}

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
    const auto& options = a->model.options;
    const auto device = use_device(config.train.device());
    const auto threads = set_threads(config.train.threads());
    const auto r = bench_train(config, options, device);
    const auto machine = machine_info();
    // The update's matrix multiplications, counted from the shapes, against their speed alone.
    std::vector<GemmShape> gemms;
    std::string no_count;
    try {
      gemms = training_gemms(config, options.vocab_size, options.batch, options.length);
    } catch (const std::invalid_argument& e) {
      no_count = e.what();
    }
    const double flops = total_flops(gemms), achieved = flops / r.step.median / 1e9;
    GemmBenchResult peak;
    const auto precision = config.train.precision();  // the peak at the training's matmul type
    if (!gemms.empty() && a->gemm_repeats > 0)
      peak = bench_gemm(gemms, matmul_dtype(precision), device, a->gemm_repeats);
    nlohmann::ordered_json row = {{"bench", "train"},
                                  {"device", config.train.device()},
                                  {"threads", threads},
                                  {"precision", to_string(precision)},
                                  {"parameters", r.parameters},
                                  {"dropout_sites", r.dropout_sites},
                                  {"batch", options.batch},
                                  {"length", options.length},
                                  {"step_median_s", r.step.median},
                                  {"step_min_s", r.step.min},
                                  {"step_max_s", r.step.max},
                                  {"target_tokens_per_s", r.target_tokens_per_second}};
    if (!gemms.empty()) {
      row["matmul_gflop_per_step"] = flops / 1e9;
      row["achieved_gflops"] = achieved;
    }
    if (peak.seconds > 0) {
      row["gemm_peak_gflops"] = peak.gflops();
      row["utilisation"] = achieved / peak.gflops();
    }
    add_machine(row, machine);
    if (a->flags.json_line(row)) return;
    std::printf("ropelab train step: %ld parameters, batch %ld x %ld, %s, %s, %ld threads\n",
                static_cast<long>(r.parameters), static_cast<long>(options.batch), static_cast<long>(options.length),
                to_string(precision).c_str(), config.train.device().c_str(), static_cast<long>(threads));
    print_machine(machine);
    std::printf("  step median %.1f ms (min %.1f, max %.1f, %ld steps)\n  %.0f target tokens/s\n", 1e3 * r.step.median,
                1e3 * r.step.min, 1e3 * r.step.max, static_cast<long>(r.step.repeats), r.target_tokens_per_second);
    if (gemms.empty()) {
      std::printf("  utilisation: not counted (%s)\n", no_count.c_str());
      return;
    }
    std::printf("  matmul work %.1f GFLOP per step: %.1f GFLOP/s achieved", flops / 1e9, achieved);
    if (peak.seconds > 0)
      std::printf(", %.1f%% of the GEMM peak at these shapes (%.1f GFLOP/s, %s, ropelab bench gemm)",
                  100.0 * achieved / peak.gflops(), peak.gflops(), to_string(precision).c_str());
    std::printf("\n");
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
    const auto r = bench_gemm(training_gemms(config, options.vocab_size, options.batch, options.length),
                              matmul_dtype(a->precision), device, a->repeats);
    const auto machine = machine_info();
    if (a->flags.json) {
      for (const auto& row : r.rows)
        a->flags.json_line({{"shape", row.shape.name},
                            {"batch", row.shape.batch},
                            {"m", row.shape.m},
                            {"n", row.shape.n},
                            {"k", row.shape.k},
                            {"count", row.shape.count},
                            {"dtype", c10::toString(row.dtype)},
                            {"median_s", row.timing.median},
                            {"gflops", row.gflops()}});
      nlohmann::ordered_json total = {{"bench", "gemm"},
                                      {"precision", to_string(a->precision)},
                                      {"device", config.train.device()},
                                      {"threads", threads},
                                      {"gflop_per_step", r.flops / 1e9},
                                      {"seconds_per_step", r.seconds},
                                      {"gemm_peak_gflops", r.gflops()}};
      add_machine(total, machine);
      a->flags.json_line(total);
      return;
    }
    std::printf("GEMMs of one training update, %s, %s, %ld threads\n", to_string(a->precision).c_str(),
                config.train.device().c_str(), static_cast<long>(threads));
    print_machine(machine);
    std::printf("  %-40s %-9s %6s %6s %6s %6s %5s %10s %9s\n", "product", "type", "batch", "m", "n", "k", "count",
                "median ms", "GFLOP/s");
    for (const auto& row : r.rows)
      std::printf("  %-40s %-9s %6ld %6ld %6ld %6ld %5ld %10.3f %9.1f\n", row.shape.name.c_str(),
                  c10::toString(row.dtype), static_cast<long>(row.shape.batch), static_cast<long>(row.shape.m),
                  static_cast<long>(row.shape.n), static_cast<long>(row.shape.k), static_cast<long>(row.shape.count),
                  1e3 * row.timing.median, row.gflops());
    std::printf("  update: %.1f GFLOP in %.1f ms of GEMMs: %.1f GFLOP/s\n", r.flops / 1e9, 1e3 * r.seconds, r.gflops());
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
