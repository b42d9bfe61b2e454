// `ropelab --parse-only COMMAND ...`: the command line parsed and its flags checked, nothing
// run. The documentation's command lines are tested this way (tests/python/test_documented_commands.py).
#include <iostream>
#include <string>

#include "commands.h"

namespace ropelab::apps {
namespace {

/// The checks that a path exists (CLI::ExistingFile, CLI::ExistingDirectory) of `app` and its
/// subcommands, off: a documented command names run directories and inputs that a reader makes.
void skip_path_checks(CLI::App& app) {
  for (auto* option : app.get_options())
    for (int i = 0;; ++i) {
      CLI::Validator* check = nullptr;
      try {
        check = option->get_validator(i);
      } catch (const CLI::OptionNotFound&) {
        break;
      }
      if (check->get_description() == "FILE" || check->get_description() == "DIR") check->active(false);
    }
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) skip_path_checks(*sub);
}

}  // namespace

bool take_parse_only_flag(int& argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "--parse-only") return false;
  for (int i = 1; i + 1 < argc; ++i) argv[i] = argv[i + 1];
  --argc;
  return true;
}

void make_parse_only(CLI::App& cli) {
  skip_path_checks(cli);
  // Runs once every flag is parsed, checked and required, before any subcommand's callback.
  cli.parse_complete_callback([] {
    std::cout << "ropelab: the command line parses (--parse-only: nothing run)" << std::endl;
    throw CLI::Success();
  });
}

}  // namespace ropelab::apps
