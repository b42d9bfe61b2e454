#include "ropelab/train/ablation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "ropelab/eval/significance.h"
#include "ropelab/report/plot.h"
#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/task/task.h"
#include "ropelab/util/clock.h"
#include "ropelab/util/subprocess.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A directory name for a variant: key=value pairs with characters a shell or file system
/// would mind replaced.
std::string slug(const std::string& name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-' || c == '_' || c == ',')
               ? c
               : '_';
  return out.empty() ? "base" : out;
}

/// The number at `key` of the JSON object in the file at `path`; NaN when absent.
double json_number(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains(key) || !json[key].is_number())
    return std::numeric_limits<double>::quiet_NaN();
  return json[key].get<double>();
}

struct Job {
  std::string variant, dir, log, command;
  int64_t seed = 0;
};

/// Whether a run holds an evaluation's report with every column this version reads, and
/// its items file: a report from an older version lacking a column is evaluated again.
bool evaluation_complete(const std::string& run_dir, const AblationEval& eval) {
  if (!eval.items_file.empty() && !fs::exists(run_dir + "/" + eval.items_file)) return false;
  if (!eval.positions_file.empty() && !fs::exists(run_dir + "/" + eval.positions_file)) return false;
  for (const auto& [key, column] : eval.columns)
    if (std::isnan(json_number(run_dir + "/" + eval.file, key))) return false;
  return true;
}

/// Mean and sample standard deviation over seeds (sd NaN for a single value).
struct Spread {
  double mean = 0, sd = std::numeric_limits<double>::quiet_NaN();
};
Spread mean_sd(const std::vector<double>& values) {
  Spread s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() < 2) return s;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(sq / static_cast<double>(values.size() - 1));
  return s;
}

/// Adds a point at `x`: the mean of `values` with its sd as the band (none for no values).
void add_point(Series& line, double x, const std::vector<double>& values) {
  if (values.empty()) return;
  const auto s = mean_sd(values);
  line.x.push_back(x), line.y.push_back(s.mean), line.spread.push_back(s.sd);
}

/// The finite values of `column` over the runs of `variant` (one per seed that has it).
std::vector<double> finite_values(const std::vector<RunResult>& results, const std::string& variant,
                                  const std::string& column) {
  std::vector<double> values;
  for (const auto& r : results) {
    const auto it = r.metrics.find(column);
    if (r.variant == variant && it != r.metrics.end() && std::isfinite(it->second)) values.push_back(it->second);
  }
  return values;
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

/// extrapolation.svg, when the table has test perplexity at two or more contexts: mean
/// perplexity over seeds (± sd shaded) against the evaluation length on a log axis, a
/// line per variant and RoPE scaling applied at evaluation; non-overlapping windows in
/// extrapolation.svg, sliding windows of each stride S in extrapolation.strideS.svg.
void write_extrapolation_plots(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                               const std::vector<std::string>& metrics, const std::string& out_dir,
                               const std::string& experiment, const std::string& command) {
  // column "test_ppl@C", "test_ppl@C/S" or "test_ppl@C+SCALING" -> (stride or 0, scaling) -> (context, column)
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, std::string>>> groups;
  const std::string prefix = "test_ppl@";
  for (const auto& m : metrics) {
    if (m.rfind(prefix, 0) != 0) continue;
    const auto slash = m.find('/'), plus = m.find('+');
    const int64_t context = std::atol(m.c_str() + prefix.size());
    const int64_t stride = slash == std::string::npos ? 0 : std::atol(m.c_str() + slash + 1);
    groups[{stride, plus == std::string::npos ? "none" : m.substr(plus + 1)}].emplace_back(context, m);
  }
  size_t contexts = 0;
  for (const auto& [group, columns] : groups) contexts = std::max(contexts, columns.size());
  if (contexts < 2) return;
  // A scaled line starts from the plain evaluation at the contexts it does not cover (the
  // training context, where the factor would be 1).
  for (auto& [group, columns] : groups) {
    if (group.second == "none" || !groups.count({group.first, "none"})) continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (const auto& [context, column] : columns) first = std::min(first, context);
    for (const auto& plain : groups.at({group.first, "none"}))
      if (plain.first < first) columns.push_back(plain);
  }
  std::set<int64_t> strides;
  for (const auto& [group, columns] : groups) strides.insert(group.first);
  for (const auto stride : strides) {
    std::vector<Series> lines;
    for (const auto& variant : order)
      for (auto& [group, columns] : groups) {
        if (group.first != stride) continue;
        std::sort(columns.begin(), columns.end());
        Series line;
        line.name = variant + ",scaling=" + group.second;
        bool own = group.second == "none";  // a scaled line needs a scaled value of its own
        for (const auto& [context, column] : columns) {
          const auto values = finite_values(results, variant, column);
          if (!values.empty()) own = own || column.find('+') != std::string::npos;
          add_point(line, static_cast<double>(context), values);
        }
        if (own && !line.x.empty()) lines.push_back(std::move(line));
      }
    PlotOptions plot;
    plot.title =
        experiment + ": test perplexity by evaluation length, " +
        (stride == 0 ? std::string("non-overlapping windows") : "windows sliding by " + std::to_string(stride));
    plot.x_label = "evaluation context (tokens)";
    plot.y_label = "test perplexity (mean ± sd over seeds)";
    plot.log_x = plot.log_y = true;
    plot.markers = true;
    plot.caption = command;
    const auto name =
        stride == 0 ? std::string("extrapolation.svg") : "extrapolation.stride" + std::to_string(stride) + ".svg";
    write_line_plot((fs::path(out_dir) / name).string(), lines, plot);
  }
}

/// passkey.svg, when the table has passkey accuracy ("passkey@L"): the accuracy over
/// depths against the prompt length on a log axis, a line per variant (mean ± sd over seeds).
void write_passkey_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                        const std::vector<std::string>& metrics, const std::string& path, const std::string& experiment,
                        const std::string& command) {
  const std::string prefix = "passkey@";
  std::vector<Series> lines;
  for (const auto& variant : order) {
    Series line;
    line.name = variant;
    for (const auto& m : metrics) {
      if (m.rfind(prefix, 0) != 0) continue;
      add_point(line, static_cast<double>(std::atol(m.c_str() + prefix.size())), finite_values(results, variant, m));
    }
    if (!line.x.empty()) lines.push_back(std::move(line));
  }
  if (lines.empty()) return;
  PlotOptions plot;
  plot.title = experiment + ": passkey retrieval by document length";
  plot.x_label = "prompt length (characters)";
  plot.y_label = "accuracy over key depths (mean ± sd over seeds)";
  plot.log_x = true;
  plot.markers = true;
  plot.caption = command;
  write_line_plot(path, lines, plot);
}

