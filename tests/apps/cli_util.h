#pragma once
// What the tests of the ropelab executable share (tests/apps/cli_*_test.cpp): running the
// binary, temporary files and directories, and the tiny runs several of them train.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "ropelab/build_config.h"
#include "ropelab/config/config.h"
#include "ropelab/run/run.h"

namespace ropelab::cli_test {

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

/// Runs a shell command line, capturing stdout and stderr.
inline Result run_shell(const std::string& command) {
  std::string output;
  FILE* pipe = popen(("{ " + command + " ; } 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

/// Runs the ropelab executable with `args`.
inline Result run(const std::string& args) { return run_shell(std::string(ROPELAB_BINARY_DIR) + "/ropelab " + args); }

inline std::string write_temp(const std::string& name, const std::string& text) {
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

/// An empty directory of the system temp dir, per process: ropelab_cli_TAG_PID.
inline std::filesystem::path fresh_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("ropelab_cli_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

using ropelab::testing::read_text;

/// A tiny translator experiment in ROOT/exp.yaml on the demo pairs: `steps` (more `set`
/// entries), then `tail` (grid, seeds, fine-tunes).
inline std::string tiny_translator_experiment(const std::filesystem::path& root, const std::string& steps,
                                              const std::string& tail) {
  const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  const auto exp = (root / "exp.yaml").string();
  std::ofstream(exp) << "base: " << demo << "\nset: [data.train=" << pairs << ", data.valid=" << pairs
                     << ", data.test=" << pairs << ", " << steps
                     << ", model.d_model=16, model.heads=2, model.d_ff=16, model.encoder_layers=1,"
                        " model.decoder_layers=1]\n"
                     << tail;
  return exp;
}

/// tiny_translator_experiment with `train.steps=2`, two encoders (sinusoidal, rotary) and a
/// fine-tune of the rotary run for 3 updates.
inline std::string tiny_finetune_experiment(const std::filesystem::path& root) {
  return tiny_translator_experiment(
      root, "train.steps=2",
      "grid:\n  model.position.type: [sinusoidal, rotary]\nfinetune:\n  from: model.position.type=rotary\n"
      "  set: [train.steps=3]\n");
}

/// A micro translator trained through the CLI once for the app tests below (~2 s).
inline const std::string& micro_run() {
  static const std::string dir = [] {
    const auto root = fresh_dir("run");
    const auto data = (root / "pairs.tsv").string();
    std::ofstream(data)
        << "the cat\tel gato\nthe dog\tel perro\na red house\tuna casa roja\ngood night\tbuenas noches\n";
    const auto run_dir = (root / "run").string();
    auto r = run("train " + std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml --set data.train=" + data +
                 " --set data.valid=" + data + " --set data.test=" + data +
                 " --set model.d_model=16 --set model.heads=2 --set model.d_ff=16 --set model.encoder_layers=1"
                 " --set model.decoder_layers=1 --set train.steps=30 --set train.valid_every=10 --threads 1 -o " +
                 run_dir);
    EXPECT_EQ(r.code, 0) << r.output;
    return run_dir;
  }();
  return dir;
}

// A byte-level rotary LM of one layer trained for 5 updates on one line of text (written
// into `root`) into `lm`, with `sets` added to the command line.
inline Result train_tiny_rotary_lm(const std::filesystem::path& root, const std::string& lm, const std::string& sets) {
  const auto text = (root / "text.txt").string();
  std::ofstream(text) << "the cat sat on the mat. the dog sat on the log. a red house stood by the road.\n";
  return run("train " + std::string(ROPELAB_SOURCE_DIR) +
             "/experiments/demo_tiny.yaml --set task=lm --set data.format=text --set tokenizer.type=byte"
             " --set data.context=16 --set model.position.type=rotary --set model.heads=2"
             " --set model.decoder_layers=1 --set train.steps=5 --set train.valid_every=0 --threads 1" +
             sets + " --set data.train=" + text + " --set data.valid=" + text + " --set data.test=" + text + " -o " +
             lm);
}

// Data-parallel training on c10d/Gloo over loopback.

/// demo_tiny for 12 steps without dropout, data named absolutely (ctest runs in build/).
inline const std::string kTinyDp = std::string(ROPELAB_SOURCE_DIR) +
                                   "/experiments/demo_tiny.yaml --set data.train=" + ROPELAB_SOURCE_DIR +
                                   "/data/demo/pairs.tsv --set data.valid=" + ROPELAB_SOURCE_DIR +
                                   "/data/demo/pairs.tsv --set model.dropout=0 --set train.adam_eps=1e-6"
                                   " --set train.steps=12 --set train.valid_every=6 --threads 1";

/// Trains demo_tiny for 12 steps without dropout into RUN; `launch` prefixes the command
/// (environment variables) and `extra` is appended (--nproc 2). Adam's eps is 1e-6: with
/// 1e-9, gradients that vanish up to rounding (~1e-12) still move parameters by about lr,
/// so summation order alone would separate the runs by ~4e-4.
inline void train_tiny(const std::string& run_dir, const std::string& launch, const std::string& extra) {
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  const std::string command = launch + " " + cli + " train " + kTinyDp + " -o " + run_dir + " " + extra;
  auto r = run_shell(command);
  ASSERT_EQ(r.code, 0) << command << "\n" << r.output;
}

inline double max_parameter_difference(const std::string& a, const std::string& b) {
  auto one = ropelab::open_run(a, "last", torch::kCPU, ropelab::yaml_config_files()),
       two = ropelab::open_run(b, "last", torch::kCPU, ropelab::yaml_config_files());
  auto p = one.model->module().parameters(), q = two.model->module().parameters();
  EXPECT_EQ(p.size(), q.size());
  double worst = 0;
  for (size_t i = 0; i < p.size(); ++i) worst = std::max(worst, (p[i] - q[i]).abs().max().item<double>());
  return worst;
}

/// demo_tiny on the demo pairs, one thread: `train_args` are appended to `train CONFIG`.
inline std::string demo_train(const std::string& train_args) {
  const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";
  return std::string(ROPELAB_BINARY_DIR) + "/ropelab train " + ROPELAB_SOURCE_DIR +
         "/experiments/demo_tiny.yaml --set data.train=" + pairs + " --set data.valid=" + pairs + " --threads 1 " +
         train_args;
}

/// Runs a bash script (placeholders already filled) from DIR/NAME.sh, capturing its output.
inline Result run_script(const std::filesystem::path& dir, const std::string& name, const std::string& script) {
  const auto path = (dir / (name + ".sh")).string();
  std::ofstream(path) << "set -u\n" << script;
  return run_shell("timeout 300 bash " + path);
}

/// `text` with every "{KEY}" replaced by its value.
inline std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values)
    for (size_t at; (at = text.find("{" + key + "}")) != std::string::npos;) text.replace(at, key.size() + 2, value);
  return text;
}

/// The "loss" of every train event in RUN/metrics.jsonl, in order, as written.
inline std::vector<std::string> train_losses(const std::string& run_dir) {
  std::vector<std::string> losses;
  std::istringstream lines(read_text(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"event\":\"train\"") == std::string::npos) continue;
    const auto at = line.find("\"loss\":");
    if (at != std::string::npos) losses.push_back(line.substr(at + 7, line.find(',', at) - at - 7));
  }
  return losses;
}

}  // namespace ropelab::cli_test
