// What a finished run contributes to an ablation's tables (experiment/results.h).
#include "ropelab/experiment/results.h"

#include <filesystem>
#include <limits>
#include <map>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/run/ablation_layout.h"

namespace ropelab {
namespace {

class Results : public ropelab::testing::TempDir {
 protected:
  /// results.csv, results.md and significance.csv of `runs` in DIR/out, which it returns.
  std::filesystem::path write_results(const std::vector<RunResult>& runs) {
    ExperimentSpec spec;
    spec.path = "exp.yaml";
    const auto out = dir_ / "out";
    std::filesystem::create_directories(out);
    write_ablation_results(spec, runs, out.string(), "ropelab ablate exp.yaml");
    return out;
  }
};

// The ablation table's train_s is the last elapsed_s, which a resumed run continues from
// its checkpoint (ResumeContinuesBitForBit checks that it never goes back).
TEST_F(Results, TrainingTimeIsTheLastElapsed) {
  write("metrics.jsonl",
        "{\"event\":\"train\",\"step\":100,\"elapsed_s\":40}\n"
        "{\"event\":\"valid\",\"step\":100,\"loss\":2.5,\"ppl\":12.0}\n"
        "{\"event\":\"train\",\"step\":200,\"elapsed_s\":90}\n"
        "{\"event\":\"train\",\"step\":300,\"elapsed_s\":120}\n"  // resumed at step 200
        "{\"event\":\"valid\",\"step\":300,\"loss\":2.0,\"ppl\":7.5}\n");
  write("eval.test.json", "{\"bleu\":12.5,\"chrf\":30.0,\"perplexity\":20.0}\n");
  const auto r = read_run_result(dir_.string(), Config(), {});
  EXPECT_DOUBLE_EQ(r.metrics.at("train_s"), 120.0);
  EXPECT_DOUBLE_EQ(r.metrics.at("valid_ppl"), 7.5);
  EXPECT_DOUBLE_EQ(r.metrics.at("test_bleu"), 12.5);
  EXPECT_EQ(r.curve.size(), 2u);
}

// A run's device is where it trained, from its own config.yaml, not the config ablate plans
// with now (a run trained on a GPU and collected on a CPU stays a GPU run); a variant whose
// seeds trained on different devices says so in results.md, and results.csv names each.
TEST_F(Results, DeviceIsWhereTheRunTrained) {
  Config planned;
  planned.task = TaskType::lm;
  planned.data.format(CorpusFormat::text);
  Config trained = planned;
  trained.train.device("cuda");
  write("config.yaml", yaml_config_files().write(trained));
  write("metrics.jsonl", "{\"event\":\"valid\",\"step\":10,\"loss\":2.0,\"ppl\":7.5}\n");
  auto gpu = read_run_result(dir_.string(), planned, {});  // planned: cpu
  EXPECT_EQ(gpu.device, "cuda");
  gpu.variant = "a", gpu.seed = 2, gpu.run = "runs/a.seed2";
  auto cpu = gpu;
  cpu.seed = 1, cpu.run = "runs/a.seed1", cpu.device = "cpu";
  RunResult other = cpu;
  other.variant = "b";
  const auto out = write_results({cpu, gpu, other});
  const auto csv = testing::read_text(out / "results.csv");
  EXPECT_EQ(csv.rfind("variant,seed,run,device,test_ppl@128,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n\"a\",2,\"runs/a.seed2\",\"cuda\","), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n\"a\",1,\"runs/a.seed1\",\"cpu\","), std::string::npos) << csv;
  const auto md = testing::read_text(out / "results.md");
  EXPECT_NE(md.find("| variant | n | device | test_ppl@128 | train_s | valid_ppl |\n|---|---|---|---|---|---|\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| a | 2 | cpu 1, cuda 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| b | 1 | cpu |"), std::string::npos) << md;
  EXPECT_NE(md.find("trained on more than one device"), std::string::npos) << md;
  // One device throughout: no such note.
  write_results({cpu, other});
  EXPECT_EQ(testing::read_text(out / "results.md").find("more than one device"), std::string::npos);
}

// A value that is not finite (an evaluation that failed) is left out of its variant's mean,
// and the cell says over how many runs it is; a column no run of the variant has a number
// for reads n/a, one it was never asked is "-".
TEST_F(Results, AFailedValueIsLeftOutAndCounted) {
  auto run = [](const std::string& variant, int64_t seed, std::map<std::string, double> metrics) {
    RunResult r;
    r.variant = variant, r.seed = seed, r.run = "runs/" + variant + ".seed" + std::to_string(seed), r.device = "cpu";
    r.metrics = std::move(metrics);
    return r;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto out = write_results({run("a", 1, {{"test_ppl@128", 2.0}, {"test_ppl@256", 3.0}}),
                                  run("a", 2, {{"test_ppl@128", 4.0}, {"test_ppl@256", nan}}),
                                  run("b", 1, {{"test_ppl@128", 5.0}, {"test_ppl@256", nan}}),
                                  run("c", 1, {{"test_ppl@128", 6.0}})});
  const auto md = testing::read_text(out / "results.md");
  EXPECT_NE(md.find("| a | 2 | cpu | 3.000 ± 1.414 | 3.000 (n=1) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| b | 1 | cpu | 5.000 | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| c | 1 | cpu | 6.000 | - |"), std::string::npos) << md;
  EXPECT_EQ(md.find("nan"), std::string::npos) << md;
}

// Passkey retrieval pools its counts over seeds: a run's passkey.json gives correct@L and
// documents@L; results.md gives each variant's pooled accuracy with Wilson's interval
// (golden values from tests/golden/wilson_golden.py: 6/20 and 19/20).
TEST_F(Results, PasskeyCountsPoolOverSeedsWithWilsonIntervals) {
  Config lm;
  lm.task = TaskType::lm;
  TestEvaluations asked;
  asked.passkey = PasskeyGrid();
  asked.passkey->lengths = {120, 248};
  write("metrics.jsonl", "{\"event\":\"valid\",\"step\":10,\"loss\":2.0,\"ppl\":7.5}\n");
  write("passkey.json",
        "{\"accuracy@120\":0.3,\"accuracy@248\":1.0,\"correct@120\":3,\"documents@120\":10,"
        "\"correct@248\":10,\"documents@248\":10}\n");
  auto first = read_run_result(dir_.string(), lm, asked);
  EXPECT_EQ(first.accuracy_counts.at("passkey@120"), (std::pair<int64_t, int64_t>{3, 10}));
  EXPECT_EQ(first.accuracy_counts.at("passkey@248"), (std::pair<int64_t, int64_t>{10, 10}));
  first.variant = "a", first.seed = 1;
  auto second = first;
  second.seed = 2, second.accuracy_counts["passkey@248"] = {9, 10};
  RunResult other;
  other.variant = "b", other.seed = 1;
  const auto out = write_results({first, second, other});
  const auto md = testing::read_text(out / "results.md");
  // and the seeds' mean with its Student-t interval: 0.3, 0.3 (none); 1.0, 0.9: 0.95 ± 12.706 * 0.05
  EXPECT_NE(md.find("| variant | passkey@120 | passkey@248 |\n|---|---|---|\n"
                    "| a | 0.300 [0.145, 0.519] (6/20); seeds 0.300 [0.300, 0.300] | 0.950 [0.764, 0.991] (19/20); "
                    "seeds 0.950 [0.315, 1.585] |\n| b | - | - |"),
            std::string::npos)
      << md;
}

// results.csv and significance.csv quote text as RFC 4180 does: a variant whose value holds
// a comma or a quote stays one field (read back by Python's csv module in tables.py).
TEST_F(Results, CsvFieldsKeepCommasAndQuotes) {
  RunResult quoted;
  quoted.variant = "model.position={type: \"a, b\"}", quoted.seed = 1;
  quoted.run = AblationLayout::run_in_out(AblationLayout("out").run(quoted.variant, 1));
  quoted.metrics["test_ppl"] = 2.5, quoted.device = "cpu";
  const auto out = write_results({quoted});
  EXPECT_EQ(testing::read_text(out / "results.csv"),
            "variant,seed,run,device,test_ppl\n"
            "\"model.position={type: \"\"a, b\"\"}\",1,\"runs/model.position=_type___a,_b__.seed1\",\"cpu\",2.5\n");
}

// results.csv's run column names the run's folder inside the output directory, however the
// directory was spelled.
TEST(AblationRunColumn, IsRunsSlashTheFolderName) {
  EXPECT_EQ(AblationLayout::run_in_out("out/runs/a.seed1"), "runs/a.seed1");
  EXPECT_EQ(AblationLayout::run_in_out("out/runs/a.seed1/"), "runs/a.seed1");
  EXPECT_EQ(AblationLayout::run_in_out("/abs/out/./runs/a.seed1//"), "runs/a.seed1");
}

// significance.csv quotes its variants and notes the same way: here a baseline whose value
// holds a comma and quotes, and a run whose items could not be read (the note says why).
TEST_F(Results, SignificanceCsvQuotesVariantsAndNotes) {
  RunResult base, other;
  base.variant = "model.position={type: \"a, b\"}", base.seed = 1;
  base.items.push_back({"test_ppl", perplexity_metric(), {2.0, 1.0, 3.0, 1.0}, {}});
  other.variant = "c", other.seed = 1;
  other.items_error = "items.tsv, line 2: expected \"nll\"";
  const auto out = write_results({base, other});
  EXPECT_EQ(testing::read_text(out / "significance.csv"),
            "variant,baseline_variant,column,test,seeds,baseline,score,difference,ci95_low,ci95_high,p_value,p_holm,"
            "note\n"
            "\"c\",\"model.position={type: \"\"a, b\"\"}\",test_ppl,two_stage_bootstrap,\"\",,,,,,,,\"items.tsv, "
            "line 2: expected \"\"nll\"\"\"\n");
}

// A baseline whose runs all failed leaves no test unexplained: significance.csv names it.
TEST_F(Results, ABaselineWithoutRunsIsNamedNotDropped) {
  RunResult a;
  a.variant = "a", a.seed = 1, a.metrics["test_ppl"] = 2.5, a.device = "cpu";
  a.items.push_back({"test_ppl", perplexity_metric(), {2.0, 1.0, 3.0, 1.0}, {}});
  ExperimentSpec spec;
  spec.path = "exp.yaml", spec.baseline = "b";
  const auto out = dir_ / "out";
  std::filesystem::create_directories(out);
  write_ablation_results(spec, {a}, out.string(), "ropelab ablate exp.yaml");
  EXPECT_NE(testing::read_text(out / "significance.csv")
                .find("\n\"a\",\"b\",,two_stage_bootstrap,\"\",,,,,,,,\"no finished run of b\"\n"),
            std::string::npos)
      << testing::read_text(out / "significance.csv");
}

// Each table is written whole or not at all: a disk that fills while results.md is written
// (its temporary file is /dev/full here) stops the ablation with results.md's path and
// leaves the results.md already there as it was.
TEST_F(Results, ATableThatCannotBeWrittenStopsWithItsPath) {
  RunResult run;
  run.variant = "a", run.seed = 1, run.metrics["test_ppl"] = 2.5, run.device = "cpu";
  const auto out = write_results({run});
  const auto before = testing::read_text(out / "results.md");
  run.metrics["test_ppl"] = 3.5;
  std::filesystem::create_symlink("/dev/full", out / "results.md.tmp");
  ExperimentSpec spec;
  spec.path = "exp.yaml";
  EXPECT_EQ(testing::error_of([&] { write_ablation_results(spec, {run}, out.string(), "ropelab ablate exp.yaml"); }),
            (out / "results.md").string() + ": cannot write results table (disk full?): No space left on device");
  EXPECT_EQ(testing::read_text(out / "results.md"), before);
}

}  // namespace
}  // namespace ropelab
