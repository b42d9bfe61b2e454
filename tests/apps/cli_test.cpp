// The ropelab executable: subcommands listed, user mistakes give one line and a non-zero exit.
#include "ropelab/build_config.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cli = std::string(ROPELAB_BINARY_DIR) + "/ropelab";
  std::string output;
  FILE* pipe = popen((cli + " " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Cli, HelpListsSubcommands) {
  auto r = run("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"train", "translate"}) EXPECT_NE(r.output.find(sub), std::string::npos) << sub;
}

TEST(Cli, ConfigMistakesGiveOneLineAndExit2) {
  auto path = write_temp("ropelab_cli_bad.yaml", "model:\n  heads: 6\n");
  auto r = run("train " + path + " --dump-config");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output, "ropelab: config error: " + path + ": model.heads=6 does not divide model.d_model=512\n");
  r = run("train " + path + " --set model.heads=4 --set model.dmodle=3 --dump-config");
  EXPECT_EQ(r.output, "ropelab: config error: --set: unknown key model.dmodle (did you mean model.d_model?)\n");
}

TEST(Cli, DumpConfigAppliesPriorityAndFlags) {
  auto path = write_temp("ropelab_cli_ok.yaml", "model:\n  d_model: 256\n  heads: 4\n");
  auto r = run("train " + path + " --set model.d_model=128 --threads 3 --dump-config");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("d_model: 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("threads: 3"), std::string::npos) << r.output;
}

TEST(Cli, BadFlagsAndDevicesFail) {
  EXPECT_NE(run("train --no-such-flag").code, 0);
  EXPECT_NE(run("frobnicate").code, 0);
  auto path = write_temp("ropelab_cli_dev.yaml", "data:\n  train: /nonexistent.tsv\n");
  auto r = run("train " + path + " --device cuda:7 -o /tmp/ropelab_cli_run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output.rfind("ropelab: error: device cuda:7 requested but", 0), 0u) << r.output;
  r = run("translate --run /nonexistent_run_dir");
  EXPECT_NE(r.code, 0);
}
