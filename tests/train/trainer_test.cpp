// Training pieces and an end-to-end overfitting run through ropelab::train.
#include "ropelab/train/trainer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/data/batching.h"
#include "ropelab/decode/search.h"
#include "ropelab/ops/cross_entropy/cross_entropy.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/run/run.h"
#include "ropelab/task/translation_task.h"

using namespace ropelab;
using ropelab::testing::error_of;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class Training : public ropelab::testing::TempDir {};

}  // namespace

TEST_F(Training, NoamScheduleFollowsThePaper) {
  auto o = TrainOptions().lr_schedule(LrSchedule::noam).lr(1.0).warmup(4000);
  // lr = d^-0.5 * min(step^-0.5, step * warmup^-1.5): peak at step == warmup
  EXPECT_NEAR(learning_rate(o, 512, 4000), std::pow(512.0, -0.5) * std::pow(4000.0, -0.5), 1e-12);
  EXPECT_NEAR(learning_rate(o, 512, 100), std::pow(512.0, -0.5) * 100 * std::pow(4000.0, -1.5), 1e-12);
  EXPECT_NEAR(learning_rate(o, 512, 16000), std::pow(512.0, -0.5) * std::pow(16000.0, -0.5), 1e-12);
  EXPECT_GT(learning_rate(o, 512, 0), 0.0);  // step 0 is guarded
  auto f = TrainOptions().lr_schedule(LrSchedule::inverse_sqrt).lr(5e-4).warmup(1000);
  EXPECT_NEAR(learning_rate(f, 512, 500), 2.5e-4, 1e-12);
  EXPECT_NEAR(learning_rate(f, 512, 1000), 5e-4, 1e-12);
  EXPECT_NEAR(learning_rate(f, 512, 4000), 2.5e-4, 1e-12);
}

// Our smoothing is torch's: eps/V on every class including the target, pads ignored.
TEST_F(Training, SmoothedLossIsTorchsLabelSmoothing) {
  auto logits = torch::randn({3, 5, 11});
  auto target = torch::randint(1, 11, {3, 5});
  target[2][4] = 0;
  target[1][3] = 0;
  auto [loss, nll] = smoothed_loss(logits, target, 0.1, 0);
  namespace F = torch::nn::functional;
  auto expected =
      F::cross_entropy(logits.view({-1, 11}), target.view(-1),
                       F::CrossEntropyFuncOptions().ignore_index(0).label_smoothing(0.1).reduction(torch::kSum));
  auto expected_nll = F::cross_entropy(logits.view({-1, 11}), target.view(-1),
                                       F::CrossEntropyFuncOptions().ignore_index(0).reduction(torch::kSum));
  EXPECT_NEAR(loss.item<double>(), expected.item<double>(), 1e-4);
  EXPECT_NEAR(nll.item<double>(), expected_nll.item<double>(), 1e-4);
}

