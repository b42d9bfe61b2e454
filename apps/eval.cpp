// ropelab eval: a split scored by the run's task; the report goes to stdout and RUN/.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ropelab/report/plot.h"
#include "run_args.h"

namespace ropelab::apps {

void add_eval(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("eval", "evaluate a split: BLEU, chrF and perplexity, or LM perplexity");
  struct Args : RunArgs {
    std::string split = "test";
    int64_t context = 0, stride = 0;
    bool per_position = false;
  };
  auto a = std::make_shared<Args>();
  a->add_to(*cmd);
  cmd->add_option("--split", a->split, "test | valid | a file in the run's data format")->capture_default_str();
  cmd->add_option("--context", a->context,
                  "language models: evaluate in chunks of N tokens (default: the run's data.context)")
      ->check(positive());
  cmd->add_option("--stride", a->stride,
                  "language models: sliding windows of --context tokens every N tokens, each scoring its last N "
                  "(default: N = the context, non-overlapping)")
      ->check(positive());
  cmd->add_flag("--per-position", a->per_position,
                "language models: also the mean loss at each position of the window (.positions.csv and .svg)");
  cmd->callback([a] {
    torch::Device device(torch::kCPU);
    auto run = a->open(&device);
    std::string path = a->split;
    if (a->split == "test") path = run.config.data.test();
    if (a->split == "valid") path = run.config.data.valid();
    if (path.empty()) throw std::runtime_error(a->run_dir + "/config.yaml: data." + a->split + " is not set");
    const auto name = std::filesystem::path(a->split).filename().string();
    if ((a->context > 0 || a->stride > 0 || a->per_position) && !run.task->takes_eval_context())
      throw std::runtime_error("--context, --stride and --per-position measure language models; " + a->run_dir +
                               " is a " + run.task->model_noun());
    EvalProtocol protocol;
    protocol.context = a->context;
    protocol.stride = a->stride;
    protocol.per_position = a->per_position;
    const auto report = run.task->evaluate(*run.model, *run.tokenizer, name, path,
                                           a->search.request(run.config.decode, false), protocol, device);
    const std::filesystem::path dir(a->run_dir);
    // reports of another precision sit beside the fp32 ones, never over them
    const std::string precision = a->precision_suffix();
    const std::string tag = report.file_tag + evaluation_tag(a->overrides) + precision;
    std::string wrote;
    if (!report.hypotheses.empty()) {
      const auto hyp_path = (dir / ("hyp." + name + precision + ".txt")).string();
      std::ofstream hyp(hyp_path);
      for (const auto& h : report.hypotheses) hyp << h << '\n';
      wrote = hyp_path + " and ";
    }
    if (!report.items.empty()) {
      const auto items_path = (dir / ("eval." + tag + ".items.tsv")).string();
      write_item_table(items_path, report.item_columns, report.items);
      wrote += items_path + " and ";
    }
    if (!report.position_loss.empty()) {
      const auto stem = (dir / ("eval." + tag + ".positions")).string();
      std::vector<std::vector<double>> rows;
      Series curve;
      curve.name = a->run_dir;
      for (size_t j = 0; j < report.position_loss.size(); ++j) {
        rows.push_back({static_cast<double>(j), report.position_loss[j], report.position_tokens[j]});
        if (report.position_tokens[j] > 0)
          curve.x.push_back(static_cast<double>(j)), curve.y.push_back(report.position_loss[j]);
      }
      write_item_table(stem + ".csv", {"position", "mean_loss", "tokens"}, rows);
      PlotOptions plot;
      plot.title = a->run_dir + ": loss by position (" + report.file_tag + ")";
      plot.x_label = "position in the window";
      plot.y_label = "mean loss (nats per token)";
      plot.caption = "ropelab eval --run " + a->run_dir + " --split " + a->split +
                     (a->context > 0 ? " --context " + std::to_string(a->context) : "") +
                     (a->stride > 0 ? " --stride " + std::to_string(a->stride) : "") + " --per-position";
      write_line_plot(stem + ".svg", {curve}, plot);
      wrote += stem + ".csv and .svg and ";
    }
    nlohmann::ordered_json json = {
        {"split", a->split}, {"checkpoint", a->checkpoint}, {"precision", to_string(a->precision)}};
    if (!a->overrides.empty()) json["set"] = a->overrides;
    json.update(report.fields);
    const auto json_path = (dir / ("eval." + tag + ".json")).string();
    std::ofstream(json_path) << json.dump() << '\n';
    std::cout << report.summary << "\nwrote " << wrote << json_path << std::endl;
    for (const auto& w : report.warnings) std::cerr << "ropelab eval: warning: " << w << std::endl;
  });
}

}  // namespace ropelab::apps
