// RUN/metrics.jsonl, the record of a training's curves (run/metrics_log.h).
#include "ropelab/run/metrics_log.h"

#include <filesystem>

#include "../test_util.h"

namespace ropelab {
namespace {

class MetricsLogFile : public ropelab::testing::TempDir {};

// Lines are appended and read back in order with their numbers exact.
TEST_F(MetricsLogFile, LinesAreAppendedAndReadBack) {
  const auto path = (dir_ / "metrics.jsonl").string();
  MetricsLog(path).write("train", 10, {{"loss", 0.1}});
  MetricsLog(path).write("valid", 20, {{"loss", 1.0 / 3}});
  const auto events = read_metrics(path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "train");
  EXPECT_EQ(events[1].step, 20);
  EXPECT_EQ(events[1].get("loss"), 1.0 / 3);
}

// A line that cannot be written (a full disk: /dev/full) stops the training with the file's
// name instead of leaving a curve with a silent gap.
TEST_F(MetricsLogFile, ALineThatCannotBeWrittenStopsWithTheFile) {
  MetricsLog log("/dev/full");
  EXPECT_EQ(testing::error_of([&] {
              log.write("valid", 100, {{"loss", 2.0}});
            }),
            "/dev/full: cannot write the valid event of step 100 (disk full?)");
}

// A line cut short (here by a file-size limit that lets 10 of its bytes through) is taken off
// again: the file keeps its whole lines, and a resumed run's lines read back after them.
TEST_F(MetricsLogFile, ALineCutShortIsTakenOff) {
  const auto path = (dir_ / "metrics.jsonl").string();
  MetricsLog(path).write("train", 10, {{"loss", 0.5}});
  MetricsLog log(path);  // a resumed run: its first line goes after the earlier ones
  log.write("train", 15, {{"loss", 0.375}});
  const auto whole = testing::read_text(path);
  std::string error;
  {
    testing::FileSizeLimit limit(whole.size() + 10);
    error = testing::error_of([&] { log.write("valid", 20, {{"loss", 0.25}}); });
  }
  EXPECT_EQ(error, path + ": cannot write the valid event of step 20 (disk full?)");
  EXPECT_EQ(testing::read_text(path), whole);
  MetricsLog(path).write("valid", 20, {{"loss", 0.25}});
  const auto events = read_metrics(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].get("loss"), 0.375);
  EXPECT_EQ(events[2].get("loss"), 0.25);
}

}  // namespace
}  // namespace ropelab
