#include "ropelab/bench/attention_sweep_report.h"

#include <cstdio>
#include <utility>

namespace ropelab {

namespace {

const char* mode_name(bool causal) { return causal ? "causal" : "bidirectional"; }

/// `x` in `format`, or "-" for a case not run.
std::string cell(double x, const char* format) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, x);
  return x < 0 ? std::string("-") : std::string(buffer);
}

}  // namespace

AttentionSweepReport::AttentionSweepReport(const AttentionBenchOptions& options, const AttentionVariant (&variants)[2],
                                           std::string bias, std::string tiles, std::string device, int64_t threads)
    : options_(options),
      first_(variants[0].name),
      second_(variants[1].name),
      bias_(std::move(bias)),
      tiles_(std::move(tiles)),
      device_(std::move(device)),
      threads_(threads) {}

void AttentionSweepReport::print_header() const {
  const auto& o = options_;
  std::printf(
      "attention %s: B=%ld H=%ld Dh=%ld, %s, bias %s, window %ld, sinks %ld, streaming tiles %s, Performer m=%ld, "
      "%s, %ld threads, median of %ld\n"
      "%-14s %7s %15s %15s %16s %16s %9s\n",
      o.backward ? "forward+backward" : "forward", static_cast<long>(o.batch), static_cast<long>(o.heads),
      static_cast<long>(o.head_dim), bench_dtype_name(o.dtype).c_str(), bias_.c_str(), static_cast<long>(o.window),
      static_cast<long>(o.sinks), tiles_.c_str(), static_cast<long>(o.features), device_.c_str(),
      static_cast<long>(threads_), static_cast<long>(o.repeats), "mode", "T", (first_ + " ms").c_str(),
      (second_ + " ms").c_str(), (first_ + " MiB").c_str(), (second_ + " MiB").c_str(), "ratio");
}

nlohmann::ordered_json AttentionSweepReport::json(const AttentionSweepRow& r) const {
  return {{"bench", "attention"},
          {"mode", mode_name(r.causal)},
          {"pass", options_.backward ? "forward+backward" : "forward"},
          {"device", device_},
          {"dtype", bench_dtype_name(options_.dtype)},
          {"bias", bias_},
          {"window", options_.window},
          {"sinks", options_.sinks},
          {"tiles", tiles_},
          {"T", r.length},
          {first_ + "_ms", r.ms[0]},
          {second_ + "_ms", r.ms[1]},
          {first_ + "_peak_mib", r.mib[0]},
          {second_ + "_peak_mib", r.mib[1]},
          {"threads", threads_}};
}

void AttentionSweepReport::print_row(const AttentionSweepRow& r) const {
  std::printf("%-14s %7ld %15s %15s %16s %16s %9s\n", mode_name(r.causal), static_cast<long>(r.length),
              cell(r.ms[0], "%.1f").c_str(), cell(r.ms[1], "%.1f").c_str(), cell(r.mib[0], "%.0f").c_str(),
              cell(r.mib[1], "%.0f").c_str(), r.speedup() > 0 ? cell(r.speedup(), "%.2fx").c_str() : "-");
}

void AttentionSweepReport::record(const AttentionSweepRow& r) {
  auto& at = crossover_[r.causal ? 1 : 0];
  if (r.speedup() > 1 && at < 0) at = r.length;
}

void AttentionSweepReport::print_footer(const std::vector<bool>& modes) const {
  for (bool causal : modes) {
    const auto at = crossover_[causal ? 1 : 0];
    if (at > 0)
      std::printf("  %s: %s faster from T=%ld on\n", mode_name(causal), second_.c_str(), static_cast<long>(at));
    else
      std::printf("  %s: %s not faster at the lengths measured\n", mode_name(causal), second_.c_str());
  }
  std::printf(
      "(ratio: %s ms / %s ms; '-': not run, where T x T tensors would not fit in memory, or failed as stderr says)\n",
      first_.c_str(), second_.c_str());
}

}  // namespace ropelab