/// positions.svg for language models: the mean test loss at each position of the window,
/// at the longest context evaluated, in quarter-octave bins of positions, a line per
/// variant (mean over seeds, ± sd shaded): where past the training length each encoding
/// breaks.
void write_positions_plot(const std::vector<std::string>& order, const std::vector<RunResult>& results,
                          const std::string& path, const std::string& experiment, const std::string& command) {
  int64_t context = 0;
  for (const auto& r : results)
    for (const auto& [c, losses] : r.position_loss) context = std::max(context, c);
  if (context == 0) return;
  // Positions 1..context in bins of a quarter octave ([2^(b/4), 2^((b+1)/4))): a run's
  // value in a bin is the mean of its positions' losses, which averages out the few windows
  // behind each single position of a long window.
  auto bin_of = [](int64_t position) { return static_cast<int64_t>(std::floor(4 * std::log2(position) + 1e-9)); };
  std::vector<Series> lines;
  for (const auto& variant : order) {
    Series line;
    line.name = variant;
    std::map<int64_t, std::vector<double>> by_bin;  // bin -> each run's mean over the bin
    for (const auto& r : results) {
      if (r.variant != variant || !r.position_loss.count(context)) continue;
      std::map<int64_t, std::pair<double, int64_t>> sums;  // bin -> (sum, positions)
      const auto& losses = r.position_loss.at(context);
      for (size_t j = 0; j < losses.size(); ++j)
        if (std::isfinite(losses[j])) {
          auto& [sum, n] = sums[bin_of(static_cast<int64_t>(j) + 1)];
          sum += losses[j], ++n;
        }
      for (const auto& [bin, sum] : sums) by_bin[bin].push_back(sum.first / static_cast<double>(sum.second));
    }
    for (const auto& [bin, values] : by_bin)  // at the bin's geometric middle
      add_point(line, std::pow(2.0, (static_cast<double>(bin) + 0.5) / 4), values);
    if (!line.x.empty()) lines.push_back(std::move(line));
  }
  PlotOptions plot;
  plot.title = experiment + ": test loss by position in windows of " + std::to_string(context);
  plot.x_label = "position in the window (tokens of history + 1; quarter-octave bins)";
  plot.y_label = "mean test loss (nats per token, mean ± sd over seeds)";
  plot.log_x = true;
  plot.caption = command;
  write_line_plot(path, lines, plot);
}

