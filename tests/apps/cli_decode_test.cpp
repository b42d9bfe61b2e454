// ropelab translate and generate: line filters, streaming output, a clean stop on Ctrl-C.
#include "cli_util.h"

using namespace ropelab::cli_test;

TEST(Cli, TranslateIsALineFilterThatKeepsEmptyLines) {
  const auto input = write_temp("ropelab_cli_in.txt", "the cat\n\nthe dog\n");
  auto r = run("translate --run " + micro_run() + " --input " + input + " --beam 2 2>/dev/null");
  EXPECT_EQ(r.code, 0) << r.output;
  std::vector<std::string> lines;
  std::istringstream out(r.output);
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << r.output;
  EXPECT_TRUE(lines[1].empty());
  const auto bad = write_temp("ropelab_cli_bad_in.txt", "the cat\nbad \xC3\x28\n");
  r = run("translate --run " + micro_run() + " --input " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("ropelab: error: " + bad + ":2: invalid UTF-8"), std::string::npos) << r.output;
}

// generate writes its text as it comes: a windowed model asked for 10^11 tokens (and no end
// of text before them) has put
// out text long before it could finish, and Ctrl-C ends it with that text and its line
// end on stdout, one line on stderr and the shell's exit status 130.
TEST(Cli, GenerateStreamsAndStopsCleanlyOnCtrlC) {
  const auto root = fresh_dir("generate");
  const auto lm = (root / "lm").string();
  auto r = train_tiny_rotary_lm(root, lm, " --set model.position.type=alibi");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto out = (root / "out.txt").string(), err = (root / "err.txt").string();
  const std::string script =
      "set -m\n" + std::string(ROPELAB_BINARY_DIR) + "/ropelab generate --run " + lm +
      " --checkpoint last --prompt 'the c' --max-new 100000000000 --min-new 100000000000 --sample --seed 3"
      " --threads 1"
      " --set model.attention.window=8 --set model.attention.sinks=2 > " +
      out + " 2> " + err + " & pid=$!\nfor i in $(seq 600); do [ $(wc -c < " + out +
      ") -gt 300 ] && break; sleep 0.1; done\nkill -INT $pid; wait $pid; exit $?\n";
  const auto script_path = (root / "interrupt.sh").string();
  std::ofstream(script_path) << script;
  const int status = std::system(("bash " + script_path).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(err);
  const auto text = read_text(out);
  EXPECT_GT(text.size(), 300u);
  EXPECT_EQ(text.rfind("the c", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(read_text(err), "ropelab: generate: interrupted (Ctrl-C); the text produced so far is above\n");
  std::filesystem::remove_all(root);
}
