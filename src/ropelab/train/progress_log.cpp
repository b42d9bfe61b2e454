#include "ropelab/train/progress_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ropelab {

void ProgressLog::update(const LossTotals& update, int64_t step, double lr, double total_seconds, bool log_line,
                         MetricsLog* metrics) {
  window_.add(update.loss, update.nll, update.tokens);
  const double now = now_seconds();
  const double eta = step > first_step_
                         ? (now - start_) / static_cast<double>(step - first_step_) * static_cast<double>(steps_ - step)
                         : 0.0;
  const double speed = window_.tokens / std::max(now - window_start_, 1e-9);
  if (log_line) {
    const double loss = window_.loss / window_.tokens, ppl = std::exp(window_.nll / window_.tokens);
    std::printf("%sstep %ld/%ld | loss %.4f | ppl %.2f | lr %.3g | %.0f tok/s | %s elapsed | ETA %s\n", clear(),
                static_cast<long>(step), static_cast<long>(steps_), loss, ppl, lr, speed,
                format_duration(total_seconds).c_str(), format_duration(eta).c_str());
    std::fflush(stdout);
    metrics->write("train", step,
                   {{"loss", loss}, {"ppl", ppl}, {"lr", lr}, {"tokens_per_s", speed}, {"elapsed_s", total_seconds}});
    window_ = LossTotals();
    window_start_ = now_seconds();
  } else if (terminal_ && now - last_inplace_ > 0.25) {
    last_inplace_ = now;
    std::printf("\r\033[K[%ld/%ld] loss %.4f | lr %.3g | %.0f tok/s | ETA %s", static_cast<long>(step),
                static_cast<long>(steps_), update.loss / update.tokens, lr, speed, format_duration(eta).c_str());
    std::fflush(stdout);
  }
}

}  // namespace ropelab
