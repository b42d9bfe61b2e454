#include "ropelab/train/trainer.h"

#include "ropelab/data/corpus.h"
#include "ropelab/train/checkpoint.h"
#include "ropelab/train/plot.h"
#include "ropelab/train/run.h"
#include "ropelab/kernels/cpu_kernels.h"
#include "ropelab/util/runtime.h"

#include <ATen/Parallel.h>

#include <unistd.h>

#include <csignal>
#include <thread>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace ropelab {

namespace fs = std::filesystem;

// --- run directory ------------------------------------------------------------------

RunPaths::RunPaths(std::string d)
    : dir(std::move(d)),
      config((fs::path(dir) / "config.yaml").string()),
      last((fs::path(dir) / "checkpoint_last.pt").string()),
      best((fs::path(dir) / "checkpoint_best.pt").string()),
      metrics((fs::path(dir) / "metrics.jsonl").string()) {}

std::string RunPaths::checkpoint(const std::string& which) const {
  if (which == "best") return fs::exists(best) ? best : last;  // a run without validation has no best
  if (which == "last") return last;
  return which;
}

std::string RunPaths::numbered(int64_t step) const {
  return (fs::path(dir) / ("checkpoint_" + std::to_string(step) + ".pt")).string();
}

std::vector<std::string> RunPaths::numbered_checkpoints() const {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("checkpoint_", 0) != 0 || entry.path().extension() != ".pt") continue;
    const auto middle = name.substr(11, name.size() - 14);
    if (middle.empty() || middle.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(middle), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

namespace {
/// Copies the last checkpoint to checkpoint_STEP.pt and keeps only the newest `keep`.
void keep_numbered_checkpoint(const RunPaths& paths, int64_t step, int64_t keep) {
  if (keep <= 0) return;
  const auto target = paths.numbered(step);
  fs::copy_file(paths.last, target + ".tmp", fs::copy_options::overwrite_existing);
  fs::rename(target + ".tmp", target);
  auto all = paths.numbered_checkpoints();
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove(all[i]);
}
}  // namespace

torch::nn::Module* TaskModel::operator->() const {
  if (seq2seq) return seq2seq.ptr().get();
  TORCH_CHECK(lm, "TaskModel: no model");
  return lm.ptr().get();
}

torch::Tensor TaskModel::logits(const Batch& batch) const {
  if (lm) return lm.ptr()->forward(batch.target_in);
  auto model = seq2seq;
  return model->decode(batch.target_in,
                       model->encode(batch.source, encoder_positions(model, batch.source_positions)));
}

Seq2Seq& TaskModel::translator() {
  if (!seq2seq) throw std::runtime_error("this run is a language model (task lm); it does not translate");
  return seq2seq;
}

torch::Tensor encoder_positions(const Seq2Seq& model, const torch::Tensor& data_positions) {
  const int64_t axes = model->encoder->position()->axes();
  if (!data_positions.defined() || axes == 1) return {};
  TORCH_CHECK(data_positions.size(-1) == axes, "source positions have ", data_positions.size(-1),
              " coordinates; the encoder's position encoder takes ", axes);
  return data_positions;
}

TaskModel build_model(const Config& config, int64_t vocab_size) {
  auto options = config.model;
  options.vocab_size(vocab_size).pad_id(kPadId);
  if (config.task == Task::lm) return LanguageModel(options);
  return Seq2Seq(options);
}

LoadedRun open_run(const std::string& dir, const std::string& checkpoint, const torch::Device& device) {
  RunPaths paths(dir);
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + ": run directory not found");
  LoadedRun run;
  run.config = load_config({{paths.config}, {}});
  run.tokenizer = load_tokenizer(run.config.tokenizer, dir);
  run.model = build_model(run.config, run.tokenizer->vocab_size());
  load_checkpoint(paths.checkpoint(checkpoint), *run.model);
  run.model->to(device);
  run.model->eval();
  return run;
}

// --- optimization pieces ---------------------------------------------------------------

