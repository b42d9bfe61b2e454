#include "ropelab/experiment/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ropelab/config/config.h"
#include "ropelab/eval/passkey.h"
#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/evaluations.h"
#include "ropelab/experiment/heat_maps.h"
#include "ropelab/experiment/plots.h"
#include "ropelab/experiment/seed_stats.h"
#include "ropelab/experiment/significance_tests.h"
#include "ropelab/metrics/student_t.h"
#include "ropelab/run/ablation_layout.h"
#include "ropelab/run/eval_files.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/task/task_registry.h"
#include "ropelab/util/files.h"
#include "ropelab/util/svg_plot.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

using seed_stats::add_point;
using seed_stats::mean_sd;

/// A CSV text field (RFC 4180): quoted, a quote inside doubled.
std::string csv_text(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

/// The devices a variant's runs trained on: "cpu", or "cpu 1, cuda 2" where they differ.
std::string devices_cell(const std::vector<const RunResult*>& runs) {
  std::map<std::string, int> count;
  for (const auto* r : runs) ++count[r->device];
  if (count.size() == 1) return count.begin()->first;
  std::string out;
  for (const auto& [device, n] : count) out += (out.empty() ? "" : ", ") + device + " " + std::to_string(n);
  return out;
}

/// results.md's retrieval table: per variant and accuracy column (passkey@L) the documents
/// retrieved over every seed and depth, as accuracy [Wilson's 95% interval] (correct/documents),
/// then the mean of the seeds' accuracies with its Student-t interval, the seed the unit.
void write_pooled_accuracy(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                           std::ostream& md) {
  std::vector<std::string> columns;
  for (const auto& r : results)
    for (const auto& [column, counts] : r.accuracy_counts)
      if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
  if (columns.empty()) return;
  std::stable_sort(columns.begin(), columns.end(), column_before);
  md << "\n## Retrieval pooled over seeds\n\nDocuments retrieved over every seed and key depth: accuracy "
        "[Wilson's 95% interval] (correct/documents), an interval that speaks of the documents as if all were drawn "
        "independently; then `seeds` and the 95% Student-t interval of the seeds' mean accuracy, the seed the unit "
        "(a seed's documents are answered by one model, so they are not independent).\n\n| variant |";
  for (const auto& c : columns) md << " " << c << " |";
  md << "\n|---|";
  for (size_t i = 0; i < columns.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& variant : order) {
    md << "| " << variant << " |";
    for (const auto& column : columns) {
      int64_t correct = 0, documents = 0;
      std::vector<double> per_seed;
      for (const auto& r : results)
        if (r.variant == variant && r.accuracy_counts.count(column)) {
          const auto [c, d] = r.accuracy_counts.at(column);
          correct += c, documents += d;
          per_seed.push_back(static_cast<double>(c) / static_cast<double>(d));
        }
      if (documents == 0) {
        md << " - |";
        continue;
      }
      const auto ci = wilson_interval(correct, documents);
      char cell[160];
      std::snprintf(cell, sizeof cell, " %.3f [%.3f, %.3f] (%lld/%lld)",
                    static_cast<double>(correct) / static_cast<double>(documents), ci.low, ci.high,
                    static_cast<long long>(correct), static_cast<long long>(documents));
      md << cell;
      const auto seeds = seed_interval(per_seed);
      if (seeds.n > 1) {
        std::snprintf(cell, sizeof cell, "; seeds %.3f [%.3f, %.3f]", seeds.mean, seeds.low, seeds.high);
        md << cell;
      }
      md << " |";
    }
    md << "\n";
  }
}

/// The evaluated cells of a retrieval table (eval/passkey.h's passkey.csv) into
/// r.accuracy_cells, by column `measure`@length; a table that cannot be read leaves none
/// (its tests then say so), with the reason in r.items_error.
void read_accuracy_cells(const std::string& csv, const std::string& measure, RunResult& r) {
  if (!fs::exists(csv)) return;
  try {
    for (const auto& c : read_passkey_table(csv))  // a cell that could not run: no documents
      r.accuracy_cells[measure + "@" + std::to_string(c.length)].emplace_back(c.error.empty() ? c.correct : 0,
                                                                              c.error.empty() ? c.documents : 0);
  } catch (const std::exception& e) {
    r.items_error = e.what();
  }
}

/// results.csv: a row per run, its numbers under every column (empty: not evaluated for it).
std::string results_csv(const std::vector<std::string>& metrics, const std::vector<RunResult>& results) {
  std::ostringstream csv;
  csv << "variant,seed,run,device";
  for (const auto& m : metrics) csv << "," << m;
  csv << "\n";
  csv.precision(10);
  for (const auto& r : results) {
    csv << csv_text(r.variant) << ',' << r.seed << ',' << csv_text(r.run) << ',' << csv_text(r.device);
    for (const auto& m : metrics) {
      csv << ",";
      if (r.metrics.count(m)) csv << r.metrics.at(m);
    }
    csv << "\n";
  }
  return csv.str();
}

/// results.md's row of `variant`: its runs, devices, and per column the mean ± sd of the
/// finite values of the runs that have it (a value that is not one, an evaluation that
/// failed, is left out and the cell says over how many runs it is), `*` where `marked`.
std::string table_row(const std::string& variant, const std::vector<RunResult>& results,
                      const std::vector<std::string>& metrics,
                      const std::function<bool(const std::string&, const std::string&)>& marked) {
  std::vector<const RunResult*> runs;
  for (const auto& r : results)
    if (r.variant == variant) runs.push_back(&r);
  std::ostringstream md;
  md << "| " << variant << " | " << runs.size() << " | " << devices_cell(runs) << " |";
  for (const auto& m : metrics) {
    const auto values = seed_stats::finite_values(results, variant, m);
    const bool asked = std::any_of(runs.begin(), runs.end(), [&](const RunResult* r) { return r->metrics.count(m); });
    if (values.empty()) {
      md << (asked ? " n/a |" : " - |");
      continue;
    }
    const auto spread = mean_sd(values);
    // seconds whole, context gains (a few ten-thousandths of a nat) to 4 decimals, the rest to 3
    const auto key = parse_column(m);
    const bool gain = key && key->measure == ColumnKey::Measure::gain;
    char cell[64];
    if (values.size() > 1)
      std::snprintf(cell, sizeof cell,
                    m == "train_s" ? " %.0f ± %.0f"
                    : gain         ? " %.4f ± %.4f"
                                   : " %.3f ± %.3f",
                    spread.mean, spread.sd);
    else  // one seed: no spread to report
      std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f" : gain ? " %.4f" : " %.3f", spread.mean);
    md << cell << (values.size() < runs.size() ? " (n=" + std::to_string(values.size()) + ")" : std::string())
       << (marked(variant, m) ? " * |" : " |");
  }
  return md.str() + "\n";
}

}  // namespace

