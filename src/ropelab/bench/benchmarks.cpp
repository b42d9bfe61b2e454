#include "ropelab/bench/benchmarks.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include "ropelab/build_config.h"
#include "ropelab/data/batching.h"
#include "ropelab/data/tokenizer.h"
#include "ropelab/model/dropout.h"
#include "ropelab/ops/rotary/rotary.h"
#include "ropelab/position/encoders.h"
#include "ropelab/run/run.h"
#include "ropelab/train/trainer.h"
#include "ropelab/util/enum_names.h"
#if ROPELAB_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <cstdio>
#include <fstream>

namespace ropelab {

namespace detail {
void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}
}  // namespace detail

TrainBenchResult bench_train(const Config& config, const TrainBenchOptions& options, const torch::Device& device) {
  if (config.train.precision() == Precision::automatic)
    throw ConfigError(
        "train.precision: bench train times one precision (fp32, bf16 or fp16); auto is for ropelab train");
  torch::manual_seed(static_cast<uint64_t>(config.train.seed()));
  const auto model = make_task(config)->build_model(options.vocab_size);
  auto& module = model->module();
  module.to(device);
  module.train();
  TrainBenchResult result;
  for (const auto& p : module.parameters()) result.parameters += p.numel();
  const auto& t = config.train;
  torch::optim::Adam optimizer(module.parameters(), torch::optim::AdamOptions(t.lr())
                                                        .betas({t.adam_beta1(), t.adam_beta2()})
                                                        .eps(t.adam_eps())
                                                        .weight_decay(t.weight_decay()));
  // Fixed-shape batch of ordinary tokens (no padding): source and target of `length` tokens.
  auto random_tokens = [&] {
    return torch::randint(kEosId + 1, options.vocab_size, {options.batch, options.length}, torch::kLong).to(device);
  };
  Batch batch;
  batch.source = random_tokens();
  batch.target_in = random_tokens();
  batch.target_out = random_tokens();
  batch.target_tokens = options.batch * options.length;
  batch.sentences = options.batch;
  const std::vector<Batch> batches = {batch};
  int64_t step = 0;
  // fp16 scales its loss as the trainer does (train/trainer.h)
  LossScale loss_scale{kLossScaleInitial, 0};
  LossScale* scaling = t.precision() == Precision::fp16 ? &loss_scale : nullptr;
  auto update = [&] {
    return update_step(*model, optimizer, batches, t, learning_rate(t, config.model.d_model(), ++step), nullptr,
                       nullptr, scaling);
  };
  // From kLossScaleInitial the scaled summed losses' gradients overflow fp16 until the scale
  // has come down: those updates are skipped, and are not the ones timed. Settling ends at
  // the first update taken; a skip for a non-finite loss counts as skipped, not settling.
  if (scaling) {
    result.loss_scale_settled = false;
    while (result.settling_updates < kMaxLossScaleSettling) {
      const auto totals = update();
      if (!totals.skipped) {
        result.loss_scale_settled = true;
        break;
      }
      if (!totals.overflow) {
        ++result.skipped_updates;
        break;
      }
      ++result.settling_updates;
    }
  }
  auto timed_update = [&] { result.skipped_updates += update().skipped; };
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profiler;
  if (!options.profile.empty()) {
    for (int64_t i = 0; i < options.warmup; ++i) timed_update();
    profiler = std::make_unique<torch::autograd::profiler::RecordProfile>(options.profile);
  }
  result.step = time_repeats(timed_update, options.warmup, options.steps, device);
  result.target_tokens_per_second = static_cast<double>(batch.target_tokens) / result.step.median;
  int64_t drops = 0;
  for (const auto& m : module.modules())
    if (const auto* d = m->as<DropoutImpl>()) drops += d->drops;
  result.dropout_sites = step > 0 ? drops / step : 0;
  return result;
}

