#include "ropelab/run/run.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "ropelab/position/unused_settings.h"
#include "ropelab/run/checkpoint.h"
#include "ropelab/util/files.h"

namespace ropelab {

namespace fs = std::filesystem;

RunPaths::RunPaths(std::string d)
    : dir(std::move(d)),
      config((fs::path(dir) / "config.yaml").string()),
      last((fs::path(dir) / "checkpoint_last.pt").string()),
      best((fs::path(dir) / "checkpoint_best.pt").string()),
      metrics((fs::path(dir) / "metrics.jsonl").string()),
      data((fs::path(dir) / "data").string()),
      trained((fs::path(dir) / "trained").string()) {}

std::string RunPaths::averaged(int64_t count) const {
  return (fs::path(dir) / ("checkpoint_avg" + std::to_string(count) + ".pt")).string();
}

std::string RunPaths::tokenizer(TokenizerType type) const {
  switch (type) {
    case TokenizerType::word:
      return (fs::path(dir) / "vocab.txt").string();
    case TokenizerType::sentencepiece:
      return (fs::path(dir) / "spm.model").string();
    case TokenizerType::byte:
      return "";
  }
  throw std::logic_error("unhandled TokenizerType");
}

std::string RunPaths::loss_plot() const { return (fs::path(dir) / "loss.svg").string(); }

RunPaths::PasskeyFiles RunPaths::passkey(const std::string& precision_suffix) const {
  const auto stem = (fs::path(dir) / ("passkey" + precision_suffix)).string();
  return {stem + ".csv", stem + ".json", stem + ".svg", stem + ".partial.jsonl"};
}

RunPaths::PasskeyFiles RunPaths::retrieval(const std::string& task, const std::string& precision_suffix) const {
  const auto stem = (fs::path(dir) / ("retrieval." + task + precision_suffix)).string();
  return {stem + ".csv", stem + ".json", stem + ".svg", stem + ".partial.jsonl"};
}

bool run_started_with(const std::string& dir, const Config& config, const ConfigFiles& files) {
  // Settings no encoder of the run reads are not part of its identity.
  auto identity = [](Config c) {
    for (auto* p : {&c.model.encoder_position(), &c.model.decoder_position()}) *p = with_unused_settings_cleared(*p);
    return c;
  };
  try {
    auto saved = files.read({RunPaths(dir).config}, {});
    saved.train.threads(config.train.threads()).device(config.train.device());
    // train.precision: auto is written into the run's config as what it measured (fp32 or bf16)
    if (config.train.precision() == Precision::automatic && saved.train.precision() != Precision::fp16)
      saved.train.precision(Precision::automatic);
    return files.write(identity(saved)) == files.write(identity(config));
  } catch (const std::exception&) {
    return false;
  }
}

std::string run_device(const std::string& dir, const ConfigFiles& files) {
  const auto config = RunPaths(dir).config;
  if (!fs::exists(config)) return "unknown";
  return files.read({config}, {}).train.device();
}

std::string RunPaths::checkpoint(const std::string& which) const {
  if (which == "best") return fs::exists(best) ? best : last;  // a run without validation has no best
  if (which == "last") return last;
  return which;
}

std::string RunPaths::resume_from() const { return !fs::exists(last) && fs::exists(best) ? best : last; }

std::string RunPaths::config_until(int64_t step) const {
  return (fs::path(dir) / ("config.step" + std::to_string(step) + ".yaml")).string();
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

void RunPaths::keep_numbered(int64_t step, int64_t keep) const {
  if (keep <= 0) return;
  const auto target = numbered(step);
  copy_file_atomically(last, target, "a copy of the last checkpoint");
  auto all = numbered_checkpoints();
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove(all[i]);
}

LoadedRun open_run_untrained(const std::string& dir, const ConfigFiles& files,
                             const std::vector<std::string>& overrides) {
  RunPaths paths(dir);
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + ": run directory not found");
  for (const auto& o : overrides)
    if (auto error = files.override_error(o); !error.empty()) throw std::runtime_error(error);
  LoadedRun run;
  run.config = files.read({paths.config}, overrides);
  run.tokenizer = load_tokenizer(run.config.tokenizer, paths.tokenizer(run.config.tokenizer.type()));
  run.task = make_task(run.config);
  run.model = run.task->build_model(run.tokenizer->vocab_size());
  return run;
}

LoadedRun open_run(const std::string& dir, const std::string& checkpoint, const torch::Device& device,
                   const ConfigFiles& files, const std::vector<std::string>& overrides) {
  auto run = open_run_untrained(dir, files, overrides);
  load_checkpoint(RunPaths(dir).checkpoint(checkpoint), run.model->module());
  run.model->module().to(device);
  run.model->module().eval();
  return run;
}

}  // namespace ropelab