TEST_F(Training, CheckpointRoundTripAndClearErrors) {
  Seq2Seq model(tiny_options());
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  auto src = torch::randint(1, 23, {2, 4});
  auto tgt = torch::randint(1, 23, {2, 3});
  model(src, tgt).sum().backward();
  adam.step();
  const auto path = (dir_ / "c.pt").string();
  Progress p;
  p.step = 17, p.epoch = 2, p.batch = 5, p.best_valid = 1.25, p.loss_scale = {8192.0, 33};
  save_checkpoint(path, *model, &adam, p);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  Seq2Seq other(tiny_options());
  torch::optim::Adam other_adam(other->parameters(), torch::optim::AdamOptions(1e-3));
  Progress q;
  load_checkpoint(path, *other, &other_adam, &q);
  model->eval(), other->eval();
  EXPECT_LT(max_diff(model(src, tgt), other(src, tgt)), 1e-7);
  EXPECT_EQ(q.step, 17);
  EXPECT_EQ(q.batch, 5);
  EXPECT_DOUBLE_EQ(q.best_valid, 1.25);
  EXPECT_EQ(q.loss_scale.scale, 8192.0);  // fp16 training resumes at its scale
  EXPECT_EQ(q.loss_scale.good, 33);

  Seq2Seq wider(tiny_options().d_ff(64));
  auto message = error_of([&] { load_checkpoint(path, *wider); });
  EXPECT_NE(message.find(path + ": encoder.layers.0.ffn.fc1.weight has shape [32, 16] but the model expects [64, 16]"),
            std::string::npos)
      << message;
  // a truncated file
  const auto cut = (dir_ / "cut.pt").string();
  std::filesystem::copy_file(path, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(path) / 2);
  EXPECT_EQ(error_of([&] { load_checkpoint(cut, *other); }),
            cut + ": not a readable ropelab checkpoint (corrupt, truncated or foreign)");
  EXPECT_EQ(error_of([&] { load_checkpoint((dir_ / "none.pt").string(), *other); }),
            (dir_ / "none.pt").string() + ": checkpoint not found");
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// A checkpoint that cannot fit (here: a file-size limit of 2 KiB) stops before anything is
// written, with one line naming the file and the sizes; the previous checkpoint is untouched.
TEST_F(Training, ASaveThatCannotFitStopsBeforeWriting) {
  Seq2Seq model(tiny_options());
  const auto path = (dir_ / "c.pt").string();
  save_checkpoint(path, *model, nullptr, Progress{});
  const auto before = file_bytes(path);
  ASSERT_GT(before.size(), 2048u);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(1.0);
  }
  std::string message;
  {
    ropelab::testing::FileSizeLimit limit(2048);
    message = error_of([&] { save_checkpoint(path, *model, nullptr, Progress{}); });
  }
  EXPECT_EQ(message.rfind(path + ": needs ", 0), 0u) << message;
  EXPECT_NE(message.find("may write files of at most 2 KiB (ulimit -f); nothing was written"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(file_bytes(path), before);
}

// A disk that fills during the write (the temporary file is /dev/full): one line naming the
// file, the partial file removed, the previous checkpoint untouched.
TEST_F(Training, AFailedSaveKeepsThePreviousCheckpoint) {
  Seq2Seq model(tiny_options());
  const auto path = (dir_ / "c.pt").string();
  save_checkpoint(path, *model, nullptr, Progress{});
  const auto before = file_bytes(path);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(1.0);
  }
  std::filesystem::create_symlink("/dev/full", path + ".tmp");
  const auto message = error_of([&] { save_checkpoint(path, *model, nullptr, Progress{}); });
  EXPECT_EQ(message, path + ": cannot write checkpoint (disk full?): No space left on device");
  EXPECT_FALSE(std::filesystem::is_symlink(path + ".tmp"));
  EXPECT_EQ(file_bytes(path), before);
}

// SIGKILL at arbitrary moments of a process that saves over and over: whatever the moment,
// the checkpoint on disk loads (the old one or the new one, never a torn file). Every
// other trial waits for the child's first completed save before its delay, so that kills
// land after a save however slow the machine (a loaded CI core takes longer than the delay).
TEST_F(Training, KillingASaveLeavesALoadableCheckpoint) {
  Seq2Seq model(tiny_options().d_model(64).d_ff(256));
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  const auto path = (dir_ / "k.pt").string();
  Progress p;
  save_checkpoint(path, *model, &adam, p);
  int64_t latest = 0;  // the highest step a kill left behind: > 0 once a kill landed after a save
  for (int trial = 0; trial < 12; ++trial) {
    int saved[2];
    ASSERT_EQ(::pipe(saved), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(saved[0]);
      for (p.step = 1;; ++p.step) {
        save_checkpoint(path, *model, &adam, p);
        if (p.step == 1 && ::write(saved[1], "s", 1) != 1) std::_Exit(1);
      }
    }
    ::close(saved[1]);
    char byte = 0;
    if (trial % 2 == 1) ASSERT_EQ(::read(saved[0], &byte, 1), 1) << "trial " << trial;
    ::usleep(static_cast<useconds_t>(3000 + 7919 * trial % 40000));  // spread over several saves
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(saved[0]);  // open until the kill: the child's one write never meets a closed pipe
    ASSERT_TRUE(WIFSIGNALED(status));
    ASSERT_EQ(WTERMSIG(status), SIGKILL) << "trial " << trial;
    Seq2Seq other(tiny_options().d_model(64).d_ff(256));
    torch::optim::Adam other_adam(other->parameters(), torch::optim::AdamOptions(1e-3));
    Progress q;
    EXPECT_NO_THROW(load_checkpoint(path, *other, &other_adam, &q)) << "trial " << trial;
    latest = std::max(latest, q.step);
  }
  EXPECT_GT(latest, 0) << "no kill landed after a completed save";
}

// A tiny model memorises eight pairs. Before training the per-token NLL is about
// ln(V) ~ 3.8; below 0.15 nats the model gives the right token ~86% probability on
// average, i.e. it has learned the pairs, and greedy decoding reproduces them.
TEST_F(Training, TinyModelOverfitsAFewPairs) {
  const auto data = (dir_ / "pairs.tsv").string();
  std::ofstream(data) << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\n"
                         "a big dog\tun perro grande\nI eat\tyo como\nyou read\ttú lees\n"
                         "the black cat\tel gato negro\ngood night\tbuenas noches\n";
  ConfigSources sources;
  sources.overrides = {"data.train=" + data,
                       "data.valid=" + data,
                       "tokenizer.type=word",
                       "model.d_model=32",
                       "model.heads=2",
                       "model.d_ff=64",
                       "model.encoder_layers=1",
                       "model.decoder_layers=1",
                       "model.dropout=0",
                       "train.steps=150",
                       "train.lr_schedule=inverse_sqrt",
                       "train.lr=0.005",
                       "train.warmup=20",
                       "train.label_smoothing=0",
                       "train.log_every=50",
                       "train.valid_every=150",
                       "train.threads=1",
                       "decode.beam=1"};
  auto config = load_config(sources);
  const auto run = (dir_ / "run").string();
  train(config, yaml_config_files(), run, false);
  for (const char* file : {"config.yaml", "vocab.txt", "checkpoint_last.pt", "checkpoint_best.pt", "metrics.jsonl"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / "run" / file)) << file;

  auto loaded = open_run(run, "last", torch::kCPU, yaml_config_files());
  auto text = read_parallel(loaded.config.data, data);
  auto examples = tokenize_pairs(text, *loaded.tokenizer, 64, false, nullptr);
  std::vector<size_t> all(examples.size());
  std::iota(all.begin(), all.end(), 0);
  auto batch = collate(examples, all, torch::kCPU);
  torch::NoGradGuard no_grad;
  auto [loss, nll] = smoothed_loss(loaded.model->logits(batch), batch.target_out, 0.0, kPadId);
  EXPECT_LT(nll.item<double>() / static_cast<double>(batch.target_tokens), 0.15);
  auto hyps = greedy_search(loaded.model->start_decoding(batch, loaded.config.decode, true));
  int exact = 0;
  for (size_t i = 0; i < hyps.size(); ++i) exact += loaded.tokenizer->decode(hyps[i].tokens) == text.target[i];
  EXPECT_GE(exact, 7);
}

// The fused CPU loss against the ATen formula: values and gradients, float and double.
TEST_F(Training, FusedLossMatchesReferenceWithGradients) {
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    for (double eps : {0.0, 0.1}) {
      auto logits = torch::randn({3, 5, 37}, torch::TensorOptions().dtype(dtype).requires_grad(true));
      auto target = torch::randint(1, 37, {3, 5});
      target[0][4] = 0, target[2][1] = 0;  // pads
      auto [loss, nll] = smoothed_loss(logits, target, eps, 0);
      auto [ref_loss, ref_nll] = smoothed_loss_reference(logits.to(torch::kDouble), target, eps, 0);
      const double tol = dtype == torch::kFloat ? 1e-4 : 1e-10;
      EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), tol * std::abs(ref_loss.item<double>()));
      EXPECT_NEAR(nll.item<double>(), ref_nll.item<double>(), tol * std::abs(ref_nll.item<double>()));
      auto g = torch::autograd::grad({loss * 1.7}, {logits})[0];
      auto g_ref = torch::autograd::grad({ref_loss * 1.7}, {logits})[0];
      EXPECT_LT(max_diff(g, g_ref), dtype == torch::kFloat ? 1e-5 : 1e-12);
      EXPECT_EQ(g[0][4].abs().sum().item<double>(), 0.0);  // pad rows get no gradient
    }
  }
}

