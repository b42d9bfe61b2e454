#pragma once
/// `ropelab score`: one or more systems' hypotheses scored against references with the
/// metrics asked for (as `sacrebleu REF -i HYP... -m ...`), and with a paired test against
/// the first system when asked (`--paired-bs`, `--paired-ar`), printed as sacreBLEU prints
/// them or as one JSON document.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ropelab/metrics/metrics.h"
#include "ropelab/metrics/significance.h"

namespace ropelab {

struct ScoreRequest {
  std::vector<std::string> metrics{"bleu", "chrf", "chrf++"};  // make_text_metric's names
  TextMetricOptions options;
  std::optional<PairedTestOptions> paired;
  int width = 1;  // decimals in the paired and multi-system tables (sacreBLEU's --width)
};

/// A system's hypotheses, or a reference set: lines of a file.
struct SystemOutput {
  std::string name;  // the file as given
  std::vector<std::string> lines;
};

struct ScoreReport {
  std::vector<std::string> metric_keys;   // "bleu", "chrf", "chrfpp", "ter": JSON keys
  std::vector<std::string> metric_names;  // "BLEU", "chrF2", "chrF2++", "TER"
  std::vector<std::string> signatures;    // with the test's fields when paired
  std::vector<std::string> systems;
  /// lines[system][metric]: sacreBLEU's score line ("BLEU = 15.86 48.1/...").
  std::vector<std::vector<std::string>> lines;
  /// results[system][metric]; p-values and intervals only in a paired test.
  std::vector<std::vector<PairedResult>> results;
  std::optional<PairedTestOptions> paired;
  int width = 1;

  std::string text() const;
  nlohmann::ordered_json json() const;
};

/// Throws std::invalid_argument naming both files if a reference set and a system differ
/// in their number of lines, or if a paired test has fewer than two systems.
ScoreReport score_systems(const std::vector<SystemOutput>& systems, std::vector<SystemOutput> references,
                          const ScoreRequest& request);

}  // namespace ropelab
