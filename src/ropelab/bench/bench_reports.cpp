#include "ropelab/bench/bench_reports.h"

#include <cstdio>
#include <stdexcept>

namespace ropelab {

namespace {

void print_machine(const MachineInfo& machine) { std::printf("  %s\n", describe(machine).c_str()); }

}  // namespace

void add_machine(nlohmann::ordered_json& row, const MachineInfo& machine) {
  row["cpu"] = machine.cpu;
  row["aten_isa"] = machine.aten_isa;
  row["blas_core"] = machine.blas_core;
  row["thread_env"] = machine.thread_env;
}

TrainBenchReport measure_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device,
                               int64_t threads, int64_t gemm_repeats) {
  TrainBenchReport r;
  r.options = options;
  r.device = config.train.device();
  r.threads = threads;
  r.precision = config.train.precision();
  r.result = bench_train(config, options, device);
  r.machine = machine_info();
  // The update's matrix multiplications, counted from the shapes, against their speed alone.
  try {
    r.gemms = training_gemms(config, options.vocab_size, options.batch, options.length);
  } catch (const std::invalid_argument& e) {
    r.no_count = e.what();
  }
  r.flops = total_flops(r.gemms);
  if (!r.gemms.empty() && gemm_repeats > 0)
    r.peak = bench_gemm(r.gemms, matmul_dtype(r.precision), device, gemm_repeats);
  return r;
}

nlohmann::ordered_json to_json(const TrainBenchReport& r) {
  nlohmann::ordered_json row = {{"bench", "train"},
                                {"device", r.device},
                                {"threads", r.threads},
                                {"precision", to_string(r.precision)},
                                {"parameters", r.result.parameters},
                                {"dropout_sites", r.result.dropout_sites},
                                {"settling_updates", r.result.settling_updates},
                                {"loss_scale_settled", r.result.loss_scale_settled},
                                {"skipped_updates", r.result.skipped_updates},
                                {"batch", r.options.batch},
                                {"length", r.options.length},
                                {"step_median_s", r.result.step.median},
                                {"step_min_s", r.result.step.min},
                                {"step_max_s", r.result.step.max},
                                {"target_tokens_per_s", r.result.target_tokens_per_second}};
  if (!r.gemms.empty()) {
    row["matmul_gflop_per_step"] = r.flops / 1e9;
    row["achieved_gflops"] = r.achieved_gflops();
  }
  if (r.peak.seconds > 0) {
    row["gemm_peak_gflops"] = r.peak.gflops();
    row["utilisation"] = r.achieved_gflops() / r.peak.gflops();
  }
  add_machine(row, r.machine);
  return row;
}

void print(const TrainBenchReport& r) {
  const auto& step = r.result.step;
  std::printf("ropelab train step: %ld parameters, batch %ld x %ld, %s, %s, %ld threads\n",
              static_cast<long>(r.result.parameters), static_cast<long>(r.options.batch),
              static_cast<long>(r.options.length), to_string(r.precision).c_str(), r.device.c_str(),
              static_cast<long>(r.threads));
  print_machine(r.machine);
  std::printf("  step median %.1f ms (min %.1f, max %.1f, %ld steps)\n  %.0f target tokens/s\n", 1e3 * step.median,
              1e3 * step.min, 1e3 * step.max, static_cast<long>(step.repeats), r.result.target_tokens_per_second);
  if (!r.result.loss_scale_settled)
    std::printf("  WARNING: the fp16 loss scale did not settle: %ld updates overflowed, then %s\n",
                static_cast<long>(r.result.settling_updates),
                r.result.settling_updates < kMaxLossScaleSettling ? "one had a non-finite loss" : "it stopped trying");
  else if (r.result.settling_updates > 0)
    std::printf("  fp16 loss scale settled after %ld overflowed updates (not timed)\n",
                static_cast<long>(r.result.settling_updates));
  if (r.result.skipped_updates > 0)
    std::printf(
        "  WARNING: %ld updates were skipped (non-finite loss or gradients, or an overflow once settled): they ran no "
        "optimizer step\n",
        static_cast<long>(r.result.skipped_updates));
  if (r.gemms.empty()) {
    std::printf("  utilisation: not counted (%s)\n", r.no_count.c_str());
    return;
  }
  std::printf("  matmul work %.1f GFLOP per step: %.1f GFLOP/s achieved", r.flops / 1e9, r.achieved_gflops());
  if (r.peak.seconds > 0)
    std::printf(", %.1f%% of the GEMM peak at these shapes (%.1f GFLOP/s, %s, ropelab bench gemm)",
                100.0 * r.achieved_gflops() / r.peak.gflops(), r.peak.gflops(), to_string(r.precision).c_str());
  std::printf("\n");
}

std::vector<nlohmann::ordered_json> to_json_rows(const GemmBenchReport& r) {
  std::vector<nlohmann::ordered_json> rows;
  for (const auto& row : r.result.rows)
    rows.push_back({{"shape", row.shape.name},
                    {"batch", row.shape.batch},
                    {"m", row.shape.m},
                    {"n", row.shape.n},
                    {"k", row.shape.k},
                    {"count", row.shape.count},
                    {"dtype", c10::toString(row.dtype)},
                    {"median_s", row.timing.median},
                    {"gflops", row.gflops()}});
  nlohmann::ordered_json total = {{"bench", "gemm"},
                                  {"precision", to_string(r.precision)},
                                  {"device", r.device},
                                  {"threads", r.threads},
                                  {"gflop_per_step", r.result.flops / 1e9},
                                  {"seconds_per_step", r.result.seconds},
                                  {"gemm_peak_gflops", r.result.gflops()}};
  add_machine(total, r.machine);
  rows.push_back(total);
  return rows;
}

void print(const GemmBenchReport& r) {
  std::printf("GEMMs of one training update, %s, %s, %ld threads\n", to_string(r.precision).c_str(), r.device.c_str(),
              static_cast<long>(r.threads));
  print_machine(r.machine);
  std::printf("  %-40s %-9s %6s %6s %6s %6s %5s %10s %9s\n", "product", "type", "batch", "m", "n", "k", "count",
              "median ms", "GFLOP/s");
  for (const auto& row : r.result.rows)
    std::printf("  %-40s %-9s %6ld %6ld %6ld %6ld %5ld %10.3f %9.1f\n", row.shape.name.c_str(),
                c10::toString(row.dtype), static_cast<long>(row.shape.batch), static_cast<long>(row.shape.m),
                static_cast<long>(row.shape.n), static_cast<long>(row.shape.k), static_cast<long>(row.shape.count),
                1e3 * row.timing.median, row.gflops());
  std::printf("  update: %.1f GFLOP in %.1f ms of GEMMs: %.1f GFLOP/s\n", r.result.flops / 1e9, 1e3 * r.result.seconds,
              r.result.gflops());
}

}  // namespace ropelab
