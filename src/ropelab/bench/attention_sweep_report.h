#pragma once
/// What `ropelab bench attention` prints of a sweep (bench/attention_sweep.h): a header, one
/// table line or JSON object per (mode, length), and from which length on the second variant
/// is the faster.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ropelab/bench/attention_sweep.h"

namespace ropelab {

class AttentionSweepReport {
 public:
  /// `bias` and `tiles` as given on the command line; `device` and `threads` as measured.
  AttentionSweepReport(const AttentionBenchOptions& options, const AttentionVariant (&variants)[2], std::string bias,
                       std::string tiles, std::string device, int64_t threads);

  /// The table's title and column heads.
  void print_header() const;
  /// One row as a JSON object (--json).
  nlohmann::ordered_json json(const AttentionSweepRow& row) const;
  /// One row as a line of the table.
  void print_row(const AttentionSweepRow& row) const;
  /// Notes the first length at which the second variant is the faster, per mode.
  void record(const AttentionSweepRow& row);
  /// Per mode in `modes` (false: bidirectional, true: causal), where the second variant
  /// became the faster; then how to read the table.
  void print_footer(const std::vector<bool>& modes) const;

 private:
  AttentionBenchOptions options_;
  std::string first_, second_, bias_, tiles_, device_;
  int64_t threads_;
  int64_t crossover_[2] = {-1, -1};  // [bidirectional, causal]
};

}  // namespace ropelab