DecodeBenchResult bench_decode(const LoadedRun& run, const std::string& path, const DecodeRequest& request,
                               const torch::Device& device) {
  const auto inputs = run.task->decode_inputs(path);
  DecodeBenchResult r;
  r.sentences = static_cast<int64_t>(inputs.size());
  auto timed = [&](bool use_cache, double* seconds) {
    auto options = request;
    options.use_cache = use_cache;
    const double start = now_seconds();
    auto out = run.task->decode_lines(*run.model, *run.tokenizer, inputs, options, device);
    detail::synchronize(device);
    *seconds = now_seconds() - start;
    return out;
  };
  const auto cached = timed(true, &r.cached_seconds);
  const auto uncached = timed(false, &r.uncached_seconds);
  for (size_t i = 0; i < cached.size(); ++i) r.identical += cached[i] == uncached[i];
  return r;
}

std::vector<RotaryBenchRow> bench_rotary(const RotaryBenchOptions& o, const torch::Device& device) {
  const auto& shape = o.shape;
  TORCH_CHECK(shape.size() == 4, "bench rotary: --shape must be T,B,H,Dh, got ", shape.size(), " numbers");
  torch::NoGradGuard no_grad;
  const int64_t T = shape[0], Dh = shape[3];
  auto options = torch::TensorOptions().dtype(o.dtype).device(device);
  auto q = torch::randn(shape, options), k = torch::randn(shape, options);
  auto inv = torch::pow(10000.0, -torch::arange(Dh / 2, torch::kDouble) / static_cast<double>(Dh / 2));
  auto angles = (torch::arange(T, torch::kDouble).unsqueeze(1) * inv).to(device);
  auto cos = angles.cos().to(torch::kFloat), sin = angles.sin().to(torch::kFloat);
  auto pe = torch::randn({T, 1, 1, Dh}, options);  // the additive embedding's table
  auto reference = rotary_eager(q, cos, sin, 0, false);

  std::vector<RotaryBenchRow> rows;
  auto run = [&](const std::string& name, auto&& f) {
    RotaryBenchRow row;
    row.name = name;
    std::pair<torch::Tensor, torch::Tensor> out;
    row.timing = time_repeats([&] { out = f(); }, 2, o.repeats, device);
    if (name != "additive") row.max_diff = (out.first - reference).abs().max().item<double>();
    rows.push_back(row);
  };
  run("additive", [&] { return std::make_pair(q + pe, k + pe); });
  run("eager",
      [&] { return std::make_pair(rotary_eager(q, cos, sin, 0, false), rotary_eager(k, cos, sin, 0, false)); });
  run("script",
      [&] { return std::make_pair(rotary_script(q, cos, sin, 0, false), rotary_script(k, cos, sin, 0, false)); });
  if (rotary_fused_supports(q))
    run("fused", [&] { return rotary_fused_qk(q, k, cos, sin, 0, false); });
  else
    std::fprintf(stderr, "bench rotary: no fused kernel for %s on %s; its row is left out\n",
                 std::string(c10::toString(o.dtype)).c_str(), device.str().c_str());
  for (auto& row : rows) row.ratio = row.timing.median / rows.front().timing.median;
  return rows;
}

namespace {

/// A field of /proc/self/status in MiB ("VmRSS", "VmHWM"); 0 where unavailable.
double proc_status_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;  // kB
  return 0;
}

/// Resets the process's peak resident set to its current size (Linux >= 4.0).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

namespace {
const EnumNames<BenchBias, 5> kBenchBiasNames{{{BenchBias::none, "none"},
                                               {BenchBias::alibi, "alibi"},
                                               {BenchBias::fire, "fire"},
                                               {BenchBias::kerple, "kerple"},
                                               {BenchBias::t5, "t5"}}};

/// The bias of `o` for T queries and keys, as the stack hands it to attention.
LogitBias bench_logit_bias(const AttentionBenchOptions& o, const torch::Device& device) {
  if (o.bias == BenchBias::none) return {};
  torch::NoGradGuard no_grad;
  const PositionGeometry geometry{o.heads * o.head_dim, o.heads, o.causal};
  // the parameters in the operands' type, as a model in that type holds them
  if (o.bias != BenchBias::fire) {
    const auto type = o.bias == BenchBias::alibi    ? PositionType::alibi
                      : o.bias == BenchBias::kerple ? PositionType::kerple
                                                    : PositionType::t5_bias;
    auto encoder = make_position_encoder(PositionOptions().type(type), geometry);
    encoder->to(device, o.dtype);
    return LogitBias::relative_table(relative_bias_table(*encoder, o.length, o.length, device).to(o.dtype));
  }
  auto fire = make_position_encoder(PositionOptions().type(PositionType::fire), geometry);
  fire->to(device, o.dtype);
  return LogitBias::factored(fire->factored_bias(o.length, o.length));  // a kernel without it makes it dense
}
}  // namespace

