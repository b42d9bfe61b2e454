#pragma once
/// RUN/metrics.jsonl: one JSON object per line and event ("train", "valid"), appended
/// as training goes, read back by the loss plot (report/run_plots.h) and `ropelab ablate`.

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ropelab {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  /// {"event": EVENT, "step": STEP, key: value, ...}, flushed at once. Doubles are written
  /// in their shortest exact form, so a resumed run compares bit for bit. Throws naming the
  /// file when the line cannot be written: a curve never loses a point silently.
  void write(const std::string& event, int64_t step, std::initializer_list<std::pair<const char*, double>> fields);

 private:
  std::string path_;
  std::ofstream out_;
  /// The file's size after its last whole line; empty when it is not a regular file. The
  /// log is the file's one writer, so the size is counted rather than asked per line.
  std::optional<uint64_t> whole_bytes_;
};

/// One event of a metrics file.
struct MetricsEvent {
  std::string event;
  int64_t step = 0;
  std::vector<std::pair<std::string, double>> values;
  /// The value of `key`; NaN when absent.
  double get(const std::string& key) const;
};

/// The events of a metrics file, in order; throws naming the file and line on a broken line.
std::vector<MetricsEvent> read_metrics(const std::string& path);

}  // namespace ropelab
