// The files one evaluation leaves in its run directory (run/eval_files.h).
#include "ropelab/run/eval_files.h"

#include <filesystem>

#include "../test_util.h"

namespace ropelab {
namespace {

class EvalFiles : public ropelab::testing::TempDir {
 protected:
  EvalReport report() const {
    EvalReport r;
    r.fields = {{"bleu", 12.5}};
    r.file_tag = "test";
    r.hypotheses = {"hola", "adios"};
    return r;
  }
  EvalFileOptions options() const {
    EvalFileOptions o;
    o.split = "test", o.checkpoint = "best";
    return o;
  }
};

// An evaluation's report and hypotheses are written whole or not at all: a disk that fills
// while either is written (its temporary file is /dev/full here) stops the evaluation with
// that file's path, and nothing half-written is left for ablate to read as done.
TEST_F(EvalFiles, AFileThatCannotBeWrittenStopsWithItsPath) {
  const auto files = eval_file_paths(dir_.string(), "test");
  const auto hyp = hypotheses_path(dir_.string(), "test");
  std::filesystem::create_symlink("/dev/full", hyp + ".tmp");
  EXPECT_EQ(testing::error_of([&] { write_eval_files(dir_.string(), report(), options()); }),
            hyp + ": cannot write hypotheses (disk full?): No space left on device");
  EXPECT_FALSE(std::filesystem::exists(hyp));
  EXPECT_FALSE(std::filesystem::exists(files.json));
  std::filesystem::remove(hyp + ".tmp");
  std::filesystem::create_symlink("/dev/full", files.json + ".tmp");
  EXPECT_EQ(testing::error_of([&] { write_eval_files(dir_.string(), report(), options()); }),
            files.json + ": cannot write evaluation report (disk full?): No space left on device");
  EXPECT_FALSE(std::filesystem::exists(files.json));
  std::filesystem::remove(files.json + ".tmp");
  EXPECT_EQ(write_eval_files(dir_.string(), report(), options()), (std::vector<std::string>{hyp, files.json}));
  EXPECT_EQ(testing::read_text(hyp), "hola\nadios\n");
  EXPECT_EQ(read_report_number(files.json, "bleu"), 12.5);
}

// An evaluation under --set overrides keeps its hypotheses beside the plain evaluation's, as
// it keeps its report.
TEST_F(EvalFiles, OverridesKeepTheirOwnHypotheses) {
  const auto plain = hypotheses_path(dir_.string(), "test");
  write_eval_files(dir_.string(), report(), options());
  auto scaled_options = options();
  scaled_options.overrides = {"model.position.scaling.type=yarn", "model.position.scaling.factor=4"};
  auto scaled = report();
  scaled.hypotheses = {"hola hola", "adios"};
  const auto scaled_hyp = (dir_ / "hyp.test.set_yarn_4.txt").string();
  EXPECT_EQ(write_eval_files(dir_.string(), scaled, scaled_options),
            (std::vector<std::string>{scaled_hyp, (dir_ / "eval.test.set_yarn_4.json").string()}));
  EXPECT_EQ(testing::read_text(plain), "hola\nadios\n");
  EXPECT_EQ(testing::read_text(scaled_hyp), "hola hola\nadios\n");
}

}  // namespace
}  // namespace ropelab
