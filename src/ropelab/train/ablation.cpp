#include "ropelab/train/ablation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

#include "ropelab/run/metrics_log.h"
#include "ropelab/run/run.h"
#include "ropelab/task/task.h"
#include "ropelab/train/plot.h"
#include "ropelab/util/runtime.h"
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

}  // namespace

RunResult read_run_result(const std::string& run_dir, const Config& config, const std::vector<int64_t>& contexts) {
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
  for (const auto& eval : make_task(config)->ablation_evals(contexts))
    for (const auto& [key, column] : eval.columns) r.metrics[column] = json_number(run_dir + "/" + eval.file, key);
  r.metrics["train_s"] = elapsed;
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

  std::vector<Job> todo;
  std::vector<std::pair<Job, Config>> all;
  for (const auto& variant : variants)
    for (auto seed : spec.seeds) {
      Job job;
      job.variant = variant.name.empty() ? "base" : variant.name;
      job.seed = seed;
      job.dir = (fs::path(o.out_dir) / "runs" / (slug(variant.name) + ".seed" + std::to_string(seed))).string();
      job.log = job.dir + ".log";
      const auto config = variant_config(spec, variant, seed);
      if (!fs::exists(job.dir + "/ablation.done"))
        for (const auto& other : finished)
          if (run_started_with(other, config)) {
            job.dir = other, job.log = other + ".log";
            break;
          }
      all.emplace_back(job, config);
      const std::string exe = quote(o.executable);
      const std::string runtime =
          " --threads " + std::to_string(threads) + (o.device.empty() ? "" : " --device " + quote(o.device));
      // The test evaluations this experiment asks for; with `missing_only`, those not on disk.
      auto evaluations = [&](bool missing_only) {
        std::string evals;
        auto add = [&](const std::string& file, const std::string& args) {
          if (missing_only && fs::exists(job.dir + "/" + file)) return;
          evals += " && " + exe + " eval --run " + quote(job.dir) + " --split test" + args + runtime + " >> " +
                   quote(job.log) + " 2>&1";
        };
        for (const auto& eval : make_task(config)->ablation_evals(spec.eval_contexts)) add(eval.file, eval.args);
        return evals;
      };
      const bool same = run_started_with(job.dir, config);
      if (fs::exists(job.dir + "/ablation.done") && same) {
        const auto missing = evaluations(true);  // a finished run: only evaluations it lacks
        if (missing.empty()) continue;
        job.command = "true" + missing + " && touch " + quote(job.dir + "/ablation.done");
        todo.push_back(job);
        continue;
      }
      std::string train = exe + " train";
      if (same) {
        train += " --resume";  // an interrupted run of this very config continues (or restarts)
      } else {                 // new, or made by another config, which is moved aside, never deleted
        train += " --overwrite";
        for (const auto& f : spec.base) train += " " + quote(f);
        for (const auto& s : spec.set) train += " --set " + quote(s);
        for (const auto& s : variant.overrides) train += " --set " + quote(s);
        train += " --set train.seed=" + std::to_string(seed);
      }
      train += runtime + " -o " + quote(job.dir);
      const std::string command = train + " > " + quote(job.log) + " 2>&1" + evaluations(false);
      job.command = command + " && touch " + quote(job.dir + "/ablation.done");
      todo.push_back(job);
    }

  const size_t total = all.size(), skipped = total - todo.size();
  std::cout << "ablate: " << variants.size() << " variants x " << spec.seeds.size() << " seeds = " << total << " runs; "
            << skipped << " finished already, " << todo.size() << " to run, " << jobs << " at a time, " << threads
            << " threads each" << std::endl;
  std::map<pid_t, std::pair<Job, double>> running;
  size_t next = 0, done = 0;
  int64_t failed = 0;
  const double start = now_seconds();
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<int64_t>(running.size()) < jobs) {
      const auto& job = todo[next++];
      fs::create_directories(fs::path(job.dir).parent_path());
      const pid_t pid = spawn({"/bin/sh", "-c", job.command}, {}, "ablate");
      running[pid] = {job, now_seconds()};
      std::cout << "ablate: [" << (skipped + next) << "/" << total << "] start " << job.variant << " seed " << job.seed
                << " (log " << job.log << ")" << std::endl;
    }
    const auto child = wait_any("ablate");
    const pid_t pid = child.pid;
    auto it = running.find(pid);
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

  std::vector<RunResult> results;
  for (const auto& [job, config] : all) {
    if (!fs::exists(job.dir + "/ablation.done")) continue;
    auto r = read_run_result(job.dir, config, spec.eval_contexts);
    r.variant = job.variant;
    r.seed = job.seed;
    results.push_back(std::move(r));
  }
  write_ablation_results(spec, results, o.out_dir, "ropelab ablate " + spec.path + " -o " + o.out_dir);
  return failed;
}

void write_ablation_results(const ExperimentSpec& spec, const std::vector<RunResult>& results,
                            const std::string& out_dir, const std::string& command) {
  std::vector<std::string> metrics;  // column order: by name, numbers by value (test_ppl@256 before @1024)
  if (!results.empty())
    for (const auto& [name, value] : results.front().metrics) metrics.push_back(name);
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
      for (const auto& m : metrics) csv << "," << r.metrics.at(m);
      csv << "\n";
    }
  }
  std::vector<std::string> order;  // variants in run order
  for (const auto& r : results)
    if (std::find(order.begin(), order.end(), r.variant) == order.end()) order.push_back(r.variant);
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
      double mean = 0, sq = 0;
      for (auto* r : runs) mean += r->metrics.at(m);
      mean /= static_cast<double>(runs.size());
      for (auto* r : runs) sq += std::pow(r->metrics.at(m) - mean, 2);
      char cell[64];
      if (runs.size() > 1) {
        const double sd = std::sqrt(sq / static_cast<double>(runs.size() - 1));
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f ± %.0f |" : " %.3f ± %.3f |", mean, sd);
      } else {  // one seed: no spread to report
        std::snprintf(cell, sizeof cell, m == "train_s" ? " %.0f |" : " %.3f |", mean);
      }
      md << cell;
    }
    md << "\n";
    Series s;  // mean validation loss per step over the seeds that have it, ± their sample sd
    s.name = variant;
    std::map<double, std::vector<double>> by_step;
    for (auto* r : runs)
      for (const auto& [step, loss] : r->curve) by_step[step].push_back(loss);
    for (const auto& [step, losses] : by_step) {
      double mean = 0, sq = 0;
      for (double l : losses) mean += l;
      mean /= static_cast<double>(losses.size());
      for (double l : losses) sq += (l - mean) * (l - mean);
      s.x.push_back(step), s.y.push_back(mean);
      s.spread.push_back(losses.size() > 1 ? std::sqrt(sq / static_cast<double>(losses.size() - 1))
                                           : std::numeric_limits<double>::quiet_NaN());
    }
    curves.push_back(std::move(s));
  }
  PlotOptions plot;
  plot.title = spec.path + ": validation loss";
  plot.x_label = "step";
  plot.y_label = "validation loss (mean ± sd over seeds)";
  plot.caption = command;
  write_line_plot((fs::path(out_dir) / "valid_curves.svg").string(), curves, plot);
}

}  // namespace ropelab
