#include "ropelab/metrics/score_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ropelab {

namespace {

std::string json_key(const std::string& metric) { return metric == "chrf++" ? "chrfpp" : metric; }

/// Columns padded to their widest cell; the first right-aligned, the rest centred, as
/// sacreBLEU's table.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  auto length = [](const std::string& s) {  // code points: "μ" and "±" are one column each
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], length(row[c]));
    }
  std::ostringstream out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const auto& cell = rows[r][c];
      const size_t pad = widths[c] - length(cell);
      const size_t left = c == 0 ? pad : pad / 2;
      line += (c ? "   " : "") + std::string(left, ' ') + cell + std::string(pad - left, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
    if (r == 0) {
      size_t total = 0;
      for (auto w : widths) total += w;
      out << std::string(total + 3 * (widths.size() - 1), '-') << '\n';
    }
  }
  return out.str();
}

}  // namespace

ScoreReport score_systems(const std::vector<SystemOutput>& systems, std::vector<SystemOutput> references,
                          const ScoreRequest& request) {
  if (systems.empty()) throw std::invalid_argument("no hypotheses to score");
  if (request.metrics.empty()) throw std::invalid_argument("no metric asked for");
  std::vector<std::vector<std::string>> refs;
  for (auto& r : references) {
    for (const auto& system : systems)
      if (r.lines.size() != system.lines.size())
        throw std::invalid_argument(r.name + " has " + std::to_string(r.lines.size()) + " lines but " + system.name +
                                    " has " + std::to_string(system.lines.size()));
    refs.push_back(std::move(r.lines));
  }
  ScoreReport report;
  report.paired = request.paired;
  report.width = request.width;
  std::vector<std::unique_ptr<TextMetric>> metrics;
  for (const auto& name : request.metrics) {
    metrics.push_back(make_text_metric(name, request.options));
    report.metric_keys.push_back(json_key(name));
    report.metric_names.push_back(metrics.back()->name());
    const auto signature = metrics.back()->signature(refs.size());
    report.signatures.push_back(request.paired ? with_test_fields(signature, *request.paired) : signature);
  }
  // statistics[system][metric]
  std::vector<std::vector<std::vector<double>>> statistics;
  for (const auto& system : systems) {
    report.systems.push_back(system.name);
    statistics.push_back(text_metric_stats(request.metrics, request.options, system.lines, refs));
    auto& lines = report.lines.emplace_back();
    for (size_t m = 0; m < metrics.size(); ++m)
      lines.push_back(metrics[m]->line(column_sums(statistics.back()[m], metrics[m]->width()).data()));
  }
  std::vector<const CorpusMetric*> views;
  for (const auto& m : metrics) views.push_back(m.get());
  if (request.paired) {
    report.results = run_paired_test(views, statistics, *request.paired);
  } else {
    for (const auto& per_system : statistics) {
      auto& row = report.results.emplace_back();
      for (size_t m = 0; m < metrics.size(); ++m) {
        PairedResult r;  // a score alone: no test asked for
        r.score = metrics[m]->score(column_sums(per_system[m], metrics[m]->width()).data());
        row.push_back(r);
      }
    }
  }
  return report;
}

