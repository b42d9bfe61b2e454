#include "ropelab/train/trainer.h"

#include "ropelab/ops/cross_entropy.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/train/plot.h"
#include "ropelab/util/runtime.h"
#include "ropelab/util/stop_signals.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

namespace ropelab {

namespace fs = std::filesystem;

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

/// Where ranks other than 0 send their log lines.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

struct TrainingData {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<TokenStore> train;  // memory-mapped from RUN/data/train.*
  std::vector<Example> valid;         // in memory
};

/// Streams the training text twice: once into the tokenizer's training (or, resuming, the
/// run's tokenizer is loaded), once tokenized into a memory-mapped token store in
/// RUN/data, so the training corpus is never held in memory. The validation split is
/// small and kept in memory. Logs what was skipped.
TrainingData load_training_data(const Task& task, const RunPaths& paths, bool resume, DataParallel* group) {
  const auto& d = task.config().data;
  TrainingData data;
  // Data-parallel: rank 0 builds the tokenizer and the token store; the others wait for
  // it, then load the tokenizer and map the same store.
  const bool builder = !group || group->is_main();
  if (!builder) group->barrier();
  if (resume || !builder) {
    data.tokenizer = load_tokenizer(task.config().tokenizer, paths.dir);
  } else {
    data.tokenizer = train_tokenizer(task.config().tokenizer,
                                     [&](const std::function<void(const std::string&)>& emit) { task.tokenizer_texts(emit); },
                                     paths.dir);
    data.tokenizer->save(paths.dir);
  }
  fs::create_directories(paths.data);
  const auto store = (fs::path(paths.data) / "train").string();
  const std::string summary = builder ? task.write_training_store(*data.tokenizer, store) : "";
  data.train = task.open_training_store(*data.tokenizer, store);
  if (!d.valid().empty()) data.valid = task.read_examples(d.valid(), *data.tokenizer);
  if (builder)
    std::cout << "data: " << task.describe_data(data.train->size(), summary, data.valid.size()) << "; vocabulary "
              << data.tokenizer->vocab_size() << std::endl;
  if (data.train->size() == 0) throw std::runtime_error(d.train() + ": no usable training examples");
  if (builder && group) group->barrier();
  return data;
}

/// Seconds left at the pace of the updates done in this process.
double eta_seconds(double elapsed, int64_t done, int64_t left) {
  return done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(left) : 0.0;
}

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

  const auto task = make_task(config);
  auto data = load_training_data(*task, paths, resume, group.get());
  const ExampleSet& train_examples = *data.train;
  const ExampleView valid_examples(data.valid);
  if (!resume && writer) std::ofstream(paths.config) << dump_config(config);