namespace {

/// The per-step training losses in a run's metrics.jsonl, as printed (17 digits).
/// The text of `key`'s value in every train event of RUN/metrics.jsonl.
std::vector<std::string> train_values(const std::string& run, const std::string& key) {
  std::vector<std::string> out;
  std::ifstream in(run + "/metrics.jsonl");
  const std::string field = "\"" + key + "\":";
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"event\":\"train\"") == std::string::npos) continue;
    const auto start = line.find(field) + field.size();
    out.push_back(line.substr(start, line.find_first_of(",}", start) - start));
  }
  return out;
}

std::vector<std::string> step_losses(const std::string& run) { return train_values(run, "loss"); }

}  // namespace

// Stopping after 4 steps and resuming to 9 gives the same loss at every step as running
// 9 steps straight: data position, optimizer state and dropout draws all continue exactly.
TEST_F(Training, ResumeContinuesBitForBit) {
  const auto data = write("pairs.tsv",
                          "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n"
                          "a big dog\tun perro grande\nI eat\tyo como\n");
  auto config_for = [&](int64_t steps) {
    return load_config({{},
                        {"data.train=" + data, "tokenizer.type=word", "model.d_model=16", "model.heads=2",
                         "model.d_ff=16", "model.encoder_layers=1", "model.decoder_layers=1", "model.dropout=0.2",
                         "train.max_tokens=12", "train.steps=" + std::to_string(steps), "train.log_every=1",
                         "train.valid_every=0", "train.threads=1", "train.lr_schedule=constant", "train.lr=0.001"}});
  };
  const auto straight = (dir_ / "straight").string(), resumed = (dir_ / "resumed").string();
  train(config_for(9), yaml_config_files(), straight, false);
  train(config_for(4), yaml_config_files(), resumed, false);
  train(config_for(9), yaml_config_files(), resumed, true);
  const auto a = step_losses(straight), b = step_losses(resumed);
  // config.yaml holds the config the run went on with (train.steps 9); the one it trained
  // with up to step 4 is kept beside it
  EXPECT_NE(file_bytes(resumed + "/config.yaml").find("steps: 9\n"), std::string::npos);
  EXPECT_NE(file_bytes(resumed + "/config.step4.yaml").find("steps: 4\n"), std::string::npos);
  EXPECT_EQ(file_bytes(resumed + "/config.yaml"), file_bytes(straight + "/config.yaml"));
  ASSERT_EQ(a.size(), 9u);
  ASSERT_EQ(b.size(), 9u);
  EXPECT_EQ(a, b);
  // training time continues from the checkpoint: elapsed_s never goes back at the resume
  std::vector<double> elapsed;
  for (const auto& v : train_values(resumed, "elapsed_s")) elapsed.push_back(std::stod(v));
  ASSERT_EQ(elapsed.size(), 9u);
  EXPECT_GT(elapsed[4], elapsed[3]);
  EXPECT_TRUE(std::is_sorted(elapsed.begin(), elapsed.end()));
  // killed after a validation saved checkpoint_best.pt but before checkpoint_last.pt: the
  // run resumes from the best checkpoint, the newest state it has
  const auto from_best = (dir_ / "from_best").string();
  train(config_for(4), yaml_config_files(), from_best, false);
  std::filesystem::rename(from_best + "/checkpoint_last.pt", from_best + "/checkpoint_best.pt");
  EXPECT_EQ(RunPaths(from_best).resume_from(), from_best + "/checkpoint_best.pt");
  train(config_for(9), yaml_config_files(), from_best, true);
  EXPECT_EQ(step_losses(from_best), a);
}

