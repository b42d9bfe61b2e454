// ropelab bench ...: timing tables for the README's figures. Never part of the tests.
#include "commands.h"

#include "ropelab/bench/benchmarks.h"
#include "ropelab/run/run.h"
#include "ropelab/util/runtime.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

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
  cmd->add_option("--beam", a->beam, "beam size")->check(positive())->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = parse_device(a->flags.device_or("cpu"));
    const auto threads = set_threads(a->flags.threads < 0 ? 0 : a->flags.threads);
    auto run = open_run(a->run_dir, a->checkpoint, device);
    const auto path = a->split == "test" ? run.config.data.test() : a->split == "valid" ? run.config.data.valid() : a->split;
    DecodeRequest request;
    request.search.decode = run.config.decode;
    request.search.decode.beam(a->beam);
    const auto r = bench_decode(run, path, request, device);
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
  cmd->add_option("--repeats", a->repeats, "timed repeats (median reported)")->check(positive())->capture_default_str();
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

/// MemAvailable from /proc/meminfo in bytes (0 if unknown).
double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return 0;
}

void add_bench_attention(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "attention", "softmax vs Performer attention: forward+backward time and peak memory by sequence length");
  struct Args {
    RuntimeFlags flags;
    std::vector<int64_t> seq = {256, 1024, 4096, 16384};
    AttentionBenchOptions options;
    std::string modes = "both";
    std::string child;  // internal: one case, measured in its own process
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--seq", a->seq, "sequence lengths")->delimiter(',');
  cmd->add_option("--batch", a->options.batch, "B")->check(positive())->capture_default_str();
  cmd->add_option("--heads", a->options.heads, "H")->check(positive())->capture_default_str();
  cmd->add_option("--head-dim", a->options.head_dim, "Dh")->check(positive())->capture_default_str();
  cmd->add_option("--features", a->options.features, "Performer random features m")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--repeats", a->options.repeats, "timed repeats (median reported)")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--mode", a->modes, "bidirectional | causal | both")
      ->check(CLI::IsMember({"bidirectional", "causal", "both"}))
      ->capture_default_str();
  cmd->add_option("--child", a->child, "internal: TYPE,CAUSAL,T measured in this process")->group("");
  cmd->add_flag("--json", a->json, "one JSON object per row");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = parse_device(a->flags.device_or("cpu"));
    const auto threads = set_threads(a->flags.threads < 0 ? 0 : a->flags.threads);
    if (!a->child.empty()) {  // one measurement, printed for the parent to read
      auto o = a->options;
      std::string type;
      int causal = 0;
      std::istringstream fields(a->child);
      std::getline(fields, type, ',');
      char comma = 0;
      fields >> causal >> comma >> o.length;
      o.type = parse_attention_type(type);
      o.causal = causal != 0;
      const auto r = bench_attention(o, device);
      std::printf("%.6f %.3f\n", r.timing.median, r.peak_mib);
      return;
    }
    const auto exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<bool> modes;
    if (a->modes != "causal") modes.push_back(false);
    if (a->modes != "bidirectional") modes.push_back(true);
    const auto& o = a->options;
    if (!a->json)
      std::printf("attention forward+backward: B=%ld H=%ld Dh=%ld, Performer m=%ld, %s, %ld threads, median of %ld\n"
                  "%-14s %7s %12s %12s %14s %14s %9s\n",
                  static_cast<long>(o.batch), static_cast<long>(o.heads), static_cast<long>(o.head_dim),
                  static_cast<long>(o.features), device.str().c_str(), static_cast<long>(threads),
                  static_cast<long>(o.repeats), "mode", "T", "softmax ms", "performer ms", "softmax MiB",
                  "performer MiB", "speedup");
    for (bool causal : modes) {
      int64_t crossover = -1;
      for (int64_t T : a->seq) {
        double ms[2] = {-1, -1}, mib[2] = {-1, -1};
        for (int b = 0; b < 2; ++b) {
          const auto type = b == 0 ? AttentionType::softmax : AttentionType::performer;
          // Softmax keeps about three (B, H, T, T) float tensors alive: skip what cannot fit.
          const double need = 3.0 * 4.0 * static_cast<double>(o.batch * o.heads) * static_cast<double>(T) *
                              static_cast<double>(T);
          if (type == AttentionType::softmax && device.is_cpu() && need > 0.6 * available_memory_bytes()) continue;
          std::ostringstream command;
          command << exe << " bench attention --child " << to_string(type) << "," << (causal ? 1 : 0) << "," << T
                  << " --batch " << o.batch << " --heads " << o.heads << " --head-dim " << o.head_dim
                  << " --features " << o.features << " --repeats " << o.repeats << " --device " << device.str()
                  << " --threads " << threads;
          FILE* pipe = popen(command.str().c_str(), "r");
          if (!pipe) throw std::runtime_error("bench attention: cannot start " + exe);
          double seconds = -1, peak = -1;
          const int read = std::fscanf(pipe, "%lf %lf", &seconds, &peak);
          const int status = pclose(pipe);
          if (read == 2 && status == 0) ms[b] = 1e3 * seconds, mib[b] = peak;
        }
        const double speedup = ms[0] > 0 && ms[1] > 0 ? ms[0] / ms[1] : 0;
        if (speedup > 1 && crossover < 0) crossover = T;
        const char* mode = causal ? "causal" : "bidirectional";
        if (a->json) {
          std::printf("{\"bench\":\"attention\",\"mode\":\"%s\",\"T\":%ld,\"softmax_ms\":%.3f,"
                      "\"performer_ms\":%.3f,\"softmax_peak_mib\":%.1f,\"performer_peak_mib\":%.1f,"
                      "\"threads\":%ld}\n",
                      mode, static_cast<long>(T), ms[0], ms[1], mib[0], mib[1], static_cast<long>(threads));
        } else {
          auto cell = [](double x, const char* fmt) {
            char buf[32];
            if (x < 0) return std::string("-");
            std::snprintf(buf, sizeof buf, fmt, x);
            return std::string(buf);
          };
          std::printf("%-14s %7ld %12s %12s %14s %14s %9s\n", mode, static_cast<long>(T), cell(ms[0], "%.1f").c_str(),
                      cell(ms[1], "%.1f").c_str(), cell(mib[0], "%.0f").c_str(), cell(mib[1], "%.0f").c_str(),
                      speedup > 0 ? cell(speedup, "%.2fx").c_str() : "-");
        }
        std::fflush(stdout);
      }
      if (!a->json) {
        if (crossover > 0)
          std::printf("  %s: Performer faster from T=%ld on\n", causal ? "causal" : "bidirectional",
                      static_cast<long>(crossover));
        else
          std::printf("  %s: Performer not faster at the lengths measured\n", causal ? "causal" : "bidirectional");
      }
    }
    if (!a->json) std::printf("('-': not run; softmax is skipped where its T x T tensors would not fit in memory)\n");
  });
}

}  // namespace

void add_bench(CLI::App& cli) {
  auto* bench = cli.add_subcommand("bench", "benchmarks (timings for reports; not tests)");
  bench->require_subcommand(1);
  add_bench_train(*bench);
  add_bench_decode(*bench);
  add_bench_rotary(*bench);
  add_bench_attention(*bench);
}

}  // namespace ropelab::apps