std::string p_text(double p) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", p);
  return std::string(buffer) + (p < 0.05 ? "*" : "");
}

}  // namespace

RunResult read_run_result(const std::string& run_dir, const Config& config, const TestEvaluations& asked) {
  RunResult r;
  double best_ppl = std::numeric_limits<double>::infinity(), elapsed = 0;  // elapsed_s continues over resumes
  for (const auto& e : read_metrics(run_dir + "/metrics.jsonl")) {
    if (e.event == "valid") {
      r.curve.emplace_back(static_cast<double>(e.step), e.get("loss"));
      best_ppl = std::min(best_ppl, e.get("ppl"));
    } else if (e.event == "train") {
      elapsed = e.get("elapsed_s");
    }
  }
  r.metrics["valid_ppl"] = best_ppl;
  for (const auto& eval : make_task(config)->ablation_evals(asked)) {
    for (const auto& [key, column] : eval.columns) r.metrics[column] = json_number(run_dir + "/" + eval.file, key);
    const auto positions = run_dir + "/" + eval.positions_file;
    if (eval.positions_file.empty() || !fs::exists(positions)) continue;
    const auto table = read_item_table(positions, {"position", "mean_loss", "tokens"});
    auto& losses = r.position_loss[eval.context];
    for (size_t i = 1; i < table.size(); i += 3) losses.push_back(table[i]);
  }
  r.metrics["train_s"] = elapsed;
  try {
    r.items = make_task(config)->ablation_items(run_dir, asked);
  } catch (const std::exception& e) {
    r.items_error = e.what();
  }
  return r;
}