double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));  // guard step 0
  const double w = static_cast<double>(o.warmup());
  switch (o.lr_schedule()) {
    case LrSchedule::noam:
      return o.lr() * std::pow(static_cast<double>(d_model), -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
    case LrSchedule::inverse_sqrt:
      return s < w ? o.lr() * s / w : o.lr() * std::sqrt(w / s);
    case LrSchedule::constant:
      return o.lr();
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled LrSchedule");
}

namespace {

/// Label-smoothed cross-entropy fused over rows of logits (train/loss_rows.h): no stored
/// log-probabilities, one pass forward after the max, one pass backward.
class SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
 public:
  /// logits (N, V) contiguous, target (N) -> {smoothed loss per row, nll per row}
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double eps, int64_t pad) {
    const int64_t N = logits.size(0), V = logits.size(1);
    auto lse = torch::empty({N}, logits.options()), loss = torch::empty({N}, logits.options()),
         nll = torch::empty({N}, logits.options());
    auto tgt = target.contiguous();
    AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "smoothed_ce_forward", [&] {
      const auto e = static_cast<scalar_t>(eps);
      at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
        const auto args = std::make_tuple(logits.data_ptr<scalar_t>(), V, tgt.data_ptr<int64_t>(), pad, e, begin, end,
                                          lse.data_ptr<scalar_t>(), loss.data_ptr<scalar_t>(), nll.data_ptr<scalar_t>());
        if (cpu_has_avx2_fma()) std::apply([](auto... a) { avx2::ce_forward(a...); }, args);
        else std::apply([](auto... a) { baseline::ce_forward(a...); }, args);
      });
    });
    ctx->save_for_backward({logits, tgt, lse});
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["pad"] = pad;
    ctx->mark_non_differentiable({nll});
    return {loss, nll};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &target = saved[1], &lse = saved[2];
    const double eps = ctx->saved_data["eps"].toDouble();
    const int64_t pad = ctx->saved_data["pad"].toInt();
    const int64_t N = logits.size(0), V = logits.size(1);
    auto g = grads[0].defined() ? grads[0].contiguous() : torch::zeros({N}, logits.options());
    auto grad = torch::empty_like(logits);
    AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "smoothed_ce_backward", [&] {
      const auto e = static_cast<scalar_t>(eps);
      at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
        const auto args = std::make_tuple(logits.data_ptr<scalar_t>(), V, target.data_ptr<int64_t>(), pad, e,
                                          lse.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), begin, end,
                                          grad.data_ptr<scalar_t>());
        if (cpu_has_avx2_fma()) std::apply([](auto... a) { avx2::ce_backward(a...); }, args);
        else std::apply([](auto... a) { baseline::ce_backward(a...); }, args);
      });
    });
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> smoothed_loss_reference(const torch::Tensor& logits,
                                                                const torch::Tensor& target, double label_smoothing,
                                                                int64_t pad_id) {
  // float at least (half precision logits), double kept
  auto logp = torch::log_softmax(logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat), -1);
  auto keep = target.ne(pad_id);                                           // (B, T)
  auto nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1);           // (B, T)
  nll = nll.masked_fill(~keep, 0.0).sum();
  if (label_smoothing == 0.0) return {nll, nll.detach()};
  auto uniform = -logp.mean(-1).masked_fill(~keep, 0.0).sum();             // eps/V over all classes
  return {(1.0 - label_smoothing) * nll + label_smoothing * uniform, nll.detach()};
}

std::pair<torch::Tensor, torch::Tensor> smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target,
                                                      double label_smoothing, int64_t pad_id) {
  const auto type = logits.scalar_type();
  if (!logits.device().is_cpu() || (type != torch::kFloat && type != torch::kDouble))
    return smoothed_loss_reference(logits, target, label_smoothing, pad_id);
  const int64_t V = logits.size(-1);
  auto rows = SmoothedCrossEntropy::apply(logits.reshape({-1, V}).contiguous(), target.reshape({-1}), label_smoothing,
                                          pad_id);
  return {rows[0].sum(), rows[1].sum()};
}

Batch make_batch(const TaskModel& model, const ExampleSet& examples, const std::vector<size_t>& indices,
                 const torch::Device& device) {
  return model.lm ? collate_lm(examples, indices, device) : collate(examples, indices, device);
}

LossTotals evaluate_loss(const TaskModel& model, const std::vector<Example>& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device) {
  return evaluate_loss(model, ExampleView(examples), max_tokens, label_smoothing, device);
}