// A metrics line that cannot be written (metrics.jsonl a link to /dev/full) stops the
// training with one line naming the file, after saving the updates trained since the last
// checkpoint to checkpoint_last.pt; a validation saves its best checkpoint before its line.
TEST_F(Training, AMetricsLineThatFailsKeepsTheUpdates) {
  const auto data = write(
      "pairs.tsv", "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n");
  auto config_for = [&](int64_t steps, int64_t log_every, int64_t valid_every) {
    return load_config(
        {{},
         {"data.train=" + data, "data.valid=" + data, "tokenizer.type=word", "model.d_model=16", "model.heads=2",
          "model.d_ff=16", "model.encoder_layers=1", "model.decoder_layers=1", "train.max_tokens=12",
          "train.steps=" + std::to_string(steps), "train.log_every=" + std::to_string(log_every),
          "train.valid_every=" + std::to_string(valid_every), "train.threads=1", "train.lr_schedule=constant",
          "train.lr=0.003"}});
  };
  auto progress_of = [](const std::string& run, const std::string& file) {
    auto loaded = open_run(run, "last", torch::kCPU, yaml_config_files());
    Progress p;
    load_checkpoint(run + "/" + file, loaded.model->module(), nullptr, &p);
    return p;
  };
  auto full_disk_for_metrics = [](const std::string& run) {
    std::filesystem::remove(run + "/metrics.jsonl");
    std::filesystem::create_symlink("/dev/full", run + "/metrics.jsonl");
  };
  // a validation's line (every 2 updates; train lines every 100)
  const auto valid = (dir_ / "valid").string();
  train(config_for(4, 100, 2), yaml_config_files(), valid, false);
  const auto before = progress_of(valid, "checkpoint_last.pt");
  ASSERT_EQ(before.step, 4);
  full_disk_for_metrics(valid);
  EXPECT_EQ(error_of([&] { train(config_for(9, 100, 2), yaml_config_files(), valid, true); }),
            valid + "/metrics.jsonl: cannot write the valid event of step 6 (disk full?); the 6 updates so far are " +
                "saved in " + valid + "/checkpoint_last.pt (resume with --resume)");
  const auto last = progress_of(valid, "checkpoint_last.pt"), best = progress_of(valid, "checkpoint_best.pt");
  EXPECT_EQ(last.step, 6);
  ASSERT_LT(last.best_valid, before.best_valid);  // update 6 improved: its best checkpoint was due
  EXPECT_EQ(best.step, 6);
  EXPECT_EQ(best.best_valid, last.best_valid);

  // a training line (every update)
  const auto lines = (dir_ / "lines").string();
  train(config_for(4, 1, 0), yaml_config_files(), lines, false);
  full_disk_for_metrics(lines);
  EXPECT_EQ(error_of([&] { train(config_for(9, 1, 0), yaml_config_files(), lines, true); }),
            lines + "/metrics.jsonl: cannot write the train event of step 5 (disk full?); the 5 updates so far are " +
                "saved in " + lines + "/checkpoint_last.pt (resume with --resume)");
  EXPECT_EQ(progress_of(lines, "checkpoint_last.pt").step, 5);

  // the save fails too: both errors in the line, the previous checkpoint kept
  const auto both = (dir_ / "both").string();
  train(config_for(4, 1, 0), yaml_config_files(), both, false);
  full_disk_for_metrics(both);
  std::filesystem::create_symlink("/dev/full", both + "/checkpoint_last.pt.tmp");
  EXPECT_EQ(error_of([&] { train(config_for(9, 1, 0), yaml_config_files(), both, true); }),
            both + "/metrics.jsonl: cannot write the train event of step 5 (disk full?); saving the 5 updates to " +
                both + "/checkpoint_last.pt failed too: " + both +
                "/checkpoint_last.pt: cannot write checkpoint (disk full?): No space left on device");
  EXPECT_EQ(progress_of(both, "checkpoint_last.pt").step, 4);
}

