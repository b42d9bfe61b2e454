// ropelab bench attention: softmax vs Performer by sequence length (src/ropelab/bench/attention_sweep.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "ropelab/bench/attention_sweep.h"

namespace ropelab::apps {

void add_bench_attention(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "attention", "softmax vs Performer attention: forward+backward time and peak memory by sequence length");
  struct Args {
    BenchFlags flags;
    std::vector<int64_t> seq = {256, 1024, 4096, 16384};
    AttentionBenchOptions options;
    std::string modes = "both", child;  // child: one case, measured in this process
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
  a->flags.add_to(*cmd, "one JSON object per row");
  cmd->callback([a] {
    const auto device = a->flags.apply();
    const auto threads = torch::get_num_threads();
    if (!a->child.empty()) {  // one measurement, printed for the parent to read
      const auto r = bench_attention(parse_attention_case(a->child, a->options), device);
      std::printf("%.6f %.3f\n", r.timing.median, r.peak_mib);
      return;
    }
    std::vector<bool> modes;
    if (a->modes != "causal") modes.push_back(false);
    if (a->modes != "bidirectional") modes.push_back(true);
    const auto& o = a->options;
    if (!a->flags.json)
      std::printf(
          "attention forward+backward: B=%ld H=%ld Dh=%ld, Performer m=%ld, %s, %ld threads, median of %ld\n"
          "%-14s %7s %12s %12s %14s %14s %9s\n",
          static_cast<long>(o.batch), static_cast<long>(o.heads), static_cast<long>(o.head_dim),
          static_cast<long>(o.features), device.str().c_str(), static_cast<long>(threads), static_cast<long>(o.repeats),
          "mode", "T", "softmax ms", "performer ms", "softmax MiB", "performer MiB", "speedup");
    auto cell = [](double x, const char* format) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, format, x);
      return x < 0 ? std::string("-") : std::string(buffer);
    };
    std::vector<int64_t> crossover{-1, -1};  // the first T where Performer is faster, per mode
    sweep_attention(o, a->seq, modes, device, threads, std::filesystem::read_symlink("/proc/self/exe").string(),
                    [&](const AttentionSweepRow& r) {
                      auto& first = crossover[r.causal ? 1 : 0];
                      if (r.speedup() > 1 && first < 0) first = r.length;
                      const char* mode = r.causal ? "causal" : "bidirectional";
                      if (!a->flags.json_line({{"bench", "attention"},
                                               {"mode", mode},
                                               {"T", r.length},
                                               {"softmax_ms", r.ms[0]},
                                               {"performer_ms", r.ms[1]},
                                               {"softmax_peak_mib", r.mib[0]},
                                               {"performer_peak_mib", r.mib[1]},
                                               {"threads", threads}}))
                        std::printf("%-14s %7ld %12s %12s %14s %14s %9s\n", mode, static_cast<long>(r.length),
                                    cell(r.ms[0], "%.1f").c_str(), cell(r.ms[1], "%.1f").c_str(),
                                    cell(r.mib[0], "%.0f").c_str(), cell(r.mib[1], "%.0f").c_str(),
                                    r.speedup() > 0 ? cell(r.speedup(), "%.2fx").c_str() : "-");
                      std::fflush(stdout);
                    });
    if (a->flags.json) return;
    for (bool causal : modes) {
      const auto first = crossover[causal ? 1 : 0];
      if (first > 0)
        std::printf("  %s: Performer faster from T=%ld on\n", causal ? "causal" : "bidirectional",
                    static_cast<long>(first));
      else
        std::printf("  %s: Performer not faster at the lengths measured\n", causal ? "causal" : "bidirectional");
    }
    std::printf("('-': not run; softmax is skipped where its T x T tensors would not fit in memory)\n");
  });
}

}  // namespace ropelab::apps
