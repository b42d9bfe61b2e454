#include "ropelab/metrics/corpus_metric.h"

#include <cstdio>
#include <stdexcept>

#include "ropelab/build_config.h"

namespace ropelab {

void check_line_counts(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs) {
  if (refs.empty()) throw std::invalid_argument("no reference given");
  for (size_t k = 0; k < refs.size(); ++k)
    if (refs[k].size() != hyps.size())
      throw std::invalid_argument("reference " + std::to_string(k + 1) + " has " + std::to_string(refs[k].size()) +
                                  " lines but the hypotheses have " + std::to_string(hyps.size()));
}

std::string metric_version_tag() { return std::string("version:ropelab-") + ROPELAB_VERSION; }

std::string format_fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

}  // namespace ropelab
