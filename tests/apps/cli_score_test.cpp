// ropelab score: sacreBLEU's lines, metric selection, paired tests, bad files.
#include "cli_util.h"

using namespace ropelab::cli_test;

TEST(Cli, ScorePrintsSacrebleuLinesAndRejectsBadFiles) {
  const auto ref = write_temp("ropelab_ref.txt", "The cat sat on the mat.\n");
  const auto hyp = write_temp("ropelab_hyp.txt", "The cat sat on the mat.\n");
  auto r = run("score --ref " + ref + " --hyp " + hyp);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(
      r.output.rfind("BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)", 0), 0u)
      << r.output;
  EXPECT_NE(r.output.find("chrF2 = 100.00"), std::string::npos);
  const auto two = write_temp("ropelab_two.txt", "a\nb\n");
  r = run("score --ref " + two + " --hyp " + hyp);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, "ropelab: error: " + two + " has 2 lines but " + hyp + " has 1\n");
  const auto bad = write_temp("ropelab_bad_utf8.txt", "ok\n\xFF\n");
  r = run("score --ref " + bad + " --hyp " + two);
  EXPECT_EQ(r.output, "ropelab: error: " + bad + ":2: invalid UTF-8\n");
  r = run("score --ref " + ref + " --hyp " + hyp + " --json");
  // one JSON object; doubles in their shortest exact form (100.00000000000004 here)
  EXPECT_EQ(r.output.rfind("{\"bleu\":100", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\"chrf\":100"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

// Output that cannot reach its file (a full disk: /dev/full) fails the command with one line;
// it does not exit 0 with the scores lost.
TEST(Cli, OutputThatCannotBeWrittenFailsTheCommand) {
  const auto ref = write_temp("ropelab_full_ref.txt", "The cat sat on the mat.\n");
  auto r = run("score --ref " + ref + " --hyp " + ref + " > /dev/full");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, "ropelab: error: cannot write standard output (disk full?)\n");
  r = run("score --help > /dev/full");  // CLI11 prints the help and ends the parse early
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, "ropelab: error: cannot write standard output (disk full?)\n");
}

TEST(Cli, ScoreSelectsMetricsAndRunsPairedTests) {
  const auto ref = write_temp("ropelab_paired_ref.txt", "the cat sat on the mat\na dog barks\nit rains today\n");
  const auto base = write_temp("ropelab_paired_base.txt", "the cat sat on a mat\na dog barks\nit rained today\n");
  const auto other = write_temp("ropelab_paired_other.txt", "a cat on the mat\ndog\nrain today\n");
  auto r = run("score --ref " + ref + " --hyp " + base + " -m ter bleu");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("TER = ", 0), 0u) << r.output;  // in the order asked for
  EXPECT_NE(r.output.find("\nBLEU = "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("chrF2"), std::string::npos) << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other + " -m chrf ter --paired-bs --paired-bs-n 50");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* expected : {"chrF2 (μ ± 95% CI)", "TER (μ ± 95% CI)",
                               "Baseline: ", "(p = ", "Paired bootstrap resampling test with 50 resampling trials",
                               "nrefs:1|bs:50|seed:12345|case:lc|tok:tercom|norm:no|punct:yes|asian:no|"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other +
          " -m bleu --paired-ar --paired-ar-n 100 --json --seed 3");
  EXPECT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("test"), "paired-ar");
  EXPECT_EQ(j.at("seed"), 3);
  EXPECT_EQ(j.at("signatures").at("bleu").get<std::string>().rfind("nrefs:1|bs:1000|ar:100|seed:3|", 0), 0u);
  ASSERT_EQ(j.at("systems").size(), 2u);
  EXPECT_FALSE(j.at("systems")[0].at("bleu").contains("p_value"));
  const double p = j.at("systems")[1].at("bleu").at("p_value").get<double>();
  EXPECT_GT(p, 0.0);
  EXPECT_LE(p, 1.0);
  // bad requests: one line each, exit 1 (CLI11's own checks exit 105 or 109)
  r = run("score --ref " + ref + " --hyp " + base + " --paired-bs");
  EXPECT_EQ(r.output, "ropelab: error: --paired-bs compares systems with the first: give --hyp at least twice\n");
  EXPECT_EQ(r.code, 1);
  r = run("score --ref " + ref + " --hyp " + base + " -m meteor");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("meteor not in {bleu,chrf,chrf++,ter}"), std::string::npos) << r.output;
  r = run("score --ref " + ref + " --hyp " + base + " --hyp " + other + " --paired-bs --paired-ar");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
}
