// ropelab: one executable with git-style subcommands. Every user mistake ends here as
// one line on stderr and a non-zero exit; no stack traces.
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "ropelab/build_config.h"
#include "ropelab/config/config.h"
#include "ropelab/run/ownership.h"
#include "runtime_env.h"

std::vector<std::string>& ropelab::apps::command_line() {
  static std::vector<std::string> args;
  return args;
}

namespace {

/// What a command printed has to reach its file: `ropelab translate ... > FILE` on a full
/// disk is a failure, not a success with the translations lost. 0 when all of it did; else
/// one line and 1 (the write that failed may be long past, so no errno).
int standard_output_status(const std::string& who) {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && std::cout && !std::ferror(stdout)) return 0;
  std::cerr << who << ": error: cannot write standard output (disk full?)" << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ropelab::apps::ensure_runtime_env(argv);
  ropelab::apps::command_line().assign(argv, argv + argc);
  const bool parse_only = ropelab::apps::take_parse_only_flag(argc, argv);
  // Data-parallel workers name their rank in errors.
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  const std::string who =
      rank && world && std::atoi(world) > 1 ? std::string("ropelab[rank ") + rank + "]" : std::string("ropelab");
  CLI::App cli{"ropelab: Transformers and their position encodings, in C++ (LibTorch)"};
  cli.set_version_flag("--version", std::string("ropelab ") + ROPELAB_VERSION);
  cli.require_subcommand(1);
  cli.add_flag("--parse-only", "(first) parse the command and check its flags; run nothing");
  ropelab::apps::add_train(cli);
  ropelab::apps::add_translate(cli);
  ropelab::apps::add_eval(cli);
  ropelab::apps::add_generate(cli);
  ropelab::apps::add_score(cli);
  ropelab::apps::add_average(cli);
  ropelab::apps::add_bench(cli);
  ropelab::apps::add_ablate(cli);
  ropelab::apps::add_passkey(cli);
  ropelab::apps::add_retrieval(cli);
  if (parse_only) ropelab::apps::make_parse_only(cli);
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : cli.get_subcommands({})) {
      names += (names.empty() ? "" : " | ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << who << ": usage error: unknown command '" << argv[1] << "' (expected " << names << ")" << std::endl;
      return 2;
    }
  }
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      cli.exit(e);
      return standard_output_status(who);
    }
    std::string message = e.what();
    for (auto& c : message) c = c == '\n' ? ' ' : c;
    std::cerr << who << ": usage error: " << message << " (see --help)" << std::endl;
    return 2;
  } catch (const ropelab::ConfigError& e) {
    std::cerr << who << ": config error: " << e.what() << std::endl;
    return 2;
  } catch (const ropelab::RunDirRefused& e) {
    std::cerr << who << ": usage error: " << e.what() << std::endl;
    return 2;
  } catch (const ropelab::apps::Interrupted& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return e.status;
  } catch (const c10::Error& e) {
    std::cerr << who << ": error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << who << ": error: " << e.what() << std::endl;
    return 1;
  }
  return standard_output_status(who);
}
