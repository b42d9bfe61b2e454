// ropelab bench attention: two attention variants by sequence length (src/ropelab/bench/attention_sweep.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "ropelab/bench/attention_sweep.h"

namespace ropelab::apps {

void add_bench_attention(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "attention",
      "two attention variants (softmax vs Performer, streaming vs materialized): time and peak memory by length");
  struct Args {
    BenchFlags flags;
    std::vector<int64_t> seq = {256, 1024, 4096, 16384};
    AttentionBenchOptions options;
    std::string modes = "both", child;  // child: one case, measured in this process
    std::vector<std::string> compare = {"softmax", "performer"};
    std::string bias = "none", tiles = "64x256";
    bool forward_only = false;
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
  cmd->add_option("--compare", a->compare, "the two variants: softmax, performer, streaming, chunked, materialized")
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::IsMember({"softmax", "performer", "streaming", "chunked", "materialized"}))
      ->capture_default_str();
  cmd->add_option("--bias", a->bias,
                  "logit bias: none, alibi (relative table), fire (per tile; dense for the materialized kernel)")
      ->check(CLI::IsMember({"none", "alibi", "fire"}))
      ->capture_default_str();
  cmd->add_flag("--forward-only", a->forward_only, "time the forward alone, without autograd");
  cmd->add_option("--tiles", a->tiles, "the streaming kernel's queries x keys per tile, QxK")
      ->check([](const std::string& text) -> std::string {
        long q = 0, k = 0;
        char x = 0, extra = 0;
        if (std::sscanf(text.c_str(), "%ld%c%ld%c", &q, &x, &k, &extra) != 3 || x != 'x' || q <= 0 || k <= 0)
          return "expected QxK with positive Q and K (e.g. 64x256), got '" + text + "'";
        return {};
      })
      ->capture_default_str();
  cmd->add_option("--child", a->child, "internal: TYPE,CAUSAL,T measured in this process")->group("");
  a->flags.add_to(*cmd, "one JSON object per row");
  cmd->callback([a] {
    const auto device = a->flags.apply();
    const auto threads = torch::get_num_threads();
    a->options.bias = parse_bench_bias(a->bias);
    a->options.backward = !a->forward_only;
    std::sscanf(a->tiles.c_str(), "%ldx%ld", &a->options.tiles.queries, &a->options.tiles.keys);
    if (!a->child.empty()) {  // one measurement, printed for the parent to read
      const auto r = bench_attention(parse_attention_case(a->child, a->options), device);
      std::printf("%.6f %.3f\n", r.timing.median, r.peak_mib);
      return;
    }
    std::vector<bool> modes;
    if (a->modes != "causal") modes.push_back(false);
    if (a->modes != "bidirectional") modes.push_back(true);
    const auto& o = a->options;
    const AttentionVariant variants[2] = {parse_attention_variant(a->compare[0]),
                                          parse_attention_variant(a->compare[1])};
    const std::string first = variants[0].name, second = variants[1].name;
    if (!a->flags.json)
      std::printf(
          "attention %s: B=%ld H=%ld Dh=%ld, bias %s, streaming tiles %s, Performer m=%ld, %s, %ld threads, median "
          "of %ld\n"
          "%-14s %7s %15s %15s %16s %16s %9s\n",
          o.backward ? "forward+backward" : "forward", static_cast<long>(o.batch), static_cast<long>(o.heads),
          static_cast<long>(o.head_dim), a->bias.c_str(), a->tiles.c_str(), static_cast<long>(o.features),
          device.str().c_str(), static_cast<long>(threads), static_cast<long>(o.repeats), "mode", "T",
          (first + " ms").c_str(), (second + " ms").c_str(), (first + " MiB").c_str(), (second + " MiB").c_str(),
          "ratio");
    auto cell = [](double x, const char* format) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, format, x);
      return x < 0 ? std::string("-") : std::string(buffer);
    };
    std::vector<int64_t> crossover{-1, -1};  // the first T where the second variant is faster, per mode
    sweep_attention(o, variants, a->seq, modes, device, threads,
                    std::filesystem::read_symlink("/proc/self/exe").string(), [&](const AttentionSweepRow& r) {
                      auto& at = crossover[r.causal ? 1 : 0];
                      if (r.speedup() > 1 && at < 0) at = r.length;
                      const char* mode = r.causal ? "causal" : "bidirectional";
                      if (!a->flags.json_line({{"bench", "attention"},
                                               {"mode", mode},
                                               {"pass", o.backward ? "forward+backward" : "forward"},
                                               {"bias", a->bias},
                                               {"tiles", a->tiles},
                                               {"T", r.length},
                                               {first + "_ms", r.ms[0]},
                                               {second + "_ms", r.ms[1]},
                                               {first + "_peak_mib", r.mib[0]},
                                               {second + "_peak_mib", r.mib[1]},
                                               {"threads", threads}}))
                        std::printf("%-14s %7ld %15s %15s %16s %16s %9s\n", mode, static_cast<long>(r.length),
                                    cell(r.ms[0], "%.1f").c_str(), cell(r.ms[1], "%.1f").c_str(),
                                    cell(r.mib[0], "%.0f").c_str(), cell(r.mib[1], "%.0f").c_str(),
                                    r.speedup() > 0 ? cell(r.speedup(), "%.2fx").c_str() : "-");
                      std::fflush(stdout);
                    });
    if (a->flags.json) return;
    for (bool causal : modes) {
      const auto at = crossover[causal ? 1 : 0];
      if (at > 0)
        std::printf("  %s: %s faster from T=%ld on\n", causal ? "causal" : "bidirectional", second.c_str(),
                    static_cast<long>(at));
      else
        std::printf("  %s: %s not faster at the lengths measured\n", causal ? "causal" : "bidirectional",
                    second.c_str());
    }
    std::printf("(ratio: %s ms / %s ms; '-': not run, where T x T tensors would not fit in memory)\n", first.c_str(),
                second.c_str());
  });
}

}  // namespace ropelab::apps