LossTotals evaluate_loss(const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  LossTotals totals;
  for (const auto& indices : plan_batches(examples, max_tokens, true, 0)) {
    auto batch = make_batch(model, examples, indices, device);
    auto [loss, nll] = smoothed_loss(model.logits(batch), batch.target_out, label_smoothing, kPadId);
    totals.add(loss.item<double>(), nll.item<double>(), static_cast<double>(batch.target_tokens));
  }
  model->train(was_training);
  return totals;
}

LossTotals update_step(const TaskModel& model, torch::optim::Adam& optimizer, const std::vector<Batch>& batches,
                       const TrainOptions& options, double lr, DataParallel* group, bool* stop) {
  LossTotals totals;
  bool finite = true;
  for (const auto& batch : batches) {
    if (batch.sentences == 0) continue;  // a rank's empty shard of a small batch
    auto [loss, nll] = smoothed_loss(model.logits(batch), batch.target_out, options.label_smoothing(), kPadId);
    const double value = loss.item<double>();
    if (!std::isfinite(value)) {  // no backward: the gradient would be poisoned too
      finite = false;
      continue;
    }
    loss.backward();
    totals.add(value, nll.item<double>(), static_cast<double>(batch.target_tokens));
  }
  if (group) {  // sum gradients, statistics and stop votes over the ranks
    std::vector<torch::Tensor> sums;
    for (auto& p : model->parameters()) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      sums.push_back(p.grad());
    }
    auto stats = torch::tensor({totals.loss, totals.nll, totals.tokens, stop && *stop ? 1.0 : 0.0, finite ? 0.0 : 1.0},
                               torch::kDouble)
                     .to(sums.front().device());
    sums.push_back(stats);
    group->all_reduce_sum(sums);
    stats = stats.cpu();
    totals = LossTotals();
    totals.add(stats[0].item<double>(), stats[1].item<double>(), stats[2].item<double>());
    if (stop) *stop = stats[3].item<double>() > 0;
    finite = stats[4].item<double>() == 0;
  }
  // Gradients of summed losses -> per-token mean over the whole update.
  for (auto& p : model->parameters())
    if (p.grad().defined()) p.grad().div_(std::max(totals.tokens, 1.0));
  // The gradient norm (before clipping), the same on every rank: non-finite skips the update.
  double norm = 0;
  if (options.clip_norm() > 0) {
    norm = torch::nn::utils::clip_grad_norm_(model->parameters(), options.clip_norm());
  } else {
    std::vector<torch::Tensor> norms;
    for (const auto& p : model->parameters())
      if (p.grad().defined()) norms.push_back(p.grad().norm());
    if (!norms.empty()) norm = torch::stack(norms).norm().item<double>();
  }
  if (!finite || !std::isfinite(norm)) {
    optimizer.zero_grad();
    totals.skipped = true;
    return totals;
  }
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  optimizer.step();
  optimizer.zero_grad();
  return totals;
}

// --- the loop ----------------------------------------------------------------------------

