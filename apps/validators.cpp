// The validators and flags that several subcommands share.
#include <cstdlib>

#include "commands.h"
#include "ropelab/config/config.h"

namespace ropelab::apps {
namespace {

CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
        if (zero_allowed ? value >= 0 : value > 0) return {};
        return std::string(zero_allowed ? "must be >= 0" : "must be > 0") + ", got " + text;
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

CLI::Validator positive() { return number_check(false); }
CLI::Validator nonnegative() { return number_check(true); }

CLI::Option* add_precision_flag(CLI::App& cmd, Precision& precision, const std::string& help) {
  std::vector<std::string> names;
  for (auto p : {Precision::fp32, Precision::bf16, Precision::fp16}) names.push_back(to_string(p));
  return cmd
      .add_option_function<std::string>(
          "--precision", [&precision](const std::string& name) { precision = parse_precision(name); }, help)
      ->default_str(to_string(precision))
      ->check(CLI::IsMember(names));
}

}  // namespace ropelab::apps
