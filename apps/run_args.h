#pragma once
// Flags of the commands that load a trained run: --run, --checkpoint, --device, --threads
// and the search flags, which override the run's `decode` section.
#include <optional>
#include <string>

#include "commands.h"
#include "ropelab/config/config.h"
#include "ropelab/config/run_overrides.h"
#include "ropelab/model/precision.h"
#include "ropelab/run/eval_files.h"
#include "ropelab/run/run.h"
#include "ropelab/util/device.h"

namespace ropelab::apps {

/// Search flags; they override the run's `decode` section.
struct SearchFlags {
  int64_t beam = -1, max_new = -1, min_new = 0, top_k = 0, seed = 1, max_tokens = 2048;
  double lenpen = -1, temperature = -1, top_p = 1.0;
  std::string formula;
  bool sample = false, no_cache = false;
  void add_to(CLI::App& app, bool generating) {
    app.add_option("--beam", beam, "beam size (1 = greedy; default: the run's decode.beam)")->check(positive());
    app.add_option("--lenpen", lenpen, "length penalty alpha (default: the run's decode.lenpen)")->check(nonnegative());
    app.add_option("--lenpen-formula", formula, "gnmt: ((5+|Y|)/6)^alpha | average: |Y|^alpha")
        ->check(CLI::IsMember({"gnmt", "average"}));
    app.add_flag("--sample", sample, "sample each token instead of searching (see --temperature, --top-k, --top-p)");
    app.add_option("--temperature", temperature,
                   generating ? "sampling temperature; > 0 implies --sample (0 = greedy)" : "sampling temperature (1)")
        ->check(nonnegative());
    app.add_option("--top-k", top_k, "sample among the k likeliest tokens (0 = all)")->check(nonnegative());
    app.add_option("--top-p", top_p, "sample from the smallest set of tokens with probability >= p (1 = all)")
        ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"));
    app.add_option("--seed", seed, "random seed for sampling")->capture_default_str();
    if (generating) {
      app.add_option("--max-new", max_new, "tokens to generate at most (default 100)")->check(positive());
      app.add_option("--min-new", min_new, "tokens to generate before the end of text may come (default 0)")
          ->check(nonnegative());
    }
    app.add_option("--max-tokens", max_tokens, "input tokens per decoding batch")
        ->check(positive())
        ->capture_default_str();
    app.add_flag("--no-cache", no_cache,
                 "recompute the decoder over the whole prefix each step (slow; for comparison)");
  }
  /// The request for a run whose decode section is `decode`; `generating`: greedy unless
  /// told otherwise, at most --max-new tokens after the prompt.
  DecodeRequest request(DecodeOptions decode, bool generating) const {
    if (generating) decode.beam(1).max_len_a(0).max_len_b(max_new > 0 ? max_new : 100).min_len(min_new);
    if (beam > 0) decode.beam(beam);
    if (lenpen >= 0) decode.lenpen(lenpen);
    if (!formula.empty()) decode.lenpen_formula(parse_length_penalty(formula));
    DecodeRequest r;
    r.search.decode = decode;
    r.search.sample = sample || (generating && temperature > 0);
    if (temperature == 0 && sample) throw CLI::ValidationError("--temperature", "must be > 0 with --sample");
    r.search.sampling.temperature(temperature > 0 ? temperature : 1.0).top_k(top_k).top_p(top_p);
    if (top_p <= 0) throw CLI::ValidationError("--top-p", "must be in (0, 1], got 0");
    r.max_tokens = max_tokens;
    r.use_cache = !no_cache;
    torch::manual_seed(static_cast<uint64_t>(seed));
    return r;
  }
};

struct RunArgs {
  RuntimeFlags flags;
  SearchFlags search;
  std::string run_dir, checkpoint = "best";
  Precision precision = Precision::fp32;
  std::vector<std::string> overrides;
  /// The forward passes' arithmetic (model/precision.h) from open() to the end of the command.
  mutable std::optional<PrecisionScope> precision_scope;
  void add_to(CLI::App& cmd, bool generating = false) {
    cmd.add_option("--run", run_dir, "run directory from ropelab train")->required();
    cmd.add_option("--checkpoint", checkpoint, "best | last | FILE")->capture_default_str();
    cmd.add_option("--set", overrides,
                   "change the run's config for this command: " + run_override_keys() + " (repeatable)");
    add_precision_flag(cmd, precision,
                       "arithmetic of the forward passes: fp32, or bf16 (fp16 on CUDA) matrix products "
                       "(train.precision; the checkpoint stays fp32)");
    flags.add_to(cmd);
    search.add_to(cmd, generating);
  }
  /// What a report file of another precision than fp32 carries in its name (".bf16"), so that
  /// it sits beside the fp32 one instead of replacing it; "" for fp32.
  std::string precision_suffix() const { return precision == Precision::fp32 ? "" : "." + to_string(precision); }
  /// What a passkey or retrieval report carries in its name: the --set overrides
  /// (evaluation_tag, ".set_512_4"), then the precision's suffix, so that an evaluation under
  /// other settings (a window with sinks) sits beside the plain one instead of replacing it.
  std::string report_suffix() const { return evaluation_tag(overrides) + precision_suffix(); }
  /// Loads the run on the chosen device with the chosen threads, and turns its precision on.
  LoadedRun open(torch::Device* device) const {
    *device = flags.apply();
    auto run = open_run(run_dir, checkpoint, *device, yaml_config_files(), overrides);
    precision_scope.emplace(precision, *device);
    return run;
  }
};

}  // namespace ropelab::apps