RunResult read_run_result(const std::string& run_dir, const Config& config, const TestEvaluations& asked) {
  RunResult r;
  double best_ppl = std::numeric_limits<double>::infinity(), elapsed = 0;  // elapsed_s continues over resumes
  for (const auto& e : read_metrics(RunPaths(run_dir).metrics)) {
    if (e.event == "valid") {
      r.curve.emplace_back(static_cast<double>(e.step), e.get("loss"));
      best_ppl = std::min(best_ppl, e.get("ppl"));
    } else if (e.event == "train") {
      elapsed = e.get("elapsed_s");
    }
  }
  r.metrics["valid_ppl"] = best_ppl;
  if (task_traits(config.task).offers(ProtocolKind::window_perplexity)) r.context = config.data.context();
  r.position = position_kind(config.model.decoder_position());
  r.label = position_label(config.model.decoder_position());
  for (const auto& eval : ablation_evals(config, asked)) {
    for (const auto& [key, column] : eval.columns) {
      r.metrics[format_column(column)] = read_report_number(eval.report(run_dir), key);
      if (!column.accuracy()) continue;
      const auto length = std::to_string(column.length);
      const double correct = read_report_number(eval.report(run_dir), "correct@" + length),
                   documents = read_report_number(eval.report(run_dir), "documents@" + length);
      if (std::isfinite(correct) && std::isfinite(documents) && documents > 0)
        r.accuracy_counts[format_column(column)] = {static_cast<int64_t>(correct), static_cast<int64_t>(documents)};
    }
    // the cells of the heat maps: full attention's (passkey@L#wWsS are in the tables only)
    if (eval.protocol == ProtocolKind::passkey && eval.tag.empty())
      read_accuracy_cells(RunPaths(run_dir).passkey("").csv, "passkey", r);
    if (eval.protocol == ProtocolKind::retrieval)
      read_accuracy_cells(RunPaths(run_dir).retrieval(eval.tag, "").csv, eval.tag, r);
    const auto positions = eval.positions_file(run_dir);
    if (positions.empty() || !fs::exists(positions)) continue;
    const auto table = read_item_table(positions, {"position", "mean_loss", "tokens"});
    auto& losses = r.position_loss[eval.context];
    for (size_t i = 1; i < table.size(); i += 3) losses.push_back(table[i]);
  }
  r.metrics["train_s"] = elapsed;
  r.device = run_device(run_dir, yaml_config_files());
  try {
    r.items = ablation_items(run_dir, config, asked);
  } catch (const std::exception& e) {
    r.items_error = e.what();
  }
  return r;
}