// A run that stopped early (train.patience validations without improvement; here lr 1e-30, so
// none improves after the first) is finished: training it again takes no update more.
TEST_F(Training, AnEarlyStoppedRunStaysStopped) {
  const auto data = write("pairs.tsv", "the cat\tel gato\nthe dog\tel perro\n");
  const auto config =
      load_config({{},
                   {"data.train=" + data, "data.valid=" + data, "tokenizer.type=word", "model.d_model=16",
                    "model.heads=2", "model.d_ff=16", "model.encoder_layers=1", "model.decoder_layers=1",
                    "train.max_tokens=12", "train.steps=50", "train.log_every=1", "train.valid_every=1",
                    "train.patience=2", "train.threads=1", "train.lr_schedule=constant", "train.lr=1e-30"}});
  const auto run = (dir_ / "run").string();
  auto step_of_last = [&] {
    auto loaded = open_run(run, "last", torch::kCPU, yaml_config_files());
    Progress p;
    load_checkpoint(run + "/checkpoint_last.pt", loaded.model->module(), nullptr, &p);
    return p.step;
  };
  train(config, yaml_config_files(), run, false);
  ASSERT_EQ(step_of_last(), 3);  // validations 2 and 3 did not improve on 1
  train(config, yaml_config_files(), run, true);
  EXPECT_EQ(step_of_last(), 3);
  EXPECT_TRUE(std::filesystem::exists(run + "/trained"));
  EXPECT_EQ(step_losses(run).size(), 3u);                             // no update logged after the stop
  EXPECT_FALSE(std::filesystem::exists(run + "/config.step3.yaml"));  // the same config: nothing to keep
}

