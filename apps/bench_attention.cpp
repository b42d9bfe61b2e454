// ropelab bench attention: two attention variants by sequence length (src/ropelab/bench/attention_sweep.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "ropelab/bench/attention_sweep_report.h"

namespace ropelab::apps {

namespace {

struct AttentionArgs {
  BenchFlags flags;
  std::vector<int64_t> seq = {256, 1024, 4096, 16384};
  AttentionBenchOptions options;
  std::string modes = "both", child;  // child: one case, measured in this process
  std::vector<std::string> compare = {"softmax", "performer"};
  std::string bias = "none", tiles = "64x256", dtype = "float";
  bool forward_only = false;

  /// The options as the benchmark takes them (bias, dtype, tiles, the pass).
  void resolve() {
    options.bias = parse_bench_bias(bias);
    options.dtype = parse_bench_dtype(dtype);
    if (options.sinks > 0 && options.window == 0)
      throw CLI::ValidationError("--sinks", "sinks are the keys seen beside a window: give --window too");
    options.backward = !forward_only;
    std::sscanf(tiles.c_str(), "%ldx%ld", &options.tiles.queries, &options.tiles.keys);
  }
};

/// What each attention call computes, beside its shape: bias, dtype, window, sinks, pass, tiles.
void add_call_options(CLI::App* cmd, AttentionArgs& a) {
  cmd->add_option("--bias", a.bias,
                  "logit bias: none, alibi, kerple, t5 (relative tables), fire (per tile; dense for the "
                  "materialized kernel); the learned ones' gradients in the backward")
      ->check(CLI::IsMember({"none", "alibi", "kerple", "t5", "fire"}))
      ->capture_default_str();
  cmd->add_option("--dtype", a.dtype, std::string(kBenchDtypes) + " (q, k, v and the bias)")
      ->check(CLI::IsMember({"float", "double", "bfloat16", "float16"}))
      ->capture_default_str();
  cmd->add_option("--window", a.options.window, "sliding window of keys per query (0: every key)")
      ->check(nonnegative())
      ->capture_default_str();
  cmd->add_option("--sinks", a.options.sinks, "with a window: the first keys every query sees")
      ->check(nonnegative())
      ->capture_default_str();
  cmd->add_flag("--forward-only", a.forward_only, "time the forward alone, without autograd");
  cmd->add_option("--tiles", a.tiles, "the streaming kernel's queries x keys per tile, QxK")
      ->check([](const std::string& text) -> std::string {
        long q = 0, k = 0;
        char x = 0, extra = 0;
        if (std::sscanf(text.c_str(), "%ld%c%ld%c", &q, &x, &k, &extra) != 3 || x != 'x' || q <= 0 || k <= 0)
          return "expected QxK with positive Q and K (e.g. 64x256), got '" + text + "'";
        return {};
      })
      ->capture_default_str();
}

}  // namespace

void add_bench_attention(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "attention",
      "two attention variants (softmax vs Performer, streaming vs materialized): time and peak memory by length");
  auto a = std::make_shared<AttentionArgs>();
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
  add_call_options(cmd, *a);
  cmd->add_option("--child", a->child, "internal: TYPE,CAUSAL,T measured in this process")->group("");
  a->flags.add_to(*cmd, "one JSON object per row");
  cmd->callback([a] {
    const auto device = a->flags.apply();
    const auto threads = torch::get_num_threads();
    a->resolve();
    if (!a->child.empty()) {  // one measurement, printed for the parent to read
      const auto r = bench_attention(parse_attention_case(a->child, a->options), device);
      std::printf("%.6f %.3f\n", r.timing.median, r.peak_mib);
      return;
    }
    std::vector<bool> modes;
    if (a->modes != "causal") modes.push_back(false);
    if (a->modes != "bidirectional") modes.push_back(true);
    const AttentionVariant variants[2] = {parse_attention_variant(a->compare[0]),
                                          parse_attention_variant(a->compare[1])};
    if (const auto error = sweep_bias_error(variants, a->options.bias); !error.empty())
      throw CLI::ValidationError("--bias", error);
    AttentionSweepReport report(a->options, variants, a->bias, a->tiles, device.str(), threads);
    if (!a->flags.json) report.print_header();
    sweep_attention(a->options, variants, a->seq, modes, device, threads,
                    std::filesystem::read_symlink("/proc/self/exe").string(), [&](const AttentionSweepRow& row) {
                      report.record(row);
                      if (!a->flags.json_line(report.json(row))) report.print_row(row);
                      std::fflush(stdout);
                    });
    if (!a->flags.json) report.print_footer(modes);
  });
}

}  // namespace ropelab::apps