  const auto model = task->build_model(data.tokenizer->vocab_size());
  auto& module = model->module();
  module.to(device);
  if (group) {  // every rank starts from rank 0's parameters and buffers
    std::vector<torch::Tensor> state;
    for (const auto& p : module.parameters()) state.push_back(p.detach());
    for (const auto& b : module.buffers()) state.push_back(b);
    torch::NoGradGuard no_grad;
    group->broadcast(state);
  }
  int64_t parameters = 0;
  for (const auto& p : module.parameters()) parameters += p.numel();
  torch::optim::Adam optimizer(module.parameters(), torch::optim::AdamOptions(t.lr())
                                                        .betas({t.adam_beta1(), t.adam_beta2()})
                                                        .eps(t.adam_eps())
                                                        .weight_decay(t.weight_decay()));
  Progress progress;
  if (resume) {
    load_checkpoint(paths.last, module, &optimizer, &progress);
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
  const char* clear_line = terminal ? "\r\033[K" : "";
  auto save = [&] {
    save_checkpoint(paths.last, module, &optimizer, progress);
    paths.keep_numbered(progress.step, t.keep_checkpoints());
  };
  auto validate = [&] {
    if (data.valid.empty()) return;
    auto v = evaluate_loss(*task, *model, valid_examples, t.max_tokens(), t.label_smoothing(), device);
    const double loss = v.mean_loss(), ppl = v.perplexity();
    const bool improved = loss < progress.best_valid;
    if (improved) progress.best_valid = loss, progress.bad_validations = 0;
    else ++progress.bad_validations;
    if (writer) {
      std::printf("%svalid step %ld | loss %.4f | ppl %.2f%s\n", clear_line, static_cast<long>(progress.step), loss,
                  ppl, improved ? " | best" : "");
      std::fflush(stdout);
      metrics->write("valid", progress.step, {{"loss", loss}, {"ppl", ppl}});
      if (improved) save_checkpoint(paths.best, module, &optimizer, progress);
    }
    if (t.patience() > 0 && progress.bad_validations >= t.patience()) {
      log << "early stop: no improvement in " << t.patience() << " validations" << std::endl;
      stop = true;
    }
  };

  module.train();
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
        batches.push_back(task->collate(train_examples,
                                        group ? shard_of(indices, group->rank(), group->world_size()) : indices, device));
      }
      ++progress.step;
      const double lr = learning_rate(t, config.model.d_model(), progress.step);
      bool stopping = signals.received() != 0;  // data-parallel: any rank's signal stops all, after this update
      auto update = update_step(*model, optimizer, batches, t, lr, group.get(), &stopping);
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
      attention_updated(module, progress.step);
      window.add(update.loss, update.nll, update.tokens);
      progress.seconds = seconds_before + (now_seconds() - start);

      const double now = now_seconds();
      const double eta = eta_seconds(now - start, progress.step - first_step, t.steps() - progress.step);
      const double speed = window.tokens / std::max(now - window_start, 1e-9);
      if (writer && (progress.step % t.log_every() == 0 || progress.step == t.steps())) {
        std::printf("%sstep %ld/%ld | loss %.4f | ppl %.2f | lr %.3g | %.0f tok/s | %s elapsed | ETA %s\n", clear_line,
                    static_cast<long>(progress.step), static_cast<long>(t.steps()), window.loss / window.tokens,
                    std::exp(window.nll / window.tokens), lr, speed, format_duration(progress.seconds).c_str(),
                    format_duration(eta).c_str());
        std::fflush(stdout);
        metrics->write("train", progress.step,
                       {{"loss", window.loss / window.tokens}, {"ppl", std::exp(window.nll / window.tokens)},
                        {"lr", lr}, {"tokens_per_s", speed}, {"elapsed_s", progress.seconds}});
        window = LossTotals();
        window_start = now_seconds();
      } else if (terminal && now - last_progress > 0.25) {  // an in-place progress line
        last_progress = now;
        std::printf("\r\033[K[%ld/%ld] loss %.4f | lr %.3g | %.0f tok/s | ETA %s", static_cast<long>(progress.step),
                    static_cast<long>(t.steps()), update.loss / update.tokens, lr, speed,
                    format_duration(eta).c_str());
        std::fflush(stdout);
      }
      if (stopping) {
        const int signal = signals.received();
        log << "stopping on " << (signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "another rank's signal")
            << " after step " << progress.step << ": saving " << paths.last << " (resume with --resume)" << std::endl;
        next_epoch_if_done(plan);
        if (writer) save_checkpoint(paths.last, module, &optimizer, progress);
        return;
      }
      if (t.valid_every() > 0 && progress.step % t.valid_every() == 0) {
        validate();
        if (writer) save();
      }
    }
    next_epoch_if_done(plan);
  }
  if (t.valid_every() == 0 || progress.step % t.valid_every() != 0) validate();
  if (!writer) return;
  save();
  write_loss_curve(paths.metrics, paths.dir + "/loss.svg");
  std::cout << "done: step " << progress.step << " in " << format_duration(now_seconds() - start) << ", run "
            << run_dir << std::endl;
}

}  // namespace ropelab