int64_t run_ablation(const ExperimentSpec& spec, const AblationOptions& o) {
  const auto variants = expand_grid(spec);
  const int64_t jobs = std::max<int64_t>(1, o.jobs);
  const int64_t threads = o.threads > 0
                              ? o.threads
                              : std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / jobs);
  fs::create_directories(fs::path(o.out_dir) / "runs");

  // Finished runs in this directory, of any experiment: a variant whose config equals one of
  // them reuses it, so experiments run into one directory share their common runs.
  std::vector<std::string> finished;
  for (const auto& entry : fs::directory_iterator(fs::path(o.out_dir) / "runs"))
    if (entry.is_directory() && fs::exists(entry.path() / "ablation.done")) finished.push_back(entry.path().string());
  std::sort(finished.begin(), finished.end());

  std::vector<std::pair<Job, Config>> all;
  const std::string exe = quote(o.executable);
  const std::string runtime =
      " --threads " + std::to_string(threads) + (o.device.empty() ? "" : " --device " + quote(o.device));
  // Plans one run: its directory (a finished run of the same config is reused), and the
  // command that trains and evaluates it, or only adds the evaluations it lacks; returns
  // false when nothing is left to do.
  auto plan = [&](const Variant& variant, int64_t seed, const std::vector<std::string>& extra, Job& job) {
    job.variant = variant.name.empty() ? "base" : variant.name;
    job.seed = seed;
    job.dir = (fs::path(o.out_dir) / "runs" / (slug(variant.name) + ".seed" + std::to_string(seed))).string();
    job.log = job.dir + ".log";
    Variant full = variant;
    full.overrides.insert(full.overrides.end(), extra.begin(), extra.end());
    const auto config = variant_config(spec, full, seed);
    if (!fs::exists(job.dir + "/ablation.done"))
      for (const auto& other : finished)
        if (run_started_with(other, config)) {
          job.dir = other, job.log = other + ".log";
          break;
        }
    all.emplace_back(job, config);
    // The test evaluations this experiment asks for; with `missing_only`, those not on disk.
    auto evaluations = [&](bool missing_only) {
      std::string evals;
      for (const auto& eval : make_task(config)->ablation_evals(spec.evaluations)) {
        if (missing_only && evaluation_complete(job.dir, eval)) continue;
        evals += " && " + exe + " " + eval.command + " --run " + quote(job.dir) + runtime + " >> " + quote(job.log) +
                 " 2>&1";
      }
      return evals;
    };
    const bool same = run_started_with(job.dir, config);
    if (fs::exists(job.dir + "/ablation.done") && same) {
      const auto missing = evaluations(true);  // a finished run: only evaluations it lacks
      if (missing.empty()) return false;
      job.command = "true" + missing + " && touch " + quote(job.dir + "/ablation.done");
      return true;
    }
    std::string train = exe + " train";
    if (same) {
      train += " --resume";  // an interrupted run of this very config continues (or restarts)
    } else {                 // new, or made by another config, which is moved aside, never deleted
      train += " --overwrite";
      for (const auto& f : spec.base) train += " " + quote(f);
      for (const auto& s : spec.set) train += " --set " + quote(s);
      for (const auto& s : full.overrides) train += " --set " + quote(s);
      train += " --set train.seed=" + std::to_string(seed);
    }
    train += runtime + " -o " + quote(job.dir);
    // A training stopped by a signal exits 0 without reaching its end: no evaluation then,
    // and the run is not marked done, so the next ablate resumes it.
    const std::string reached_end =
        " && { test -e " + quote(RunPaths(job.dir).trained) + " || { echo " +
        quote("ablate: the training stopped before its end; run ablate again to resume it") + " >> " + quote(job.log) +
        "; false; }; }";
    job.command = train + " > " + quote(job.log) + " 2>&1" + reached_end + evaluations(false) + " && touch " +
                  quote(job.dir + "/ablation.done");
    return true;
  };

  int64_t failed = 0;
  // Runs the planned jobs, `jobs` at a time, with a progress line and an ETA each.
  auto run_jobs = [&](const std::vector<Job>& todo, size_t skipped, size_t total) {
    std::map<pid_t, std::pair<Job, double>> running;
    size_t next = 0, done = 0;
    const double start = now_seconds();
    while (next < todo.size() || !running.empty()) {
      while (next < todo.size() && static_cast<int64_t>(running.size()) < jobs) {
        const auto& job = todo[next++];
        fs::create_directories(fs::path(job.dir).parent_path());
        const pid_t pid = spawn({"/bin/sh", "-c", job.command}, {}, "ablate");
        running[pid] = {job, now_seconds()};
        std::cout << "ablate: [" << (skipped + next) << "/" << total << "] start " << job.variant << " seed "
                  << job.seed << " (log " << job.log << ")" << std::endl;
      }
      const auto child = wait_any("ablate");
      auto it = running.find(child.pid);
      if (it == running.end()) continue;
      const auto [job, began] = it->second;
      running.erase(it);
      ++done;
      const bool ok = child.code == 0;
      if (!ok) ++failed;
      // Runs have finished at this pace so far, `jobs` at a time.
      const double left = (now_seconds() - start) / static_cast<double>(done) * static_cast<double>(todo.size() - done);
      std::cout << "ablate: " << (ok ? "finished " : "FAILED ") << job.variant << " seed " << job.seed << " in "
                << format_duration(now_seconds() - began) << "; " << (todo.size() - done) << " left, ETA "
                << format_duration(left) << std::endl;
      if (!ok) std::cerr << "ablate: run failed, see " << job.log << std::endl;
    }
  };

  std::vector<Job> todo;
  for (const auto& variant : variants)
    for (auto seed : spec.seeds) {
      Job job;
      if (plan(variant, seed, {}, job)) todo.push_back(job);
    }
  const size_t total = all.size(), skipped = total - todo.size();
  std::cout << "ablate: " << variants.size() << " variants x " << spec.seeds.size() << " seeds = " << total << " runs; "
            << skipped << " finished already, " << todo.size() << " to run, " << jobs << " at a time, " << threads
            << " threads each" << std::endl;
  run_jobs(todo, skipped, total);

  // Fine-tunes, once the runs they start from have finished: each seed from its own run.
  const auto finetunes = finetune_variants(spec);
  if (!finetunes.empty()) {
    const auto from = spec.finetune[0].from;
    std::vector<Job> more;
    const size_t before = all.size();
    for (const auto& variant : finetunes)
      for (auto seed : spec.seeds) {
        const auto source =
            std::find_if(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(before),
                         [&](const auto& entry) { return entry.first.variant == from && entry.first.seed == seed; });
        if (source == all.begin() + static_cast<std::ptrdiff_t>(before) ||
            !fs::exists(source->first.dir + "/ablation.done")) {
          std::cerr << "ablate: " << variant.name << " seed " << seed << " not run: its source run (" << from
                    << " seed " << seed << ") did not finish" << std::endl;
          ++failed;
          continue;
        }
        Job job;
        if (plan(variant, seed, {"train.init_from=" + source->first.dir}, job)) more.push_back(job);
      }
    const size_t added = all.size() - before;
    std::cout << "ablate: " << finetunes.size() << " fine-tunes of " << from << " x " << spec.seeds.size()
              << " seeds = " << added << " runs; " << added - more.size() << " finished already, " << more.size()
              << " to run" << std::endl;
    run_jobs(more, added - more.size(), added);
  }

  std::vector<RunResult> results;
  for (const auto& [job, config] : all) {
    if (!fs::exists(job.dir + "/ablation.done")) continue;
    auto r = read_run_result(job.dir, config, spec.evaluations);
    r.variant = job.variant;
    r.seed = job.seed;
    if (!r.items_error.empty())
      std::cerr << "ablate: warning: no paired test uses " << job.variant << " seed " << job.seed << ": "
                << r.items_error << std::endl;
    results.push_back(std::move(r));
  }
  write_ablation_results(spec, results, o.out_dir, "ropelab ablate " + spec.path + " -o " + o.out_dir);
  return failed;
}