namespace {

struct Split {
  std::vector<Example> examples;
  int64_t dropped = 0;
  int64_t empty = 0;
};

/// Where ranks other than 0 send their log lines.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

struct TrainingData {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<TokenStore> train;  // memory-mapped from RUN/data/train.*
  Split valid;                        // in memory
};

/// Streams the training text twice: once into the tokenizer's training (or, resuming, the
/// run's tokenizer is loaded), once tokenized into a memory-mapped token store in
/// RUN/data, so the training corpus is never held in memory. The validation split is
/// small and kept in memory. Logs what was skipped.
TrainingData load_training_data(const Config& config, const std::string& run_dir, bool resume, DataParallel* group) {
  const auto& d = config.data;
  TrainingData data;
  // Data-parallel: rank 0 builds the tokenizer and the token store; the others wait for
  // it, then load the tokenizer and map the same store.
  const bool builder = !group || group->is_main();
  if (!builder) group->barrier();
  std::ostream& log = builder ? std::cout : null_stream();
  auto make_tokenizer = [&](const TextSource& texts) {
    if (resume || !builder) return load_tokenizer(config.tokenizer, run_dir);
    auto tokenizer = train_tokenizer(config.tokenizer, texts, run_dir);
    tokenizer->save(run_dir);
    return tokenizer;
  };
  const auto store = (fs::path(run_dir) / "data").string();
  fs::create_directories(store);
  const auto store_path = (fs::path(store) / "train").string();
  if (config.task == Task::lm) {
    data.tokenizer = make_tokenizer([&](const std::function<void(const std::string&)>& emit) {
      for_each_line(d.train(), [&](std::string& line, int64_t) { emit(line); });
    });
    const int64_t empty = builder ? write_lm_store(d.train(), *data.tokenizer, d.context(), store_path) : 0;
    data.train = std::make_unique<TokenStore>(store_path);
    if (!d.valid().empty())
      data.valid.examples = lm_chunks(read_text_lines(d.valid()), *data.tokenizer, d.context(), &data.valid.empty,
                                      d.eval_tokens());
    log << "data: " << data.train->size() << " training chunks of " << d.context() << " tokens (" << empty
              << " empty lines skipped), " << data.valid.examples.size() << " validation chunks; vocabulary "
              << data.tokenizer->vocab_size() << std::endl;
  } else {
    data.tokenizer = make_tokenizer([&](const std::function<void(const std::string&)>& emit) {
      for_each_pair(d, d.train(), [&](std::string& src, std::string& tgt, int64_t) {
        emit(src);  // a joint source+target vocabulary
        emit(tgt);
      });
    });
    const auto separator = row_separator_id(d, *data.tokenizer);
    int64_t empty = 0;
    const int64_t dropped = builder ? write_pair_store(d, d.train(), *data.tokenizer, store_path, &empty) : 0;
    data.train = std::make_unique<TokenStore>(store_path, separator);
    if (!d.valid().empty()) {
      const auto pairs = read_parallel(d, d.valid());
      data.valid.empty = pairs.skipped_empty;
      data.valid.examples =
          tokenize_pairs(pairs, *data.tokenizer, d.max_len(), true, &data.valid.dropped, separator);
    }
    log << "data: " << data.train->size() << " training pairs (" << dropped << " over data.max_len="
              << d.max_len() << " skipped, " << empty << " with an empty side skipped), "
              << data.valid.examples.size() << " validation pairs; vocabulary " << data.tokenizer->vocab_size()
              << std::endl;
  }
  if (data.train->size() == 0) throw std::runtime_error(d.train() + ": no usable training examples");
  if (builder && group) group->barrier();
  return data;
}

/// Appends one JSON object per line to the metrics file.
class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) throw std::runtime_error(path + ": cannot open for writing");
  }
  void write(const std::string& event, int64_t step, std::initializer_list<std::pair<const char*, double>> fields) {
    out_.precision(17);  // exact values: a resumed run can be compared bit for bit
    out_ << "{\"event\":\"" << event << "\",\"step\":" << step;
    for (const auto& [k, v] : fields) out_ << ",\"" << k << "\":" << v;
    out_ << "}\n" << std::flush;
  }

 private:
  std::ofstream out_;
};

/// SIGINT/SIGTERM during training: finish the current update, save, exit cleanly.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }

/// Installs the handlers for the lifetime of a training run, restoring the old ones after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    old_int_ = std::signal(SIGINT, on_stop_signal);
    old_term_ = std::signal(SIGTERM, on_stop_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int received() const { return g_stop_signal; }

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

}  // namespace