void write_ablation_results(const ExperimentSpec& spec, const std::vector<RunResult>& results,
                            const std::string& out_dir, const std::string& command) {
  const AblationLayout layout(out_dir);
  // Every run's columns (a rotary run's scaled evaluations are its own); order: by name,
  // numbers by value (test_ppl@256 before @1024).
  std::vector<std::string> metrics;
  {
    std::set<std::string> names;
    for (const auto& r : results)
      for (const auto& [name, value] : r.metrics) names.insert(name);
    metrics.assign(names.begin(), names.end());
  }
  std::stable_sort(metrics.begin(), metrics.end(), column_before);
  write_file_atomically(layout.results_csv(), results_csv(metrics, results), "results table");
  std::vector<std::string> order;  // variants in run order
  for (const auto& r : results)
    if (std::find(order.begin(), order.end(), r.variant) == order.end()) order.push_back(r.variant);
  const auto rows = significance_rows(compared_pairs(order, spec.baseline, spec.pairs), order, results);
  const auto& baseline = spec.baseline.empty() ? order.front() : spec.baseline;
  // a cell's mark: its test against the baseline (two-stage, or pooled for translation)
  // is significant after Holm's adjustment
  auto marked = [&](const std::string& variant, const std::string& column) {
    return std::any_of(rows.begin(), rows.end(), [&](const SignificanceRow& r) {
      return r.variant == variant && r.baseline == baseline && r.column == column && r.significant();
    });
  };
  write_file_atomically(layout.significance_csv(), significance_csv(rows), "significance table");
  std::ostringstream md;
  md << "# " << spec.path << "\n\n`" << command
     << "`\n\nMean ± sample standard deviation over seeds (n = seeds; a single seed has no sd).\n\n";
  md << "| variant | n | device |";
  for (const auto& m : metrics) md << " " << m << " |";
  md << "\n|---|---|---|";
  for (size_t i = 0; i < metrics.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& variant : order) md << table_row(variant, results, metrics, marked);
  std::set<std::string> devices;
  for (const auto& r : results) devices.insert(r.device);
  if (devices.size() > 1)
    md << "\nThe runs trained on more than one device: their train_s do not compare, and a seed's run on one "
          "device is not its run on another (the random streams and the order of sums differ), so seeds there "
          "are samples of the same training, not repeats of one run.\n";
  write_pooled_accuracy(order, results, md);
  if (order.size() > 1)
    md << "\n`*` in the table: the test against " << baseline
       << " below finds the difference significant (Holm-adjusted p < 0.05).\n";
  md << significance_markdown(rows);
  for (const auto& r : results)  // runs whose test items could not be read: named, not dropped
    if (!r.items_error.empty())
      md << "\nNo paired test uses " << r.variant << " seed " << r.seed << ": " << r.items_error << ".\n";
  write_file_atomically(layout.results_md(), md.str(), "results table");
  const PlotInputs plots{order, results, metrics, layout, spec.path, command};
  write_valid_curves(plots);
  write_extrapolation_plots(plots);
  write_positions_plot(plots);
  write_gain_plots(plots);
  write_accuracy_plots(plots);
  write_heat_maps(plots, spec.evaluations);
}

}  // namespace ropelab
