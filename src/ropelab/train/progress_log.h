#pragma once
/// The training log of one run: periodic lines, the metrics file, an in-place progress line.

#include <cstdint>

#include "ropelab/eval/loss.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/util/clock.h"

namespace ropelab {

/// The training log: a line every train.log_every updates (also in the metrics file) and,
/// on a terminal, an in-place progress line between them.
class ProgressLog {
 public:
  ProgressLog(bool terminal, int64_t first_step, int64_t steps)
      : terminal_(terminal), first_step_(first_step), steps_(steps), start_(now_seconds()), window_start_(start_) {}
  /// "\r\033[K" on a terminal, clearing the in-place line before a log line.
  const char* clear() const { return terminal_ ? "\r\033[K" : ""; }
  double started() const { return start_; }

  /// After update `step` with learning rate `lr`; with `log_line`, prints the full line and
  /// writes the statistics of the updates since the last one to `metrics`.
  void update(const LossTotals& update, int64_t step, double lr, double total_seconds, bool log_line,
              MetricsLog* metrics);

 private:
  bool terminal_;
  int64_t first_step_, steps_;
  double start_, window_start_, last_inplace_ = 0;
  LossTotals window_;
};

}  // namespace ropelab
