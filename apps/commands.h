#pragma once
// Subcommand registration for the ropelab executable. Each add_* registers its flags and
// a callback that calls the library; errors propagate to main() as exceptions.

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropelab/config/config.h"

namespace ropelab::apps {

/// --device and --threads, shared by every subcommand that touches tensors.
struct RuntimeFlags {
  std::string device;
  int64_t threads = -1;
  void add_to(CLI::App& app);
  /// --device/--threads as overrides of train.device/train.threads.
  void append_overrides(std::vector<std::string>& overrides) const;
  /// The device to use when no config says otherwise.
  std::string device_or(const std::string& fallback) const { return device.empty() ? fallback : device; }
  /// For commands without a config: sets the threads (--threads, else every core) and
  /// returns the device (--device, else cpu).
  torch::Device apply() const;
};

/// The flags every bench subcommand shares: --device, --threads and --json.
struct BenchFlags : RuntimeFlags {
  bool json = false;
  void add_to(CLI::App& app, const char* json_help = "one JSON object");
  /// With --json, prints `row` as one line and returns true; otherwise prints nothing and
  /// returns false (the caller prints its text line).
  bool json_line(const nlohmann::ordered_json& row) const;
};

/// Number checks for flags whose failure reads "--beam: must be > 0, got 0" (CLI11's own
/// PositiveNumber/NonNegativeNumber print their range as 300-digit doubles).
CLI::Validator positive();
CLI::Validator nonnegative();

/// --precision NAME (fp32, bf16 or fp16) into `precision`, whose value is the default shown;
/// another name fails with one line naming the flag and the choices.
CLI::Option* add_precision_flag(CLI::App& cmd, Precision& precision, const std::string& help);

/// A command that a signal stopped after it had put out cleanly what it had: main() says so
/// in one line and exits with `status` (128 + the signal, as a shell reports it).
struct Interrupted : std::runtime_error {
  Interrupted(const std::string& what, int status) : std::runtime_error(what), status(status) {}
  int status;
};

/// Whether the command line starts with --parse-only, which it then drops: the command is
/// parsed and its flags checked, and nothing runs.
bool take_parse_only_flag(int& argc, char** argv);
/// `cli` (the main app) stops once the command line is parsed and checked, before any
/// subcommand runs; the checks that a path exists are off.
void make_parse_only(CLI::App& cli);

/// The process's command line, as main() received it.
std::vector<std::string>& command_line();

void add_train(CLI::App& cli);
void add_translate(CLI::App& cli);
void add_eval(CLI::App& cli);
void add_generate(CLI::App& cli);
void add_score(CLI::App& cli);
void add_average(CLI::App& cli);
void add_bench(CLI::App& cli);
void add_bench_attention(CLI::App& bench);
void add_bench_decode(CLI::App& bench);
void add_bench_rotary(CLI::App& bench);
void add_ablate(CLI::App& cli);
void add_passkey(CLI::App& cli);
void add_retrieval(CLI::App& cli);

}  // namespace ropelab::apps
