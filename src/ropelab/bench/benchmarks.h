#pragma once
/// Benchmarks behind `ropelab bench ...`: measured, never asserted in tests.

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ropelab/config/config.h"
#include "ropelab/run/run.h"
#include "ropelab/util/clock.h"

namespace ropelab {

/// Median and spread of repeated timings, in seconds.
struct Timing {
  double median = 0, min = 0, max = 0;
  int64_t repeats = 0;
};

namespace detail {
/// Waits for the device's queued work (CUDA); a no-op on the CPU.
void synchronize(const torch::Device& device);
}  // namespace detail

/// Times `f` `repeats` times after `warmup` untimed calls (CUDA synchronised).
template <typename F>
Timing time_repeats(F&& f, int64_t warmup, int64_t repeats, const torch::Device& device) {
  for (int64_t i = 0; i < warmup; ++i) f();
  detail::synchronize(device);
  std::vector<double> times;
  for (int64_t i = 0; i < repeats; ++i) {
    const double start = now_seconds();
    f();
    detail::synchronize(device);
    times.push_back(now_seconds() - start);
  }
  std::sort(times.begin(), times.end());
  Timing t;
  t.repeats = repeats;
  if (times.empty()) return t;
  t.median = times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  t.min = times.front();
  t.max = times.back();
  return t;
}

struct TrainBenchOptions {
  int64_t vocab_size = 8000;
  int64_t batch = 64;   // sentences
  int64_t length = 32;  // tokens per source and target sentence
  int64_t warmup = 3;
  int64_t steps = 20;
  /// When set, the timed steps are recorded by LibTorch's profiler into this Chrome trace.
  std::string profile;
};

struct TrainBenchResult {
  Timing step;
  double target_tokens_per_second = 0;
  int64_t parameters = 0;
  int64_t dropout_sites = 0;  // dropout applications per update (Dropout::drops / updates)
  /// fp16: updates skipped for an overflow before timing while the loss scale came down from
  /// its initial value (at most kMaxLossScaleSettling), and whether an update was then taken.
  int64_t settling_updates = 0;
  bool loss_scale_settled = true;
  /// Updates skipped otherwise (non-finite loss or gradients, fp16 overflow while warming up
  /// or timed): they run no optimizer step, so a timing with any is not a training update's.
  int64_t skipped_updates = 0;
};
constexpr int64_t kMaxLossScaleSettling = 32;

/// Times full training updates (forward, loss, backward, Adam) of the configured task's
/// model on fixed-shape synthetic batches, exactly as the trainer runs them. fp16 first
/// lets its loss scale settle (settling_updates), as a training run's first updates do.
TrainBenchResult bench_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device);

struct DecodeBenchResult {
  double cached_seconds = 0, uncached_seconds = 0;
  int64_t sentences = 0, identical = 0;  // outputs equal between the two
};

/// Decodes the inputs of `path` (source sentences or prompts, in the run's data format)
/// twice with the same search: with incremental decoding (cached keys/values or running
/// sums) and by recomputing the decoder over the whole prefix at every step.
DecodeBenchResult bench_decode(const LoadedRun& run, const std::string& path, const DecodeRequest& request,
                               const torch::Device& device);

struct RotaryBenchRow {
  std::string name;
  Timing timing;
  double ratio = 0;     // median / the additive embedding's median
  double max_diff = 0;  // largest difference from the eager implementation (0 for additive)
};

struct RotaryBenchOptions {
  std::vector<int64_t> shape = {2048, 16, 12, 64};  // q and k, [T, B, H, Dh]
  torch::Dtype dtype = torch::kFloat;
  int64_t repeats = 10;  // timed repeats; the median is reported
};

/// The runtime table of Biderman et al. 2021: q and k of `options.shape` in their [T, B, H, Dh]
/// layout, an additive position embedding (q + pe, k + pe) against rotary by each
/// implementation (eager, script, fused), all forward on the same tensors.
std::vector<RotaryBenchRow> bench_rotary(const RotaryBenchOptions& options, const torch::Device& device);

/// The element type a kernel benchmark runs in: float, double, bfloat16, float16.
torch::Dtype parse_bench_dtype(const std::string& name);
std::string bench_dtype_name(torch::Dtype dtype);
inline constexpr const char* kBenchDtypes = "float | double | bfloat16 | float16";

/// The logit bias an attention benchmark adds: none, the relative tables of ALiBi (Press et al.
/// 2022), Kerple (Chi et al. 2022, its logarithmic form) and T5 (Raffel et al. 2020), or FIRE's
/// factored bias (Li et al. 2024), from the position encoders themselves.
enum class BenchBias { none, alibi, fire, kerple, t5 };
std::string to_string(BenchBias bias);
BenchBias parse_bench_bias(const std::string& name);

struct AttentionBenchOptions {
  AttentionType type = AttentionType::softmax;
  AttentionKernel kernel = AttentionKernel::automatic;  // softmax: which CPU kernel
  bool causal = false;
  int64_t length = 1024;
  int64_t batch = 1, heads = 8, head_dim = 64;
  int64_t features = 256;  // Performer m
  BenchBias bias = BenchBias::none;
  torch::Dtype dtype = torch::kFloat;  // of q, k, v and the bias's parameters
  int64_t window = 0, sinks = 0;       // causal or not: KeyVisibility's
  bool backward = true;                // forward + backward; false: the forward alone, without autograd
  int64_t warmup = 1, repeats = 3;
  StreamingTiles tiles;  // the streaming kernel's
};

struct AttentionBenchResult {
  Timing timing;        // forward (+ backward) of the backend alone
  double peak_mib = 0;  // peak memory above what the inputs hold
};

/// Times forward (+ backward) of one attention backend on random q, k, v (B, H, T, Dh) and
/// measures its peak memory: the CUDA allocator's peak on a GPU, the process's peak
/// resident set (VmHWM, reset through /proc/self/clear_refs) on the CPU. Run each case in
/// a fresh process for CPU memory figures: freed memory the allocator kept is reused. The
/// bias is made before the measurement (it is an input, as the stack computes it once).
AttentionBenchResult bench_attention(const AttentionBenchOptions& options, const torch::Device& device);

}  // namespace ropelab