std::string ScoreReport::text() const {
  std::ostringstream out;
  if (!paired && systems.size() == 1) {  // sacreBLEU's single-system lines
    for (size_t m = 0; m < metric_names.size(); ++m) out << lines[0][m] << "\n  " << signatures[m] << '\n';
    return out.str();
  }
  const bool bootstrap_ci = paired && (paired->test == PairedTest::bootstrap || paired->confidence_samples > 0);
  std::vector<std::vector<std::string>> rows{{"System"}};
  for (const auto& name : metric_names) rows[0].push_back(bootstrap_ci ? name + " (μ ± 95% CI)" : name);
  for (size_t s = 0; s < systems.size(); ++s) {
    auto& row = rows.emplace_back();
    row.push_back(paired && s == 0 ? "Baseline: " + systems[s] : systems[s]);
    for (const auto& r : results[s]) {
      std::string cell = format_fixed(r.score, width);
      if (r.confidence)
        cell += " (" + format_fixed(r.confidence->mean, width) + " ± " + format_fixed(r.confidence->half_width, width) +
                ")";
      if (!std::isnan(r.p_value)) cell += " (p = " + format_fixed(r.p_value, 4) + ")" + (r.p_value < 0.05 ? "*" : "");
      row.push_back(cell);
    }
  }
  out << table(rows) << '\n';
  if (paired) {
    const bool bs = paired->test == PairedTest::bootstrap;
    const std::string title = std::string("Paired ") + (bs ? "bootstrap resampling" : "approximate randomization") +
                              " test with " + std::to_string(paired->resolved_samples()) +
                              (bs ? " resampling trials" : " trials");
    out << std::string(title.size(), '-') << '\n'
        << title << '\n'
        << std::string(title.size(), '-') << '\n'
        << " - Each system is pairwise compared to Baseline: " << systems[0] << ".\n"
        << (bootstrap_ci
                ? "   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
                : "   Actual system score is provided for each metric.\n")
        << "\n - Null hypothesis: the system and the baseline translations are essentially\n"
        << "   generated by the same underlying process. For a given system and the baseline,\n"
        << "   the p-value is roughly the probability of the absolute score difference (delta)\n"
        << "   or higher occurring due to chance, under the assumption that the null hypothesis is correct.\n\n"
        << " - Assuming a significance threshold of 0.05, the null hypothesis can be rejected\n"
        << "   for p-values < 0.05 (marked with \"*\"). This means that the delta is unlikely to be attributed\n"
        << "   to chance, hence the system is significantly \"different\" than the baseline.\n\n"
        << " - NOTE: Significance does not tell whether a system is \"better\" than the baseline but rather\n"
        << "   emphasizes the \"difference\" of the systems in terms of the replicability of the delta.\n\n";
  }
  out << "-----------------\nMetric signatures\n-----------------\n";
  for (size_t m = 0; m < metric_names.size(); ++m) {
    std::string name = metric_names[m];
    name.resize(std::max<size_t>(name.size(), 10), ' ');
    out << " - " << name << ' ' << signatures[m] << '\n';
  }
  return out.str();
}

nlohmann::ordered_json ScoreReport::json() const {
  if (!paired && systems.size() == 1) {  // one object: each metric's score, signature and line
    nlohmann::ordered_json j;
    for (size_t m = 0; m < metric_keys.size(); ++m) {
      j[metric_keys[m]] = results[0][m].score;
      j[metric_keys[m] + "_signature"] = signatures[m];
      j[metric_keys[m] + "_line"] = lines[0][m];
    }
    return j;
  }
  nlohmann::ordered_json j;
  if (paired) {
    j["test"] = paired->test == PairedTest::bootstrap ? "paired-bs" : "paired-ar";
    j["samples"] = paired->resolved_samples();
    j["seed"] = paired->seed;
  }
  auto& signature_json = j["signatures"];
  for (size_t m = 0; m < metric_keys.size(); ++m) signature_json[metric_keys[m]] = signatures[m];
  auto& rows = j["systems"] = nlohmann::ordered_json::array();
  for (size_t s = 0; s < systems.size(); ++s) {
    nlohmann::ordered_json row = {{"system", systems[s]}, {"baseline", paired && s == 0}};
    for (size_t m = 0; m < metric_keys.size(); ++m) {
      const auto& r = results[s][m];
      nlohmann::ordered_json cell = {{"score", r.score}, {"line", lines[s][m]}};
      if (r.confidence) cell["mean"] = r.confidence->mean, cell["ci"] = r.confidence->half_width;
      if (!std::isnan(r.p_value)) cell["p_value"] = r.p_value;
      row[metric_keys[m]] = cell;
    }
    rows.push_back(row);
  }
  return j;
}

}  // namespace ropelab
