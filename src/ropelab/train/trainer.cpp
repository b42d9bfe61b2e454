#include "ropelab/train/trainer.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <thread>

#include "ropelab/data/text.h"
#include "ropelab/model/precision.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/train/precision_choice.h"
#include "ropelab/train/progress_log.h"
#include "ropelab/util/clock.h"
#include "ropelab/util/device.h"
#include "ropelab/util/files.h"
#include "ropelab/util/machine.h"
#include "ropelab/util/stop_signals.h"
#include "ropelab/util/threads.h"

namespace ropelab {

namespace fs = std::filesystem;

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

/// Where a fine-tuned run starts (train.init_from): the checkpoint and the directory whose
/// tokenizer it uses.
struct InitSource {
  std::string checkpoint, tokenizer_dir;
};

/// train.init_from resolved: a run directory gives its best checkpoint, else its last; a
/// file is the checkpoint itself. Throws ConfigError naming the key when neither exists.
InitSource init_source(const std::string& from) {
  if (fs::is_directory(from)) {
    const RunPaths run(from);
    for (const auto& candidate : {run.best, run.last})
      if (fs::exists(candidate)) return {candidate, from};
    throw ConfigError("train.init_from: " + from + " holds no checkpoint (" + run.best + " or " + run.last + ")");
  }
  if (!fs::is_regular_file(from)) throw ConfigError("train.init_from: " + from + " not found");
  const auto dir = fs::path(from).parent_path().string();
  return {from, dir.empty() ? "." : dir};
}

/// Streams the training text twice: once into the tokenizer's training (or, resuming, the
/// run's tokenizer is loaded; fine-tuning, the initial run's is copied), once tokenized
/// into a memory-mapped token store in RUN/data, so the training corpus is never held in
/// memory. The validation split is small and kept in memory. Logs what was skipped.
TrainingData load_training_data(const Task& task, const RunPaths& paths, bool resume, DataParallel* group,
                                const std::optional<InitSource>& init) {
  const auto& d = task.config().data;
  TrainingData data;
  // Data-parallel: rank 0 builds the tokenizer and the token store; the others wait for
  // it, then load the tokenizer and map the same store.
  const bool builder = !group || group->is_main();
  const auto type = task.config().tokenizer.type();
  const auto tokenizer_file = paths.tokenizer(type);
  if (!builder) group->barrier();
  if (resume || !builder) {
    data.tokenizer = load_tokenizer(task.config().tokenizer, tokenizer_file);
  } else if (init) {  // the vocabulary the initial parameters were trained with
    data.tokenizer = load_tokenizer(task.config().tokenizer, RunPaths(init->tokenizer_dir).tokenizer(type));
    data.tokenizer->save(tokenizer_file);
  } else {
    data.tokenizer = train_tokenizer(
        task.config().tokenizer,
        [&](const std::function<void(const std::string&)>& emit) { task.tokenizer_texts(emit); }, tokenizer_file);
    data.tokenizer->save(tokenizer_file);
  }
  fs::create_directories(paths.data);
  const auto store = (fs::path(paths.data) / "train").string();
  if (builder)
    require_space(paths.data, estimate_store_bytes(corpus_files(d, d.train()), *data.tokenizer),
                  store + ".tokens (the training split, tokenized)");
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

/// One training run: set up from the config (data, model, optimizer, a resumed
/// checkpoint), then updates with validation and checkpoints until the step budget,
/// early stopping or a stop signal.
class Trainer {
 public:
  Trainer(const Config& config, const ConfigFiles& files, const std::string& run_dir, bool resume);
  void run();

 private:
  /// One optimizer update from the next batches of `plan`; false when the run must stop
  /// now (a signal), after saving. `seconds_before` is the training time of the runs it resumes.
  bool step(const std::vector<std::vector<size_t>>& plan, const StopSignals& signals, ProgressLog& progress_log,
            double seconds_before);
  /// Validation loss and perplexity; best checkpoint; early stopping.
  void validate();
  /// checkpoint_last.pt and the numbered copies.
  void checkpoint();
  /// Runs `write` (a line of metrics.jsonl). When it throws (a full disk, a file-size
  /// limit), the updates trained since the last checkpoint are saved to checkpoint_last.pt
  /// before the error goes on, naming the file they are in.
  void write_metrics(const std::function<void()>& write);
  /// An epoch ends when fewer batches than one update needs remain in its plan.
  void next_epoch_if_done(const std::vector<std::vector<size_t>>& plan);
  /// The state of the run found in the run directory: its checkpoint, its config.yaml (a
  /// config the resume changed is written there), its early stop.
  void resume_run(const ConfigFiles& files);
  /// The batches of the current epoch, in order.
  std::vector<std::vector<size_t>> epoch_plan() const;
  /// train.precision: auto: times both on the next batch, keeps the faster (the same on
  /// every rank) and writes it into config.yaml.
  void choose_precision();

  Config config_;  // train.precision: auto becomes what choose_precision measured
  const TrainOptions& t_;
  const ConfigFiles& files_;
  RunPaths paths_;
  LaunchEnv launch_;
  torch::Device device_{torch::kCPU};
  int64_t threads_ = 0;
  std::unique_ptr<DataParallel> group_;
  bool writer_ = true;     // rank 0 alone writes files and logs
  bool terminal_ = false;  // the writer's stdout is a terminal: in-place progress lines
  std::ostream* log_ = &std::cout;
  std::unique_ptr<Task> task_;
  TrainingData data_;
  std::shared_ptr<TaskModel> model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  Progress progress_;
  std::unique_ptr<MetricsLog> metrics_;
  int64_t nonfinite_ = 0;  // updates skipped for a non-finite loss or gradient
  bool stop_ = false;
};

Trainer::Trainer(const Config& config, const ConfigFiles& files, const std::string& run_dir, bool resume)
    : config_(config), t_(config_.train), files_(files), paths_(run_dir), launch_(LaunchEnv::from_environment()) {
  // Each rank on its own GPU, made current before anything touches CUDA (NCCL's communicator,
  // the kernels' current stream).
  device_ = use_device(t_.device(), launch_.local_rank, launch_.local_world_size);
  // Ranks on one machine share its cores unless train.threads says otherwise.
  threads_ = set_threads(
      t_.threads() > 0 || !launch_.distributed()
          ? t_.threads()
          : std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / launch_.local_world_size));
  fs::create_directories(run_dir);
  if (config.data.train().empty()) throw ConfigError("config: data.train is required for training");
  if (launch_.distributed())
    group_ = std::make_unique<DataParallel>(launch_, device_,
                                            std::chrono::milliseconds(static_cast<int64_t>(1000 * t_.dist_timeout())));
  writer_ = !group_ || group_->is_main();
  terminal_ = writer_ && isatty(STDOUT_FILENO);
  log_ = writer_ ? &std::cout : &null_stream();
  torch::manual_seed(static_cast<uint64_t>(t_.seed()));

  task_ = make_task(config);
  // The config first: a run killed in what follows is recognised as one that stopped before
  // its first checkpoint, and --resume can start it again.
  if (!resume && writer_) write_file_atomically(paths_.config, files.write(config_), "config");
  std::optional<InitSource> init;
  if (!resume && !t_.init_from().empty()) init = init_source(t_.init_from());
  data_ = load_training_data(*task_, paths_, resume, group_.get(), init);

  model_ = task_->build_model(data_.tokenizer->vocab_size());
  auto& module = model_->module();
  if (init) {  // parameters and buffers only: the optimizer, schedule and step start afresh
    load_checkpoint(init->checkpoint, module);
    *log_ << "init: parameters from " << init->checkpoint << std::endl;
  }
  module.to(device_);
  if (group_) {  // every rank starts from rank 0's parameters and buffers
    std::vector<torch::Tensor> state;
    for (const auto& p : module.parameters()) state.push_back(p.detach());
    for (const auto& b : module.buffers()) state.push_back(b);
    torch::NoGradGuard no_grad;
    group_->broadcast(state);
  }
  optimizer_ = std::make_unique<torch::optim::Adam>(module.parameters(), torch::optim::AdamOptions(t_.lr())
                                                                             .betas({t_.adam_beta1(), t_.adam_beta2()})
                                                                             .eps(t_.adam_eps())
                                                                             .weight_decay(t_.weight_decay()));
  if (resume) resume_run(files);
  int64_t parameters = 0;
  for (const auto& p : module.parameters()) parameters += p.numel();
  *log_ << "model: " << parameters << " parameters on " << device_ << ", " << threads_ << " threads";
  if (group_) *log_ << " per rank; " << group_->world_size() << " ranks (" << group_->backend() << ")";
  *log_ << std::endl;
  // what the speeds of this log were measured on, kept with the run (and in its record)
  *log_ << "machine: " << describe(machine_info()) << std::endl;
  if (writer_) metrics_ = std::make_unique<MetricsLog>(paths_.metrics);
}

void Trainer::resume_run(const ConfigFiles& files) {
  auto& module = model_->module();
  const auto from = paths_.resume_from();
  load_checkpoint(from, module, optimizer_.get(), &progress_);
  *log_ << "resume: " << from << " at step " << progress_.step << std::endl;
  // train.precision: auto was resolved when the run started: it goes on in what was measured
  if (t_.precision() == Precision::automatic) {
    const auto saved = files.read({paths_.config}, {}).train.precision();
    if (saved != Precision::automatic) config_.train.precision(saved);
  }
  // config.yaml says what the run goes on with: a config the resume changed (--set) is
  // written there, the one before kept as config.stepN.yaml (the first of a step, which
  // is the one that trained up to it)
  if (writer_) {
    std::ifstream in(paths_.config, std::ios::binary);
    const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto now = files.write(config_);
    if (before != now) {
      const auto until = paths_.config_until(progress_.step);
      if (!fs::exists(until)) write_file_atomically(until, before, "config");
      write_file_atomically(paths_.config, now, "config");
      *log_ << "resume: the config changed: " << paths_.config << " holds it now, " << until
            << " the one the run trained with up to step " << progress_.step << std::endl;
    }
  }
  // a run that stopped early stays stopped (unless train.patience has been raised since)
  stop_ = t_.patience() > 0 && progress_.bad_validations >= t_.patience();
  if (stop_)
    *log_ << "early stop: the run stopped at step " << progress_.step << " after " << progress_.bad_validations
          << " validations without improvement (train.patience=" << t_.patience() << ")" << std::endl;
}

void Trainer::validate() {
  if (data_.valid.empty()) return;
  // Every validation, on every rank, from one generator state: positions drawn at
  // evaluation (train_positions.drawn_at_eval) are then the same each time, so validations
  // compare weights, not draws. The next update seeds its own stream.
  torch::manual_seed(static_cast<uint64_t>(t_.seed()) * 1000003ULL + 999983ULL);
  const auto v = [&] {  // in the training's precision
    PrecisionScope precision(t_.precision(), device_);
    return evaluate_loss(*task_, *model_, ExampleView(data_.valid), t_.max_tokens(), t_.label_smoothing(), device_);
  }();
  const double loss = v.mean_loss(), ppl = v.perplexity();
  const bool improved = loss < progress_.best_valid;
  if (improved)
    progress_.best_valid = loss, progress_.bad_validations = 0;
  else
    ++progress_.bad_validations;
  if (writer_) {
    std::printf("%svalid step %ld | loss %.4f | ppl %.2f%s\n", terminal_ ? "\r\033[K" : "",
                static_cast<long>(progress_.step), loss, ppl, improved ? " | best" : "");
    std::fflush(stdout);
    // the best checkpoint first: a metrics line that fails then saves a state whose
    // best_valid is that checkpoint's
    if (improved) save_checkpoint(paths_.best, model_->module(), optimizer_.get(), progress_);
    write_metrics([&] { metrics_->write("valid", progress_.step, {{"loss", loss}, {"ppl", ppl}}); });
  }
  if (t_.patience() > 0 && progress_.bad_validations >= t_.patience()) {
    *log_ << "early stop: no improvement in " << t_.patience() << " validations" << std::endl;
    stop_ = true;
  }
}

void Trainer::checkpoint() {
  if (!writer_) return;
  save_checkpoint(paths_.last, model_->module(), optimizer_.get(), progress_);
  paths_.keep_numbered(progress_.step, t_.keep_checkpoints());
}

void Trainer::write_metrics(const std::function<void()>& write) {
  try {
    write();
  } catch (const std::exception& failed) {
    const std::string what = failed.what();
    try {
      save_checkpoint(paths_.last, model_->module(), optimizer_.get(), progress_);
    } catch (const std::exception& save) {
      throw std::runtime_error(what + "; saving the " + std::to_string(progress_.step) + " updates to " + paths_.last +
                               " failed too: " + save.what());
    }
    throw std::runtime_error(what + "; the " + std::to_string(progress_.step) + " updates so far are saved in " +
                             paths_.last + " (resume with --resume)");
  }
}

void Trainer::next_epoch_if_done(const std::vector<std::vector<size_t>>& plan) {
  if (progress_.batch + t_.accumulate() > static_cast<int64_t>(plan.size())) ++progress_.epoch, progress_.batch = 0;
}

bool Trainer::step(const std::vector<std::vector<size_t>>& plan, const StopSignals& signals, ProgressLog& progress_log,
                   double seconds_before) {
  auto& module = model_->module();
  // Dropout draws depend only on (seed, step), so a resumed run replays them exactly.
  // Each rank draws its own stream; rank 0's is the single-process one.
  const uint64_t step_seed = static_cast<uint64_t>(t_.seed()) * 1000003ULL + static_cast<uint64_t>(progress_.step);
  // Performer features are redrawn before the update that first uses them, never after
  // the last one; the seed is the same on every rank.
  torch::manual_seed(step_seed);
  attention_before_update(module, progress_.step);
  torch::manual_seed(step_seed + 1 + static_cast<uint64_t>(launch_.rank) * 0x9E3779B97F4A7C15ULL);
  std::vector<Batch> batches;
  for (int64_t a = 0; a < t_.accumulate(); ++a) {
    const auto& indices = plan[static_cast<size_t>(progress_.batch++)];
    batches.push_back(task_->collate(
        *data_.train, group_ ? shard_of(indices, group_->rank(), group_->world_size()) : indices, device_));
  }
  ++progress_.step;
  const double lr = learning_rate(t_, config_.model.d_model(), progress_.step);
  bool stopping = signals.received() != 0;  // data-parallel: any rank's signal stops all, after this update
  auto update = update_step(*model_, *optimizer_, batches, t_, lr, group_.get(), &stopping,
                            t_.precision() == Precision::fp16 ? &progress_.loss_scale : nullptr);
  if (update.overflow) {
    *log_ << "step " << progress_.step << ": fp16 gradients overflowed; update skipped, loss scale now "
          << progress_.loss_scale.scale << std::endl;
  } else if (update.skipped) {
    ++nonfinite_;
    *log_ << "step " << progress_.step << ": non-finite "
          << (update.nonfinite_loss   ? "loss"
              : launch_.distributed() ? "loss or gradient"
                                      : "gradient norm")
          << "; update skipped (" << nonfinite_ << " of " << t_.max_nonfinite() << " allowed)" << std::endl;
    if (nonfinite_ > t_.max_nonfinite())
      throw std::runtime_error("training diverged: " + std::to_string(nonfinite_) +
                               " updates with a non-finite loss or gradient (train.max_nonfinite=" +
                               std::to_string(t_.max_nonfinite()) + "); the last good checkpoint is " + paths_.last);
  }
  progress_.seconds = seconds_before + (now_seconds() - progress_log.started());
  if (writer_)
    write_metrics([&] {
      progress_log.update(update, progress_.step, lr, progress_.seconds,
                          progress_.step % t_.log_every() == 0 || progress_.step == t_.steps(), metrics_.get());
    });
  if (stopping) {
    const int signal = signals.received();
    *log_ << "stopping on "
          << (signal == SIGINT    ? "SIGINT"
              : signal == SIGTERM ? "SIGTERM"
                                  : "another rank's signal")
          << " after step " << progress_.step << ": saving " << paths_.last << " (resume with --resume)" << std::endl;
    next_epoch_if_done(plan);
    // an update that is due its validation has it before the stop, so that a resumed run
    // misses none (its best checkpoint, numbered copy, early-stopping count)
    if (t_.valid_every() > 0 && progress_.step % t_.valid_every() == 0) {
      validate();
      checkpoint();
    } else if (writer_) {
      save_checkpoint(paths_.last, module, optimizer_.get(), progress_);
    }
    return false;
  }
  if (t_.valid_every() > 0 && progress_.step % t_.valid_every() == 0) {
    validate();
    checkpoint();
  }
  return true;
}

std::vector<std::vector<size_t>> Trainer::epoch_plan() const {
  return plan_batches(*data_.train, t_.max_tokens(), config_.data.bucketing(),
                      static_cast<uint64_t>(t_.seed()) * 1000003ULL + static_cast<uint64_t>(progress_.epoch));
}

void Trainer::choose_precision() {
  const auto plan = epoch_plan();
  const auto& indices = plan.at(std::min(static_cast<size_t>(progress_.batch), plan.size() - 1));
  const auto batch =
      task_->collate(*data_.train, group_ ? shard_of(indices, group_->rank(), group_->world_size()) : indices, device_);
  PrecisionTrial trial;
  try {
    if (batch.sentences > 0) trial = time_precisions(*model_, batch, t_.label_smoothing());
  } catch (const std::exception& failed) {  // bf16 this device cannot run: fp32, on every rank
    const std::string what = failed.what();
    *log_ << "train.precision auto: timing failed (" << what.substr(0, what.find('\n')) << "); fp32" << std::endl;
    for (auto& p : model_->module().parameters()) p.mutable_grad() = torch::Tensor();
    trial.bf16_seconds = std::numeric_limits<double>::infinity();
  }
  if (group_) {  // the ranks' times summed: every rank keeps the same precision
    auto times = torch::tensor({trial.fp32_seconds, trial.bf16_seconds}, torch::kDouble).to(device_);
    group_->all_reduce_sum({times});
    times = times.cpu();
    trial.fp32_seconds = times[0].item<double>(), trial.bf16_seconds = times[1].item<double>();
    trial.ranks = group_->world_size();
  }
  trial.chosen = faster_precision(trial.fp32_seconds, trial.bf16_seconds);
  config_.train.precision(trial.chosen);
  *log_ << trial.describe() << std::endl;
  if (writer_) write_file_atomically(paths_.config, files_.write(config_), "config");
}

void Trainer::run() {
  auto& module = model_->module();
  module.train();
  if (t_.precision() == Precision::automatic) choose_precision();
  StopSignals signals;  // SIGINT/SIGTERM: finish the update, save, return
  // Until this run reaches its end again (a resumed run may be given more steps).
  if (writer_) fs::remove(paths_.trained);
  ProgressLog progress_log(terminal_, progress_.step, t_.steps());
  const double seconds_before = progress_.seconds;                           // a resumed run's time continues
  if (t_.precision() == Precision::fp16 && progress_.loss_scale.scale <= 0)  // a fresh run
    progress_.loss_scale.scale = kLossScaleInitial;
  while (!stop_ && progress_.step < t_.steps()) {
    const auto plan = epoch_plan();
    while (!stop_ && progress_.step < t_.steps() &&
           progress_.batch + t_.accumulate() <= static_cast<int64_t>(plan.size()))
      if (!step(plan, signals, progress_log, seconds_before)) return;
    next_epoch_if_done(plan);
  }
  if (t_.valid_every() == 0 || progress_.step % t_.valid_every() != 0) validate();
  if (!writer_) return;
  checkpoint();
  write_file_atomically(paths_.trained, "step " + std::to_string(progress_.step) + "\n", "completion marker");
  std::cout << "done: step " << progress_.step << " in " << format_duration(now_seconds() - progress_log.started())
            << ", run " << paths_.dir << std::endl;
}

}  // namespace

void train(const Config& config, const ConfigFiles& files, const std::string& run_dir, bool resume) {
  Trainer(config, files, run_dir, resume).run();
}

}  // namespace ropelab