namespace {
const EnumNames<torch::Dtype, 4> kBenchDtypeNames{
    {{torch::kFloat, "float"}, {torch::kDouble, "double"}, {torch::kBFloat16, "bfloat16"}, {torch::kHalf, "float16"}}};
}  // namespace

torch::Dtype parse_bench_dtype(const std::string& name) { return parse_enum(name, kBenchDtypeNames, "dtype"); }
std::string bench_dtype_name(torch::Dtype dtype) { return enum_name(dtype, kBenchDtypeNames); }

std::string to_string(BenchBias bias) { return enum_name(bias, kBenchBiasNames); }
BenchBias parse_bench_bias(const std::string& name) { return parse_enum(name, kBenchBiasNames, "bench bias"); }

AttentionBenchResult bench_attention(const AttentionBenchOptions& o, const torch::Device& device) {
  torch::manual_seed(0);
  auto backend = make_attention_backend(
      AttentionOptions().type(o.type).num_features(o.features).kernel(o.kernel).dropout(0.0).tiles(o.tiles),
      o.head_dim);
  backend->to(device);
  backend->train();
  auto bias = bench_logit_bias(o, device);
  // the backward of a learned bias (Kerple, T5, FIRE) takes its gradient, as training does:
  // each of its tensors a leaf (ALiBi's fixed slopes have none)
  std::vector<torch::Tensor> bias_leaves;
  if (o.bias != BenchBias::alibi)
    for (auto* t : {&bias.relative, &bias.fire.psi, &bias.fire.inv_norm, &bias.fire.w1, &bias.fire.b1, &bias.fire.w2,
                    &bias.fire.b2})
      if (t->defined()) bias_leaves.push_back(*t = t->detach().requires_grad_(true));
  const auto options = torch::TensorOptions().device(device).dtype(o.dtype);
  auto make = [&] {
    return torch::randn({o.batch, o.heads, o.length, o.head_dim}, options).mul_(0.5).requires_grad_(true);
  };
  auto q = make(), k = make(), v = make();
  auto weights = torch::randn({o.batch, o.heads, o.length, o.head_dim}, options);
  const AttentionInputs inputs{q, k, v, {}, bias, o.causal, o.window, o.sinks};
  auto step = [&] {
    if (!o.backward) {
      torch::NoGradGuard no_grad;
      backend->forward(inputs);
      return;
    }
    auto out = backend->forward(inputs);
    std::vector<torch::Tensor> leaves{q, k, v};
    leaves.insert(leaves.end(), bias_leaves.begin(), bias_leaves.end());
    torch::autograd::grad({(out * weights).sum()}, leaves);
  };
  detail::synchronize(device);
  const double resident = proc_status_mib("VmRSS");
  if (device.is_cpu()) reset_peak_rss();
#if ROPELAB_WITH_CUDA
  // The GPU the tensors are on: `cuda` with no index is the current one.
  const auto gpu = device.is_cuda() ? (device.has_index() ? device.index() : c10::cuda::current_device()) : 0;
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(gpu));
#endif
  AttentionBenchResult result;
  result.timing = time_repeats(step, o.warmup, o.repeats, device);
  if (device.is_cpu()) result.peak_mib = proc_status_mib("VmHWM") - resident;
#if ROPELAB_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(gpu));
    // StatType::AGGREGATE, which is 0 in every LibTorch; the enum moved namespaces in 2.x.
    const size_t aggregate = 0;
    const double held = static_cast<double>(q.element_size() * (q.numel() + k.numel() + v.numel() + weights.numel()));
    result.peak_mib = (static_cast<double>(stats.allocated_bytes[aggregate].peak) - held) / (1024.0 * 1024.0);
  }
#endif
  return result;
}

}  // namespace ropelab
