#include "ropelab/experiment/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ropelab/config/config.h"
#include "ropelab/eval/passkey.h"
#include "ropelab/eval/significance.h"
#include "ropelab/experiment/columns.h"
#include "ropelab/experiment/evaluations.h"
#include "ropelab/experiment/plots.h"
#include "ropelab/experiment/seed_stats.h"
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

/// One paired bootstrap of a variant against the baseline variant: one seed, or all pooled.
struct PairedCell {
  std::string variant, column, seed;  // seed: "1", ..., or "pooled"
  double baseline = 0, score = 0, p_value = 0;
  std::string missing;  // why no test was run, if none was
};

const PairedItems* items_for(const RunResult& r, const std::string& column) {
  for (const auto& i : r.items)
    if (i.column == column) return &i;
  return nullptr;
}

/// Paired bootstrap tests (sacreBLEU's, significance.h) of every variant's test items
/// against the first variant's: per seed both ran, and over those seeds pooled (each
/// seed's items in turn, paired by seed and item).
std::vector<PairedCell> paired_cells(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                                     const PairedTestOptions& options) {
  std::vector<PairedCell> cells;
  if (order.size() < 2) return cells;
  std::vector<const RunResult*> baseline;
  for (const auto& r : results)
    if (r.variant == order[0]) baseline.push_back(&r);
  std::vector<std::string> columns;  // the baseline runs' paired columns, in their order
  for (const auto* b : baseline)
    for (const auto& i : b->items)
      if (std::find(columns.begin(), columns.end(), i.column) == columns.end()) columns.push_back(i.column);
  std::map<size_t, Resamples> draws;  // by number of items: the same draws for every test of that size
  auto test = [&](const CorpusMetric& metric, const std::vector<double>& base, const std::vector<double>& system,
                  PairedCell cell) {
    const size_t items = base.size() / metric.width();
    auto& resamples = draws[items];
    if (resamples.empty())
      resamples = draw_resamples(items, static_cast<size_t>(options.resolved_samples()), options.seed);
    const auto r = paired_bootstrap(metric, base, system, resamples);
    cell.baseline = metric.score(column_sums(base, metric.width()).data());
    cell.score = r.score;
    cell.p_value = r.p_value;
    return cell;
  };
  for (size_t v = 1; v < order.size(); ++v)
    for (const auto& column : columns) {
      std::vector<double> pooled_base, pooled_system;
      const CorpusMetric* metric = nullptr;
      for (const auto* b : baseline) {
        const auto it = std::find_if(results.begin(), results.end(),
                                     [&](const RunResult& r) { return r.variant == order[v] && r.seed == b->seed; });
        if (it == results.end()) continue;
        PairedCell cell{order[v], column, std::to_string(b->seed), 0, 0, 0, ""};
        const auto *x = items_for(*b, column), *y = items_for(*it, column);
        if ((!x || !y) && b->items_error.empty() && it->items_error.empty())
          continue;  // a column of one variant only (a rotary run's scaled evaluation)
        if (!x || !y) {
          cell.missing = !b->items_error.empty()    ? b->items_error
                         : !it->items_error.empty() ? it->items_error
                                                    : "no test items for " + column;
        } else if (x->stats.size() != y->stats.size() || x->metric->name() != y->metric->name()) {
          cell.missing =
              "the runs' test items differ (" + std::to_string(x->items()) + " and " + std::to_string(y->items()) + ")";
        } else {
          cells.push_back(test(*x->metric, x->stats, y->stats, cell));
          pooled_base.insert(pooled_base.end(), x->stats.begin(), x->stats.end());
          pooled_system.insert(pooled_system.end(), y->stats.begin(), y->stats.end());
          metric = x->metric.get();
          continue;
        }
        cells.push_back(cell);
      }
      if (metric) cells.push_back(test(*metric, pooled_base, pooled_system, {order[v], column, "pooled", 0, 0, 0, ""}));
    }
  return cells;
}

std::string p_text(double p) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", p);
  return std::string(buffer) + (p < 0.05 ? "*" : "");
}

