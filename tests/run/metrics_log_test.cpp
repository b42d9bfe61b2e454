// RUN/metrics.jsonl, the record of a training's curves (run/metrics_log.h).
#include "ropelab/run/metrics_log.h"

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

}  // namespace
}  // namespace ropelab
