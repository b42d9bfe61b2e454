// ropelab bench rotary: the runtime table of Biderman et al. 2021 (additive embedding vs rotary
// implementations), src/ropelab/bench/benchmarks.h.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ropelab/bench/benchmarks.h"

namespace ropelab::apps {

void add_bench_rotary(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "rotary", "Biderman et al. 2021's runtime table: additive embedding vs rotary implementations");
  struct Args {
    BenchFlags flags;
    RotaryBenchOptions options;
    std::string dtype = "float";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->options.shape, "T,B,H,Dh of q and k (the layout of Biderman et al. 2021)")
      ->delimiter(',')
      ->expected(4);
  cmd->add_option("--repeats", a->options.repeats, "timed repeats (median reported)")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--dtype", a->dtype, kBenchDtypes)
      ->check(CLI::IsMember({"float", "double", "bfloat16", "float16"}))
      ->capture_default_str();
  a->flags.add_to(*cmd, "one JSON object per row");
  cmd->callback([a] {
    const auto device = a->flags.apply();
    const auto threads = torch::get_num_threads();
    auto& o = a->options;
    o.dtype = parse_bench_dtype(a->dtype);
    const auto rows = bench_rotary(o, device);
    if (!a->flags.json)
      std::printf("q, k [%ld, %ld, %ld, %ld] %s on %s, %ld threads, median of %ld\n%-10s %10s %8s %12s\n",
                  static_cast<long>(o.shape[0]), static_cast<long>(o.shape[1]), static_cast<long>(o.shape[2]),
                  static_cast<long>(o.shape[3]), a->dtype.c_str(), device.str().c_str(), static_cast<long>(threads),
                  static_cast<long>(o.repeats), "method", "ms", "ratio", "max |diff|");
    for (const auto& r : rows) {
      if (!a->flags.json_line({{"bench", "rotary"},
                               {"device", device.str()},
                               {"dtype", a->dtype},
                               {"shape", o.shape},
                               {"method", r.name},
                               {"median_ms", 1e3 * r.timing.median},
                               {"min_ms", 1e3 * r.timing.min},
                               {"ratio", r.ratio},
                               {"max_diff", r.max_diff},
                               {"threads", threads}}))
        std::printf("%-10s %10.2f %8.2f %12.2g\n", r.name.c_str(), 1e3 * r.timing.median, r.ratio, r.max_diff);
    }
  });
}

}  // namespace ropelab::apps
