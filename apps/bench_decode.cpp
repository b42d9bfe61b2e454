// ropelab bench decode: beam decoding with the key/value cache against recomputing the
// prefix on a trained run (src/ropelab/bench/benchmarks.h).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ropelab/bench/benchmarks.h"
#include "ropelab/run/run.h"

namespace ropelab::apps {

void add_bench_decode(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("decode", "beam decoding with the key/value cache vs recomputing the prefix");
  struct Args {
    BenchFlags flags;
    std::string run_dir, split = "test", checkpoint = "best";
    int64_t beam = 4;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--run", a->run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--split", a->split, "test | valid | FILE")->capture_default_str();
  cmd->add_option("--checkpoint", a->checkpoint, "best | last | FILE")->capture_default_str();
  cmd->add_option("--beam", a->beam, "beam size")->check(positive())->capture_default_str();
  a->flags.add_to(*cmd);
  cmd->callback([a] {
    const auto device = a->flags.apply();
    const auto threads = torch::get_num_threads();
    auto run = open_run(a->run_dir, a->checkpoint, device, yaml_config_files());
    const auto path = a->split == "test"    ? run.config.data.test()
                      : a->split == "valid" ? run.config.data.valid()
                                            : a->split;
    DecodeRequest request;
    request.search.decode = run.config.decode;
    request.search.decode.beam(a->beam);
    const auto r = bench_decode(run, path, request, device);
    const double speedup = r.uncached_seconds / r.cached_seconds;
    if (a->flags.json_line({{"bench", "decode"},
                            {"sentences", r.sentences},
                            {"beam", a->beam},
                            {"threads", threads},
                            {"cached_s", r.cached_seconds},
                            {"uncached_s", r.uncached_seconds},
                            {"speedup", speedup},
                            {"identical", r.identical}}))
      return;
    std::printf("beam %ld decoding of %ld sentences (%s), %ld threads\n", static_cast<long>(a->beam),
                static_cast<long>(r.sentences), path.c_str(), static_cast<long>(threads));
    std::printf("  cached keys/values:  %8.2f s\n  recomputed prefix:   %8.2f s\n", r.cached_seconds,
                r.uncached_seconds);
    std::printf("  speedup %.2fx, identical outputs %ld/%ld\n", speedup, static_cast<long>(r.identical),
                static_cast<long>(r.sentences));
  });
}

}  // namespace ropelab::apps