// A language model trained on randomized positions and validated on drawn ones too: every
// validation draws the same positions, so the same weights (updates of lr 1e-30 leave them
// as they are) score the same loss each time, and early stopping reads weights, not draws.
TEST_F(Training, ValidationsDrawTheSamePositionsEveryTime) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "line " + std::to_string(i * 7919 % 1000) + " of the text, and more words\n";
  const auto data = write("text.txt", text);
  const auto config = load_config(
      {{},
       {"task=lm", "data.format=text", "tokenizer.type=byte", "data.context=32", "data.train=" + data,
        "data.valid=" + data, "model.d_model=16", "model.heads=2", "model.d_ff=16", "model.decoder_layers=1",
        "model.position={type: rotary, train_positions: {type: randomized, drawn_at_eval: true}}",
        "train.max_tokens=64", "train.steps=4", "train.log_every=1", "train.valid_every=1", "train.threads=1",
        "train.lr_schedule=constant", "train.lr=1e-30"}});
  const auto run = (dir_ / "run").string();
  train(config, yaml_config_files(), run, false);
  std::vector<std::string> losses;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);)
    if (line.find("\"event\":\"valid\"") != std::string::npos) losses.push_back(line.substr(line.find("\"loss\":")));
  ASSERT_EQ(losses.size(), 4u);
  for (const auto& loss : losses) EXPECT_EQ(loss, losses.front());
}

