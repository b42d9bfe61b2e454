#include "ropelab/experiment/significance_tests.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <sstream>

#include "ropelab/metrics/cluster_bootstrap.h"
#include "ropelab/metrics/significance.h"

namespace ropelab {

namespace {

constexpr int64_t kResamples = 1000;
constexpr uint64_t kSeed = 12345;

const PairedItems* items_for(const RunResult& r, const std::string& column) {
  for (const auto& i : r.items)
    if (i.column == column) return &i;
  return nullptr;
}

const RunResult* run_of(const std::vector<RunResult>& results, const std::string& variant, int64_t seed) {
  for (const auto& r : results)
    if (r.variant == variant && r.seed == seed) return &r;
  return nullptr;
}

std::vector<int64_t> seeds_of(const std::vector<RunResult>& results, const std::string& variant) {
  std::vector<int64_t> seeds;
  for (const auto& r : results)
    if (r.variant == variant) seeds.push_back(r.seed);
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

bool per_token(const PairedItems& i) { return i.metric->name() == "ppl" || i.metric->name() == "nats/token"; }

/// A column's items summed per unit, in order of first appearance: [value, tokens] each, or
/// the difference of two runs' values over the first's tokens. Empty, with `why`, where the
/// runs' items differ.
std::vector<RatioItem> unit_sums(const PairedItems& a, const PairedItems* b, std::string* why) {
  if (b && (a.stats.size() != b->stats.size() || a.units != b->units)) {
    *why = "the runs' test items differ (" + std::to_string(a.items()) + " and " + std::to_string(b->items()) + ")";
    return {};
  }
  std::map<int64_t, size_t> index;
  std::vector<RatioItem> out;
  for (size_t i = 0; i < a.items(); ++i) {
    const int64_t unit = a.units.empty() ? static_cast<int64_t>(i) : a.units[i];
    const auto [it, added] = index.emplace(unit, out.size());
    if (added) out.push_back({});
    const double tokens = a.stats[2 * i + 1];
    if (b && b->stats[2 * i + 1] != tokens) {
      *why = "the runs' test items differ in tokens at item " + std::to_string(i + 1);
      return {};
    }
    out[it->second].numerator += a.stats[2 * i] - (b ? b->stats[2 * i] : 0.0);
    out[it->second].denominator += tokens;
  }
  return out;
}

/// The column's score over the items of several runs (pooled sums).
double pooled_score(const std::vector<const PairedItems*>& items) {
  std::vector<double> sums(2, 0.0);
  for (const auto* i : items)
    for (size_t k = 0; k < i->stats.size(); ++k) sums[k % 2] += i->stats[k];
  return items.empty() ? SignificanceRow::kNaN : items[0]->metric->score(sums.data());
}

/// Accuracy cells of a column as [correct, documents] items (units: the cells).
PairedItems cell_items(const RunResult& r, const std::string& column) {
  PairedItems out{column, per_token_metric(), {}, {}};
  for (const auto& [correct, documents] : r.accuracy_cells.at(column))
    out.stats.insert(out.stats.end(), {static_cast<double>(correct), static_cast<double>(documents)});
  return out;
}

/// The columns both variants' runs can be tested on: per-token item columns and accuracy
/// cells that runs of each have (a rotary run's scaled evaluations are its own), in the
/// order of the first variant's runs.
std::vector<std::string> two_stage_columns(const std::vector<RunResult>& results, const std::string& a,
                                           const std::string& b) {
  auto columns_of = [&](const std::string& variant) {
    std::vector<std::string> columns;
    auto add = [&](const std::string& c) {
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    };
    for (const auto& r : results) {
      if (r.variant != variant) continue;
      for (const auto& i : r.items)
        if (per_token(i)) add(i.column);
      for (const auto& [column, cells] : r.accuracy_cells) add(column);
    }
    return columns;
  };
  // a side whose items could not be read keeps the other's columns: its tests say why they are missing
  auto unreadable = [&](const std::string& variant) {
    return std::any_of(results.begin(), results.end(),
                       [&](const RunResult& r) { return r.variant == variant && !r.items_error.empty(); });
  };
  auto columns = columns_of(a);
  const auto other = columns_of(b);
  if (unreadable(a)) columns = other;
  if (unreadable(a) || unreadable(b)) return columns;
  columns.erase(
      std::remove_if(columns.begin(), columns.end(),
                     [&](const std::string& c) { return std::find(other.begin(), other.end(), c) == other.end(); }),
      columns.end());
  return columns;
}

/// One two-stage test of `column`: variant a against b (null: against 0), over their common seeds.
SignificanceRow two_stage(const std::vector<RunResult>& results, const std::string& a, const std::string* b,
                          const std::string& column) {
  SignificanceRow row;
  row.variant = a, row.baseline = b ? *b : "0", row.column = column, row.test = "two_stage_bootstrap";
  RatioClusters clusters;
  std::deque<PairedItems> owned;  // accuracy cells made into items (a deque: pointers to them stay valid)
  std::vector<const PairedItems*> side_a, side_b;
  for (auto seed : seeds_of(results, a)) {
    const auto* ra = run_of(results, a, seed);
    const auto* rb = b ? run_of(results, *b, seed) : nullptr;
    if (b && !rb) continue;
    auto items = [&](const RunResult& r) -> const PairedItems* {
      if (r.accuracy_cells.count(column)) return &owned.emplace_back(cell_items(r, column));
      return items_for(r, column);
    };
    const auto* ia = items(*ra);
    const auto* ib = rb ? items(*rb) : nullptr;
    if (!ia || (b && !ib)) {
      const auto& error = !ra->items_error.empty() ? ra->items_error : rb ? rb->items_error : std::string();
      if (!error.empty()) row.note = error;
      continue;
    }
    std::string why;
    auto units = unit_sums(*ia, ib, &why);
    if (units.empty()) {
      row.note = "seed " + std::to_string(seed) + ": " + why;
      continue;
    }
    clusters.push_back(std::move(units));
    side_a.push_back(ia);
    if (ib) side_b.push_back(ib);
    row.seeds += (row.seeds.empty() ? "" : " ") + std::to_string(seed);
  }
  if (clusters.empty()) {
    if (row.note.empty()) row.note = "no seed of both variants has items of " + column;
    return row;
  }
  const auto r = cluster_bootstrap(clusters, kResamples, kSeed);
  row.score = pooled_score(side_a);
  row.baseline_score = b ? pooled_score(side_b) : 0.0;
  row.difference = r.estimate, row.low = r.low, row.high = r.high, row.p_value = r.p_value;
  return row;
}

/// sacreBLEU's paired bootstrap of a translation metric: per seed, and over the seeds pooled.
void paired_bootstrap_rows(const std::vector<RunResult>& results, const std::string& a, const std::string& b,
                           std::map<size_t, Resamples>& draws, std::vector<SignificanceRow>& out) {
  const PairedTestOptions options;  // 1000 resamples, seed 12345
  std::vector<std::string> columns;
  for (const auto& r : results)
    if (r.variant == b)
      for (const auto& i : r.items)
        if (!per_token(i) && std::find(columns.begin(), columns.end(), i.column) == columns.end())
          columns.push_back(i.column);
  auto test = [&](const CorpusMetric& metric, const std::vector<double>& base, const std::vector<double>& system,
                  SignificanceRow row) {
    const size_t items = base.size() / metric.width();
    auto& resamples = draws[items];
    if (resamples.empty())
      resamples = draw_resamples(items, static_cast<size_t>(options.resolved_samples()), options.seed);
    const auto r = paired_bootstrap(metric, base, system, resamples);
    row.baseline_score = metric.score(column_sums(base, metric.width()).data());
    row.score = r.score, row.difference = r.score - row.baseline_score, row.p_value = r.p_value;
    return row;
  };
  for (const auto& column : columns) {
    std::vector<double> pooled_base, pooled_system;
    const CorpusMetric* metric = nullptr;
    for (auto seed : seeds_of(results, b)) {
      const auto *rb = run_of(results, b, seed), *ra = run_of(results, a, seed);
      if (!ra) continue;
      SignificanceRow row;
      row.variant = a, row.baseline = b, row.column = column, row.test = "paired_bootstrap";
      row.seeds = std::to_string(seed);
      const auto *x = items_for(*rb, column), *y = items_for(*ra, column);
      if ((!x || !y) && rb->items_error.empty() && ra->items_error.empty()) continue;  // a column of one side only
      if (!x || !y) {
        row.note = !rb->items_error.empty()   ? rb->items_error
                   : !ra->items_error.empty() ? ra->items_error
                                              : "no test items for " + column;
      } else if (x->stats.size() != y->stats.size() || x->metric->name() != y->metric->name()) {
        row.note =
            "the runs' test items differ (" + std::to_string(x->items()) + " and " + std::to_string(y->items()) + ")";
      } else {
        out.push_back(test(*x->metric, x->stats, y->stats, row));
        pooled_base.insert(pooled_base.end(), x->stats.begin(), x->stats.end());
        pooled_system.insert(pooled_system.end(), y->stats.begin(), y->stats.end());
        metric = x->metric.get();
        continue;
      }
      out.push_back(row);
    }
    if (metric) {
      SignificanceRow row;
      row.variant = a, row.baseline = b, row.column = column, row.test = "paired_bootstrap", row.seeds = "pooled";
      out.push_back(test(*metric, pooled_base, pooled_system, row));
    }
  }
}

std::string csv_text(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

std::string number(double v, const char* format = "%.10g") {
  if (std::isnan(v)) return "";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

/// The translation tests (sacreBLEU's paired bootstrap) as a table per baseline: a row per
/// variant and column, a cell per seed and pooled, `score vs baseline (p = ...)`.
std::string translation_markdown(const std::vector<SignificanceRow>& rows) {
  std::ostringstream md;
  std::vector<std::string> baselines, seeds;
  for (const auto& r : rows) {
    if (r.test != "paired_bootstrap") continue;
    if (std::find(baselines.begin(), baselines.end(), r.baseline) == baselines.end()) baselines.push_back(r.baseline);
    if (r.seeds != "pooled" && std::find(seeds.begin(), seeds.end(), r.seeds) == seeds.end()) seeds.push_back(r.seeds);
  }
  seeds.push_back("pooled");
  for (const auto& base : baselines) {
    md << "\n## Paired tests against " << base << "\n\n"
       << "Paired bootstrap resampling (Koehn 2004, as sacreBLEU computes it: 1000 resamples of the test sentences, "
          "seed 12345) of each variant's test output against the baseline's run with the same seed, and over all "
          "those seeds pooled. A cell reads `variant vs baseline (p = p-value)`; `*`: p < 0.05 (significance.csv "
          "adds the pooled tests' p-values adjusted by Holm's method). The p-value speaks of the test sentences, "
          "not of seed-to-seed variation: compare with the seeds' spread above.\n\n| variant | column |";
    for (const auto& seed : seeds) md << (seed == "pooled" ? " pooled |" : " seed " + seed + " |");
    md << "\n|---|---|";
    for (size_t i = 0; i < seeds.size(); ++i) md << "---|";
    md << "\n";
    std::vector<std::pair<std::string, std::string>> lines;  // (variant, column) in order
    for (const auto& r : rows)
      if (r.test == "paired_bootstrap" && r.baseline == base &&
          std::find(lines.begin(), lines.end(), std::make_pair(r.variant, r.column)) == lines.end())
        lines.emplace_back(r.variant, r.column);
    for (const auto& [variant, column] : lines) {
      md << "| " << variant << " | " << column << " |";
      for (const auto& seed : seeds) {
        const auto it = std::find_if(rows.begin(), rows.end(), [&](const SignificanceRow& r) {
          return r.test == "paired_bootstrap" && r.baseline == base && r.variant == variant && r.column == column &&
                 r.seeds == seed;
        });
        if (it == rows.end())
          md << " - |";
        else if (!it->note.empty())
          md << " n/a |";
        else
          md << " " << number(it->score, "%.2f") << " vs " << number(it->baseline_score, "%.2f")
             << " (p = " << number(it->p_value, "%.4f") << (it->p_value < 0.05 ? "*" : "") << ") |";
      }
      md << "\n";
    }
    for (const auto& r : rows)
      if (r.test == "paired_bootstrap" && r.baseline == base && r.note.rfind("the runs' test items differ", 0) == 0)
        md << "\nNo test of " << r.column << " for " << r.variant << " seed " << r.seeds << ": " << r.note << ".";
  }
  return md.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> compared_pairs(
    const std::vector<std::string>& order, const std::string& baseline,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::pair<std::string, std::string>> out;
  if (order.empty()) return out;
  const auto& base = baseline.empty() ? order[0] : baseline;
  for (const auto& v : order)
    if (v != base) out.emplace_back(v, base);
  for (const auto& pair : extra)
    if (std::find(out.begin(), out.end(), pair) == out.end()) out.push_back(pair);
  return out;
}

std::vector<SignificanceRow> significance_rows(const std::vector<std::pair<std::string, std::string>>& pairs,
                                               const std::vector<std::string>& order,
                                               const std::vector<RunResult>& results) {
  std::vector<SignificanceRow> rows;
  std::map<size_t, Resamples> draws;  // sacreBLEU's resamples, by number of items
  for (const auto& [a, b] : pairs) {
    if (seeds_of(results, a).empty() || seeds_of(results, b).empty()) {  // a variant whose runs all failed
      SignificanceRow row;
      row.variant = a, row.baseline = b, row.test = "two_stage_bootstrap";
      row.note = "no finished run of " + (seeds_of(results, a).empty() ? a : b);
      rows.push_back(row);
      continue;
    }
    for (const auto& column : two_stage_columns(results, a, b)) rows.push_back(two_stage(results, a, &b, column));
    paired_bootstrap_rows(results, a, b, draws, rows);
  }
  for (const auto& v : order)  // each variant's context gain against 0
    for (const auto& column : two_stage_columns(results, v, v))
      if (column.rfind("gain@", 0) == 0) rows.push_back(two_stage(results, v, nullptr, column));
  std::vector<double> family;
  std::vector<size_t> members;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!std::isnan(rows[i].p_value) && (rows[i].test == "two_stage_bootstrap" || rows[i].seeds == "pooled"))
      family.push_back(rows[i].p_value), members.push_back(i);
  const auto adjusted = holm_adjust(family);
  for (size_t k = 0; k < members.size(); ++k) rows[members[k]].p_holm = adjusted[k];
  return rows;
}

std::string significance_csv(const std::vector<SignificanceRow>& rows) {
  std::ostringstream csv;
  csv << "variant,baseline_variant,column,test,seeds,baseline,score,difference,ci95_low,ci95_high,p_value,p_holm,"
         "note\n";
  for (const auto& r : rows)
    csv << csv_text(r.variant) << ',' << csv_text(r.baseline) << ',' << r.column << ',' << r.test << ','
        << csv_text(r.seeds) << ',' << number(r.baseline_score) << ',' << number(r.score) << ',' << number(r.difference)
        << ',' << number(r.low) << ',' << number(r.high) << ',' << number(r.p_value) << ',' << number(r.p_holm) << ','
        << (r.note.empty() ? "" : csv_text(r.note)) << '\n';
  return csv.str();
}

std::string significance_markdown(const std::vector<SignificanceRow>& rows) {
  std::ostringstream md;
  auto p_cell = [](const SignificanceRow& r) {
    return number(r.p_value, "%.4f") + " | " + number(r.p_holm, "%.4f") + (r.significant() ? " *" : "") + " |";
  };
  std::vector<std::string> baselines;
  for (const auto& r : rows)
    if (r.test == "two_stage_bootstrap" && r.baseline != "0" &&
        std::find(baselines.begin(), baselines.end(), r.baseline) == baselines.end())
      baselines.push_back(r.baseline);
  const std::string how =
      "Two-stage bootstrap (" + std::to_string(kResamples) + " resamples, seed " + std::to_string(kSeed) +
      "): each resample draws the seeds with replacement, then the evaluation units of each drawn seed (documents, "
      "blocks of the test stream, or retrieval cells) with replacement; the interval is its 2.5-97.5% percentiles. "
      "p (Holm): adjusted over every test of significance.csv's family; `*`: below 0.05. A reading calls a "
      "difference without `*` not significant.";
  for (const auto& base : baselines) {
    md << "\n## Tests against " << base << "\n\n"
       << how
       << " Perplexity columns: the difference in nats per token (the log of the perplexities' ratio); gain: in "
          "nats per token; retrieval: in accuracy.\n\n| variant | column | seeds | variant - baseline [95% CI] | p "
          "| p (Holm) |\n|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
      if (r.test != "two_stage_bootstrap" || r.baseline != base) continue;
      md << "| " << r.variant << " | " << r.column << " | " << r.seeds << " | ";
      if (!r.note.empty() && std::isnan(r.difference)) {
        md << "n/a: " << r.note << " | | |\n";
        continue;
      }
      md << number(r.difference, "%+.4f") << " [" << number(r.low, "%+.4f") << ", " << number(r.high, "%+.4f") << "] | "
         << p_cell(r) << "\n";
    }
  }
  md << translation_markdown(rows);
  bool gains = false;
  for (const auto& r : rows) {
    if (r.test != "two_stage_bootstrap" || r.baseline != "0") continue;
    if (!gains)
      md << "\n## Context gain against 0\n\n"
         << how
         << " A gain above 0: the keys beyond the window lower the loss.\n\n| variant | column | seeds | gain in "
            "nats/token [95% CI] | p | p (Holm) |\n|---|---|---|---|---|---|\n";
    gains = true;
    md << "| " << r.variant << " | " << r.column << " | " << r.seeds << " | " << number(r.difference, "%+.4f") << " ["
       << number(r.low, "%+.4f") << ", " << number(r.high, "%+.4f") << "] | " << p_cell(r) << "\n";
  }
  return md.str();
}

}  // namespace ropelab