void train(const Config& config, const std::string& run_dir, bool resume) {
  const auto& t = config.train;
  const auto launch = LaunchEnv::from_environment();
  auto device = parse_device(t.device());
  if (launch.distributed() && device.is_cuda()) device = torch::Device(torch::kCUDA, launch.local_rank);
  // Ranks on one machine share its cores unless train.threads says otherwise.
  const auto threads = set_threads(
      t.threads() > 0 || !launch.distributed()
          ? t.threads()
          : std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / launch.local_world_size));
  RunPaths paths(run_dir);
  fs::create_directories(run_dir);
  if (config.data.train().empty()) throw ConfigError("config: data.train is required for training");

  std::unique_ptr<DataParallel> group;
  if (launch.distributed())
    group = std::make_unique<DataParallel>(
        launch, device, std::chrono::milliseconds(static_cast<int64_t>(1000 * t.dist_timeout())));
  const bool writer = !group || group->is_main();  // rank 0 alone writes files and logs
  std::ostream& log = writer ? std::cout : null_stream();
  torch::manual_seed(static_cast<uint64_t>(t.seed()));

  auto data = load_training_data(config, run_dir, resume, group.get());
  auto& tokenizer = data.tokenizer;
  const ExampleSet& train_examples = *data.train;
  auto& valid_split = data.valid;
  if (!resume && writer) std::ofstream(paths.config) << dump_config(config);

  const TaskModel model = build_model(config, tokenizer->vocab_size());
  model->to(device);
  if (group) {  // every rank starts from rank 0's parameters and buffers
    std::vector<torch::Tensor> state;
    for (const auto& p : model->parameters()) state.push_back(p.detach());
    for (const auto& b : model->buffers()) state.push_back(b);
    torch::NoGradGuard no_grad;
    group->broadcast(state);
  }
  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(t.lr())
                                                        .betas({t.adam_beta1(), t.adam_beta2()})
                                                        .eps(t.adam_eps())
                                                        .weight_decay(t.weight_decay()));
  Progress progress;
  if (resume) {
    load_checkpoint(paths.last, *model, &optimizer, &progress);
    log << "resume: " << paths.last << " at step " << progress.step << std::endl;
  }
  log << "model: " << parameters << " parameters on " << device << ", " << threads << " threads";
  if (group) log << " per rank; " << group->world_size() << " ranks (" << group->backend() << ")";
  log << std::endl;

  std::unique_ptr<MetricsLog> metrics;
  if (writer) metrics = std::make_unique<MetricsLog>(paths.metrics);
  LossTotals window;
  double window_start = now_seconds();
  const double start = window_start;
  const int64_t first_step = progress.step;
  const double seconds_before = progress.seconds;  // a resumed run's time continues
  bool stop = false;

  const bool terminal = writer && isatty(STDOUT_FILENO);  // in-place progress; plain log lines otherwise
  auto validate = [&] {
    if (valid_split.examples.empty()) return;
    auto v = evaluate_loss(model, valid_split.examples, t.max_tokens(), t.label_smoothing(), device);
    const double loss = v.mean_loss(), ppl = v.perplexity();
    const bool improved = loss < progress.best_valid;
    if (improved) progress.best_valid = loss, progress.bad_validations = 0;
    else ++progress.bad_validations;
    if (writer) {
      std::printf("%svalid step %ld | loss %.4f | ppl %.2f%s\n", terminal ? "\r\033[K" : "",
                  static_cast<long>(progress.step), loss, ppl, improved ? " | best" : "");
      std::fflush(stdout);
      metrics->write("valid", progress.step, {{"loss", loss}, {"ppl", ppl}});
      if (improved) save_checkpoint(paths.best, *model, &optimizer, progress);
    }
    if (t.patience() > 0 && progress.bad_validations >= t.patience()) {
      log << "early stop: no improvement in " << t.patience() << " validations" << std::endl;
      stop = true;
    }
  };

  model->train();
  StopSignals signals;
  int64_t nonfinite = 0;  // updates skipped for a non-finite loss or gradient
  // An epoch ends when fewer batches than one update needs remain in its plan.
  auto next_epoch_if_done = [&](const std::vector<std::vector<size_t>>& plan) {
    if (progress.batch + t.accumulate() > static_cast<int64_t>(plan.size())) ++progress.epoch, progress.batch = 0;
  };
  double last_progress = 0;
  while (!stop && progress.step < t.steps()) {
    auto plan = plan_batches(train_examples, t.max_tokens(), config.data.bucketing(),
                             static_cast<uint64_t>(t.seed()) * 1000003ULL + static_cast<uint64_t>(progress.epoch));
    while (!stop && progress.step < t.steps() && progress.batch + t.accumulate() <= static_cast<int64_t>(plan.size())) {
      // Dropout draws depend only on (seed, step), so a resumed run replays them exactly.
      // Each rank draws its own stream; rank 0's is the single-process one.
      const uint64_t step_seed = static_cast<uint64_t>(t.seed()) * 1000003ULL + static_cast<uint64_t>(progress.step);
      torch::manual_seed(step_seed + 1 + static_cast<uint64_t>(launch.rank) * 0x9E3779B97F4A7C15ULL);
      std::vector<Batch> batches;
      for (int64_t a = 0; a < t.accumulate(); ++a) {
        const auto& indices = plan[static_cast<size_t>(progress.batch++)];
        batches.push_back(make_batch(model, train_examples,
                                     group ? shard_of(indices, group->rank(), group->world_size()) : indices, device));
      }
      ++progress.step;
      const double lr = learning_rate(t, config.model.d_model(), progress.step);
      bool stopping = signals.received() != 0;  // data-parallel: any rank's signal stops all, after this update
      auto update = update_step(model, optimizer, batches, t, lr, group.get(), &stopping);
      if (update.skipped) {
        ++nonfinite;
        log << "step " << progress.step << ": non-finite loss or gradient; update skipped (" << nonfinite << " of "
            << t.max_nonfinite() << " allowed)" << std::endl;
        if (nonfinite > t.max_nonfinite())
          throw std::runtime_error("training diverged: " + std::to_string(nonfinite) +
                                   " updates with a non-finite loss or gradient (train.max_nonfinite=" +
                                   std::to_string(t.max_nonfinite()) + "); the last good checkpoint is " +
                                   paths.last);
      }
      torch::manual_seed(step_seed);  // the same on every rank: Performer feature redraws
      attention_updated(*model, progress.step);
      window.add(update.loss, update.nll, update.tokens);
      progress.seconds = seconds_before + (now_seconds() - start);

      if (writer && (progress.step % t.log_every() == 0 || progress.step == t.steps())) {
        const double now = now_seconds();
        const double speed = window.tokens / std::max(now - window_start, 1e-9);
        const double per_step = (now - start) / static_cast<double>(progress.step - first_step);
        std::printf("%sstep %ld/%ld | loss %.4f | ppl %.2f | lr %.3g | %.0f tok/s | %s elapsed | ETA %s\n",
                    terminal ? "\r\033[K" : "", static_cast<long>(progress.step), static_cast<long>(t.steps()),
                    window.loss / window.tokens,
                    std::exp(window.nll / window.tokens), lr, speed, format_duration(progress.seconds).c_str(),
                    format_duration(per_step * static_cast<double>(t.steps() - progress.step)).c_str());
        std::fflush(stdout);
        metrics->write("train", progress.step,
                      {{"loss", window.loss / window.tokens}, {"ppl", std::exp(window.nll / window.tokens)},
                       {"lr", lr}, {"tokens_per_s", speed}, {"elapsed_s", progress.seconds}});
        window = LossTotals();
        window_start = now_seconds();
      }
      if (terminal && now_seconds() - last_progress > 0.25) {  // an in-place progress line
        last_progress = now_seconds();
        const double per_step = (last_progress - start) / static_cast<double>(progress.step - first_step);
        std::printf("\r\033[K[%ld/%ld] loss %.4f | lr %.3g | %.0f tok/s | ETA %s", static_cast<long>(progress.step),
                    static_cast<long>(t.steps()), update.loss / update.tokens, lr,
                    window.tokens / std::max(last_progress - window_start, 1e-9),
                    format_duration(per_step * static_cast<double>(t.steps() - progress.step)).c_str());
        std::fflush(stdout);
      }
      if (stopping) {
        log << "stopping on " << (signals.received() == SIGINT ? "SIGINT" : signals.received() == SIGTERM ? "SIGTERM" : "another rank's signal") << " after step "
            << progress.step << ": saving " << paths.last << " (resume with --resume)" << std::endl;
        next_epoch_if_done(plan);
        if (writer) save_checkpoint(paths.last, *model, &optimizer, progress);
        return;
      }
      if (t.valid_every() > 0 && progress.step % t.valid_every() == 0) {
        validate();
        if (writer) {
          save_checkpoint(paths.last, *model, &optimizer, progress);
          keep_numbered_checkpoint(paths, progress.step, t.keep_checkpoints());
        }
      }
    }
    next_epoch_if_done(plan);
  }
  if (t.valid_every() == 0 || progress.step % t.valid_every() != 0) validate();
  if (!writer) return;
  save_checkpoint(paths.last, *model, &optimizer, progress);
  keep_numbered_checkpoint(paths, progress.step, t.keep_checkpoints());
  write_loss_curve(paths.metrics, paths.dir + "/loss.svg");
  std::cout << "done: step " << progress.step << " in " << format_duration(now_seconds() - start) << ", run "
            << run_dir << std::endl;
}

}  // namespace ropelab