/// results.md's passkey table: per variant and prompt length the documents retrieved over
/// every seed and depth, as accuracy [Wilson's 95% interval] (correct/documents).
void write_pooled_passkey(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                          std::ostream& md) {
  std::set<int64_t> lengths;
  for (const auto& r : results)
    for (const auto& [length, counts] : r.passkey_counts) lengths.insert(length);
  if (lengths.empty()) return;
  md << "\n## Passkey retrieval pooled over seeds\n\nDocuments retrieved over every seed and key depth: "
        "accuracy [Wilson's 95% interval] (correct/documents). The interval speaks of the documents, as if all "
        "were drawn independently; the seeds' spread is in the table above.\n\n| variant |";
  for (auto l : lengths) md << " passkey@" << l << " |";
  md << "\n|---|";
  for (size_t i = 0; i < lengths.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& variant : order) {
    md << "| " << variant << " |";
    for (auto l : lengths) {
      int64_t correct = 0, documents = 0;
      for (const auto& r : results)
        if (r.variant == variant && r.passkey_counts.count(l))
          correct += r.passkey_counts.at(l).first, documents += r.passkey_counts.at(l).second;
      if (documents == 0) {
        md << " - |";
        continue;
      }
      const auto ci = wilson_interval(correct, documents);
      char cell[96];
      std::snprintf(cell, sizeof cell, " %.3f [%.3f, %.3f] (%lld/%lld) |",
                    static_cast<double>(correct) / static_cast<double>(documents), ci.low, ci.high,
                    static_cast<long long>(correct), static_cast<long long>(documents));
      md << cell;
    }
    md << "\n";
  }
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
  for (const auto& eval : ablation_evals(config, asked)) {
    for (const auto& [key, column] : eval.columns) {
      r.metrics[format_column(column)] = read_report_number(eval.report(run_dir), key);
      if (column.measure != ColumnKey::Measure::passkey) continue;
      const auto length = std::to_string(column.length);
      const double correct = read_report_number(eval.report(run_dir), "correct@" + length),
                   documents = read_report_number(eval.report(run_dir), "documents@" + length);
      if (std::isfinite(correct) && std::isfinite(documents) && documents > 0)
        r.passkey_counts[column.length] = {static_cast<int64_t>(correct), static_cast<int64_t>(documents)};
    }
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
  {
    std::ostringstream csv;
    csv << "variant,seed,run,device";
    for (const auto& m : metrics) csv << "," << m;
    csv << "\n";
    csv.precision(10);
    for (const auto& r : results) {
      csv << csv_text(r.variant) << ',' << r.seed << ',' << csv_text(r.run) << ',' << csv_text(r.device);
      for (const auto& m : metrics) {
        csv << ",";
        if (r.metrics.count(m)) csv << r.metrics.at(m);  // empty: not evaluated for this run
      }
      csv << "\n";
    }
    write_file_atomically(layout.results_csv(), csv.str(), "results table");
  }
  std::vector<std::string> order;  // variants in run order
  for (const auto& r : results)
    if (std::find(order.begin(), order.end(), r.variant) == order.end()) order.push_back(r.variant);
  const PairedTestOptions paired;  // bootstrap, 1000 resamples, seed 12345
  const auto cells = paired_cells(order, results, paired);
  auto pooled_significant = [&](const std::string& variant, const std::string& column) {
    return std::any_of(cells.begin(), cells.end(), [&](const PairedCell& c) {
      return c.variant == variant && c.column == column && c.seed == "pooled" && c.p_value < 0.05;
    });
  };
  {
    std::ostringstream csv;
    csv << "variant,baseline_variant,column,seed,baseline,score,p_value,note\n";
    csv.precision(10);
    for (const auto& c : cells) {
      csv << csv_text(c.variant) << ',' << csv_text(order[0]) << ',' << c.column << ',' << c.seed << ',';
      if (c.missing.empty())
        csv << c.baseline << ',' << c.score << ',' << c.p_value << ",\n";
      else
        csv << ",,," << csv_text(c.missing) << '\n';
    }
    write_file_atomically(layout.significance_csv(), csv.str(), "significance table");
  }
  std::ostringstream md;
  md << "# " << spec.path << "\n\n`" << command
     << "`\n\nMean ± sample standard deviation over seeds (n = seeds; a single seed has no sd).\n\n";
  md << "| variant | n | device |";
  for (const auto& m : metrics) md << " " << m << " |";
  md << "\n|---|---|---|";
  for (size_t i = 0; i < metrics.size(); ++i) md << "---|";
  md << "\n";
  std::vector<Series> curves;
  for (const auto& variant : order) {
    std::vector<const RunResult*> runs;
    for (const auto& r : results)
      if (r.variant == variant) runs.push_back(&r);
    md << "| " << variant << " | " << runs.size() << " | " << devices_cell(runs) << " |";
    for (const auto& m : metrics) {
      // the finite values of the runs that have this column; a value that is not one (an
      // evaluation that failed) is left out and the cell says over how many runs it is
      const auto values = seed_stats::finite_values(results, variant, m);
      const bool asked = std::any_of(runs.begin(), runs.end(), [&](const RunResult* r) { return r->metrics.count(m); });
      if (values.empty()) {
        md << (asked ? " n/a |" : " - |");
        continue;
      }
      const auto spread = mean_sd(values);
      char cell[64];
      if (values.size() > 1)
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f ± %.0f" : " %.3f ± %.3f", spread.mean, spread.sd);
      else  // one seed: no spread to report
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f" : " %.3f", spread.mean);
      md << cell << (values.size() < runs.size() ? " (n=" + std::to_string(values.size()) + ")" : std::string())
         << (pooled_significant(variant, m) ? " * |" : " |");
    }
    md << "\n";
    Series s;  // mean validation loss per step over the seeds that have it, ± their sample sd
    s.name = variant;
    std::map<double, std::vector<double>> by_step;
    for (auto* r : runs)
      for (const auto& [step, loss] : r->curve) by_step[step].push_back(loss);
    for (const auto& [step, losses] : by_step) add_point(s, step, losses);
    curves.push_back(std::move(s));
  }
  std::set<std::string> devices;
  for (const auto& r : results) devices.insert(r.device);
  if (devices.size() > 1)
    md << "\nThe runs trained on more than one device: their train_s do not compare, and a seed's run on one "
          "device is not its run on another (the random streams and the order of sums differ), so seeds there "
          "are samples of the same training, not repeats of one run.\n";
  write_pooled_passkey(order, results, md);
  if (!cells.empty()) {
    std::vector<std::string> seeds;
    for (const auto& c : cells)
      if (c.seed != "pooled" && std::find(seeds.begin(), seeds.end(), c.seed) == seeds.end()) seeds.push_back(c.seed);
    md << "\n`*` in the table: the pooled paired test below finds the difference to " << order[0]
       << " significant (p < 0.05).\n\n## Paired tests against " << order[0] << "\n\n"
       << "Paired bootstrap resampling (Koehn 2004, as sacreBLEU computes it: " << paired.resolved_samples()
       << " resamples of the test items, seed " << paired.seed
       << "; items are sentences for translation, evaluation windows for language models) of each variant's test "
          "output against the first variant's run with the same seed, and over all those seeds pooled. A cell "
          "reads `variant vs baseline (p = p-value)`; `*`: p < 0.05. The p-value speaks of the test items, not of "
          "seed-to-seed variation: compare with the seeds' spread above.\n\n| variant | column |";
    for (const auto& seed : seeds) md << " seed " << seed << " |";
    md << " pooled |\n|---|---|";
    for (size_t i = 0; i <= seeds.size(); ++i) md << "---|";
    md << "\n";
    for (size_t v = 1; v < order.size(); ++v) {
      std::vector<std::string> columns;
      for (const auto& c : cells)
        if (c.variant == order[v] && std::find(columns.begin(), columns.end(), c.column) == columns.end())
          columns.push_back(c.column);
      for (const auto& column : columns) {
        md << "| " << order[v] << " | " << column << " |";
        auto seeds_and_pooled = seeds;
        seeds_and_pooled.push_back("pooled");
        for (const auto& seed : seeds_and_pooled) {
          const auto it = std::find_if(cells.begin(), cells.end(), [&](const PairedCell& c) {
            return c.variant == order[v] && c.column == column && c.seed == seed;
          });
          char scores[64];
          if (it == cells.end()) {
            md << " - |";
          } else if (!it->missing.empty()) {
            md << " n/a |";
          } else {
            std::snprintf(scores, sizeof scores, "%.2f vs %.2f", it->score, it->baseline);
            md << " " << scores << " (p = " << p_text(it->p_value) << ") |";
          }
        }
        md << "\n";
      }
    }
    for (const auto& c : cells)
      if (!c.missing.empty() && c.missing.rfind("the runs' test items differ", 0) == 0)
        md << "\nNo test of " << c.column << " for " << c.variant << " seed " << c.seed << ": " << c.missing << ".";
    md << "\n";
  }
  for (const auto& r : results)  // runs whose test items could not be read: named, not dropped
    if (!r.items_error.empty())
      md << "\nNo paired test uses " << r.variant << " seed " << r.seed << ": " << r.items_error << ".\n";
  write_file_atomically(layout.results_md(), md.str(), "results table");
  PlotOptions plot;
  plot.title = spec.path + ": validation loss";
  plot.x_label = "step";
  plot.y_label = "validation loss (mean ± sd over seeds)";
  plot.caption = command;
  write_line_plot(layout.valid_curves_svg(), curves, plot);
  write_extrapolation_plots(order, results, metrics, layout, spec.path, command);
  write_positions_plot(order, results, layout.positions_svg(), spec.path, command);
  write_passkey_plot(order, results, metrics, layout.passkey_svg(), spec.path, command);
}

}  // namespace ropelab