void write_ablation_results(const ExperimentSpec& spec, const std::vector<RunResult>& results,
                            const std::string& out_dir, const std::string& command) {
  // Every run's columns (a rotary run's scaled evaluations are its own); order: by name,
  // numbers by value (test_ppl@256 before @1024).
  std::vector<std::string> metrics;
  {
    std::set<std::string> names;
    for (const auto& r : results)
      for (const auto& [name, value] : r.metrics) names.insert(name);
    metrics.assign(names.begin(), names.end());
  }
  std::stable_sort(metrics.begin(), metrics.end(), [](const std::string& a, const std::string& b) {
    const auto pa = a.find('@'), pb = b.find('@');
    if (pa == std::string::npos || pb == std::string::npos || a.compare(0, pa, b, 0, pb) != 0) return a < b;
    return std::atol(a.c_str() + pa + 1) < std::atol(b.c_str() + pb + 1);
  });
  {
    std::ofstream csv(fs::path(out_dir) / "results.csv");
    csv << "variant,seed";
    for (const auto& m : metrics) csv << "," << m;
    csv << "\n";
    csv.precision(10);
    for (const auto& r : results) {
      csv << "\"" << r.variant << "\"," << r.seed;
      for (const auto& m : metrics) {
        csv << ",";
        if (r.metrics.count(m)) csv << r.metrics.at(m);  // empty: not evaluated for this run
      }
      csv << "\n";
    }
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
    std::ofstream csv(fs::path(out_dir) / "significance.csv");
    csv << "variant,baseline_variant,column,seed,baseline,score,p_value,note\n";
    csv.precision(10);
    for (const auto& c : cells) {
      csv << '"' << c.variant << "\",\"" << order[0] << "\"," << c.column << ',' << c.seed << ',';
      if (c.missing.empty())
        csv << c.baseline << ',' << c.score << ',' << c.p_value << ",\n";
      else
        csv << ",,,\"" << c.missing << "\"\n";
    }
  }
  std::ofstream md(fs::path(out_dir) / "results.md");
  md << "# " << spec.path << "\n\n`" << command
     << "`\n\nMean ± sample standard deviation over seeds (n = seeds; a single seed has no sd).\n\n";
  md << "| variant | n |";
  for (const auto& m : metrics) md << " " << m << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < metrics.size(); ++i) md << "---|";
  md << "\n";
  std::vector<Series> curves;
  for (const auto& variant : order) {
    std::vector<const RunResult*> runs;
    for (const auto& r : results)
      if (r.variant == variant) runs.push_back(&r);
    md << "| " << variant << " | " << runs.size() << " |";
    for (const auto& m : metrics) {
      std::vector<double> values;  // the runs that have this column
      for (auto* r : runs)
        if (r->metrics.count(m)) values.push_back(r->metrics.at(m));
      if (values.empty()) {
        md << " - |";
        continue;
      }
      const auto spread = mean_sd(values);
      char cell[64];
      if (values.size() > 1)
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f ± %.0f" : " %.3f ± %.3f", spread.mean, spread.sd);
      else  // one seed: no spread to report
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f" : " %.3f", spread.mean);
      md << cell << (pooled_significant(variant, m) ? " * |" : " |");
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
  PlotOptions plot;
  plot.title = spec.path + ": validation loss";
  plot.x_label = "step";
  plot.y_label = "validation loss (mean ± sd over seeds)";
  plot.caption = command;
  write_line_plot((fs::path(out_dir) / "valid_curves.svg").string(), curves, plot);
  write_extrapolation_plots(order, results, metrics, out_dir, spec.path, command);
  write_positions_plot(order, results, (fs::path(out_dir) / "positions.svg").string(), spec.path, command);
  write_passkey_plot(order, results, metrics, (fs::path(out_dir) / "passkey.svg").string(), spec.path, command);
}

}  // namespace ropelab