// Performer features: validation and the saved checkpoint use the features the last update
// trained with. With redraw_every equal to the number of updates, no update ever sees a
// new draw, so the run equals one that never redraws; a redraw inside the run is kept
// across a resume.
TEST_F(Training, PerformerFeaturesAreNeverRedrawnAfterTheLastUpdate) {
  const auto data = write(
      "pairs.tsv", "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n");
  auto config_for = [&](int64_t steps, int64_t redraw_every) {
    return load_config(
        {{},
         {"data.train=" + data, "data.valid=" + data, "tokenizer.type=word", "model.d_model=16", "model.heads=2",
          "model.d_ff=16", "model.encoder_layers=1", "model.decoder_layers=1", "model.attention.type=performer",
          "model.attention.num_features=8", "model.attention.redraw_every=" + std::to_string(redraw_every),
          "train.max_tokens=12", "train.steps=" + std::to_string(steps), "train.log_every=1", "train.valid_every=0",
          "train.threads=1", "train.lr_schedule=constant", "train.lr=0.001"}});
  };
  auto features_of = [](const std::string& run) {
    auto loaded = open_run(run, "last", torch::kCPU, yaml_config_files());
    std::vector<torch::Tensor> out;
    for (const auto& b : loaded.model->module().named_buffers())
      if (b.key().find("features") != std::string::npos) out.push_back(b.value().clone());
    return out;
  };
  const auto scheduled = (dir_ / "scheduled").string(), never = (dir_ / "never").string();
  train(config_for(4, 4), yaml_config_files(), scheduled, false);
  train(config_for(4, 0), yaml_config_files(), never, false);
  const auto a = features_of(scheduled), b = features_of(never);
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "features " << i;
  EXPECT_EQ(step_losses(scheduled), step_losses(never));

  // redrawn once, before update 4; a run resumed at update 3 redraws at the same point
  const auto straight = (dir_ / "straight").string(), resumed = (dir_ / "resumed").string();
  train(config_for(6, 3), yaml_config_files(), straight, false);
  train(config_for(3, 3), yaml_config_files(), resumed, false);
  train(config_for(6, 3), yaml_config_files(), resumed, true);
  EXPECT_EQ(step_losses(straight), step_losses(resumed));
  const auto s = features_of(straight), r = features_of(resumed), initial = features_of(never);
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_TRUE(torch::equal(s[i], r[i])) << "features " << i;
    EXPECT_FALSE(torch::equal(s[i], initial[i])) << "features " << i << " were never redrawn";
  }
}

// A non-finite loss or gradient skips the update (no Adam step, gradients cleared), and the
// result says which.
TEST_F(Training, NonFiniteLossOrGradientSkipsTheUpdate) {
  Seq2Seq model(tiny_options());
  const TranslationTask::Model task(model);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-2));
  std::vector<Example> examples{{{5, 6, 7}, {8, 9}, {}}, {{10, 11}, {12, 13, 14}, {}}};
  const std::vector<Batch> batches{collate(examples, {0, 1}, torch::kCPU)};
  auto before = model->embedding->weight.detach().clone();
  auto ok = update_step(task, adam, batches, TrainOptions().clip_norm(1.0), 1e-2);
  EXPECT_FALSE(ok.skipped);
  EXPECT_FALSE(torch::equal(model->embedding->weight, before));  // a finite update moves weights

  auto fc = model->encoder->layers[0]->as<TransformerLayerImpl>()->ffn->fc1->weight;
  {
    torch::NoGradGuard no_grad;
    fc[0][0] = std::numeric_limits<float>::quiet_NaN();
  }
  auto poisoned = model->embedding->weight.detach().clone();
  auto bad = update_step(task, adam, batches, TrainOptions(), 1e-2);
  EXPECT_TRUE(bad.skipped);
  // one NaN weight behind a ReLU: the loss stays finite and the gradient does not
  EXPECT_FALSE(bad.nonfinite_loss);
  EXPECT_FALSE(ok.nonfinite_loss);
  EXPECT_TRUE(torch::equal(model->embedding->weight, poisoned));  // no step taken
  for (const auto& p : model->parameters())
    EXPECT_TRUE(!p.grad().defined() || p.grad().abs().sum().item<double>() == 0);
  {
    torch::NoGradGuard no_grad;
    model->embedding->weight[12].fill_(std::numeric_limits<float>::quiet_NaN());  // a target token's row
  }
  auto lost = update_step(task, adam, batches, TrainOptions(), 1e-2);
  EXPECT_TRUE(lost.skipped);
  EXPECT_TRUE(lost.nonfinite_loss);  // the log names the loss
}
