#include "ropelab/run/metrics_log.h"

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ropelab {

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error(path + ": cannot open for writing");
  std::error_code not_regular;  // /dev/full, a pipe: nothing to cut back
  const auto size = std::filesystem::file_size(path, not_regular);
  if (!not_regular) whole_bytes_ = size;
}

void MetricsLog::write(const std::string& event, int64_t step,
                       std::initializer_list<std::pair<const char*, double>> fields) {
  nlohmann::ordered_json line = {{"event", event}, {"step", step}};
  for (const auto& [k, v] : fields) line[k] = v;
  const auto text = line.dump() + '\n';
  out_ << text << std::flush;
  if (!out_) {
    // The part of the line that reached the file would glue onto the first line a resumed
    // run appends: the file is cut back to its last whole line.
    out_.close();
    std::error_code ignored;
    if (whole_bytes_) std::filesystem::resize_file(path_, *whole_bytes_, ignored);
    throw std::runtime_error(path_ + ": cannot write the " + event + " event of step " + std::to_string(step) +
                             " (disk full?)");
  }
  if (whole_bytes_) *whole_bytes_ += text.size();
}

double MetricsEvent::get(const std::string& key) const {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<MetricsEvent> read_metrics(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<MetricsEvent> events;
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("event") || !json["event"].is_string())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": not a metrics event");
    MetricsEvent e;
    e.event = json["event"].get<std::string>();
    for (const auto& [key, value] : json.items()) {
      if (!value.is_number()) continue;
      if (key == "step") e.step = value.get<int64_t>();
      e.values.emplace_back(key, value.get<double>());
    }
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace ropelab
