#include "ropelab/run/checkpoint.h"

#include <filesystem>
#include <stdexcept>

#include "ropelab/util/files.h"

namespace ropelab {

namespace {

const char* kProgressKeys[] = {"progress.step", "progress.epoch", "progress.batch", "progress.bad_validations"};

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const Progress& progress) {
  torch::serialize::OutputArchive archive;
  for (const auto& p : model.named_parameters()) archive.write("model." + p.key(), p.value().detach().cpu());
  for (const auto& b : model.named_buffers()) archive.write("model." + b.key(), b.value().cpu(), /*is_buffer=*/true);
  if (optimizer) {
    torch::serialize::OutputArchive state;
    optimizer->save(state);
    archive.write("optimizer", state);
  }
  const int64_t values[] = {progress.step, progress.epoch, progress.batch, progress.bad_validations};
  for (size_t i = 0; i < 4; ++i) archive.write(kProgressKeys[i], torch::tensor(values[i]));
  archive.write("progress.best_valid", torch::tensor(progress.best_valid, torch::kDouble));
  archive.write("progress.seconds", torch::tensor(progress.seconds, torch::kDouble));
  archive.write("progress.loss_scale", torch::tensor(progress.loss_scale.scale, torch::kDouble));
  archive.write("progress.loss_scale_good", torch::tensor(progress.loss_scale.good));

  // The archive is built in memory first, so its size is known before anything is written
  // (a checkpoint that cannot fit stops before it starts), then written through our own
  // checked calls: LibTorch's file writer throws from its destructor when a write fails,
  // which terminates the process.
  std::string bytes;
  archive.save_to([&](const void* data, size_t n) -> size_t {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  write_file_atomically(path, bytes, "checkpoint");
}

void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     Progress* progress) {
  if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": checkpoint not found");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error&) {
    throw std::runtime_error(path + ": not a readable ropelab checkpoint (corrupt, truncated or foreign)");
  }
  torch::NoGradGuard no_grad;
  auto restore = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    torch::Tensor value;
    if (!archive.try_read("model." + name, value, is_buffer))
      throw std::runtime_error(path + ": checkpoint has no " + name + " (a different model?)");
    if (value.sizes() != target.sizes())
      throw std::runtime_error(path + ": " + name + " has shape " + c10::str(value.sizes()) +
                               " but the model expects " + c10::str(target.sizes()) +
                               " (config and checkpoint disagree)");
    target.copy_(value);
  };
  for (auto& p : model.named_parameters()) restore(p.key(), p.value(), false);
  for (auto& b : model.named_buffers()) restore(b.key(), b.value(), true);
  if (optimizer) {
    torch::serialize::InputArchive state;
    if (!archive.try_read("optimizer", state)) throw std::runtime_error(path + ": checkpoint has no optimizer state");
    optimizer->load(state);
  }
  if (progress) {
    int64_t* fields[] = {&progress->step, &progress->epoch, &progress->batch, &progress->bad_validations};
    for (size_t i = 0; i < 4; ++i) {
      torch::Tensor v;
      if (!archive.try_read(kProgressKeys[i], v)) throw std::runtime_error(path + ": checkpoint has no progress");
      *fields[i] = v.item<int64_t>();
    }
    torch::Tensor best;
    if (archive.try_read("progress.best_valid", best)) progress->best_valid = best.item<double>();
    torch::Tensor seconds;  // absent from checkpoints written before it was kept
    if (archive.try_read("progress.seconds", seconds)) progress->seconds = seconds.item<double>();
    torch::Tensor scale, good;  // absent from checkpoints written before fp16 training existed
    if (archive.try_read("progress.loss_scale", scale)) progress->loss_scale.scale = scale.item<double>();
    if (archive.try_read("progress.loss_scale_good", good)) progress->loss_scale.good = good.item<int64_t>();
  }
}

void average_checkpoints(const std::vector<std::string>& inputs, torch::nn::Module& model, const std::string& output) {
  if (inputs.empty()) throw std::runtime_error(output + ": no checkpoints to average");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sums;
  Progress progress;  // the newest checkpoint's
  for (const auto& path : inputs) {
    load_checkpoint(path, model, nullptr, &path == &inputs.back() ? &progress : nullptr);
    auto params = model.parameters();
    if (sums.empty())
      for (const auto& p : params) sums.push_back(p.detach().to(torch::kDouble).clone());
    else
      for (size_t i = 0; i < params.size(); ++i) sums[i] += params[i].detach().to(torch::kDouble);
  }
  auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(sums[i] / static_cast<double>(inputs.size()));
  save_checkpoint(output, model, nullptr, progress);
}

}  // namespace ropelab
