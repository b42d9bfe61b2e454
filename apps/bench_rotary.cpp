// ropelab bench rotary: the runtime table of Biderman et al. 2021 (additive embedding vs rotary
// implementations), src/ropelab/bench/benchmarks.h.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ropelab/bench/benchmarks.h"
#include "ropelab/util/runtime.h"

namespace ropelab::apps {

void add_bench_rotary(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "rotary", "Biderman et al. 2021's runtime table: additive embedding vs rotary implementations");
  struct Args {
    RuntimeFlags flags;
    std::vector<int64_t> shape = {2048, 16, 12, 64};
    int64_t repeats = 10;
    std::string dtype = "float";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->shape, "T,B,H,Dh of q and k (the layout of Biderman et al. 2021)")
      ->delimiter(',')
      ->expected(4);
  cmd->add_option("--repeats", a->repeats, "timed repeats (median reported)")->check(positive())->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "float | double | bfloat16")
      ->check(CLI::IsMember({"float", "double", "bfloat16"}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object per row");
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = parse_device(a->flags.device_or("cpu"));
    const auto threads = set_threads(a->flags.threads < 0 ? 0 : a->flags.threads);
    const auto dtype = a->dtype == "double"     ? torch::kDouble
                       : a->dtype == "bfloat16" ? torch::kBFloat16
                                                : torch::kFloat;
    const auto rows = bench_rotary(a->shape, device, dtype, a->repeats);
    if (!a->json)
      std::printf("q, k [%ld, %ld, %ld, %ld] %s on %s, %ld threads, median of %ld\n%-10s %10s %8s %12s\n",
                  static_cast<long>(a->shape[0]), static_cast<long>(a->shape[1]), static_cast<long>(a->shape[2]),
                  static_cast<long>(a->shape[3]), a->dtype.c_str(), device.str().c_str(), static_cast<long>(threads),
                  static_cast<long>(a->repeats), "method", "ms", "ratio", "max |diff|");
    for (const auto& r : rows) {
      if (a->json)
        std::cout << nlohmann::ordered_json{{"bench", "rotary"},
                                            {"method", r.name},
                                            {"median_ms", 1e3 * r.timing.median},
                                            {"min_ms", 1e3 * r.timing.min},
                                            {"ratio", r.ratio},
                                            {"max_diff", r.max_diff},
                                            {"threads", threads}}
                         .dump()
                  << std::endl;
      else
        std::printf("%-10s %10.2f %8.2f %12.2g\n", r.name.c_str(), 1e3 * r.timing.median, r.ratio, r.max_diff);
    }
  });
}

}  // namespace ropelab::apps
