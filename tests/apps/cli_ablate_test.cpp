// ropelab ablate: the grid, skipped and reused runs, added evaluations, passkey columns, bad experiment files.
#include "cli_util.h"

using namespace ropelab::cli_test;

// ablate runs grid x seeds, writes results, skips finished runs, rejects bad files.
namespace {

const std::string demo = std::string(ROPELAB_SOURCE_DIR) + "/experiments/demo_tiny.yaml";
const std::string pairs = std::string(ROPELAB_SOURCE_DIR) + "/data/demo/pairs.tsv";

/// The tables of a finished translator grid (two encoders x two seeds): results.md with mean
/// ± sd, results.csv a row a run, and paired tests of rotary against sinusoidal.
void translator_grid_tables(const std::string& out) {
  const std::string table = read_text(out + "/results.md");
  EXPECT_NE(table.find("| model.position.type=sinusoidal | 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("±", table.find("|---")), std::string::npos) << table;  // two seeds: mean ± sd
  EXPECT_NE(table.find("| model.position.type=rotary | 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("test_bleu"), std::string::npos) << table;
  EXPECT_TRUE(std::filesystem::exists(out + "/valid_curves.svg"));
  std::ifstream csv(out + "/results.csv");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 5);  // header + 4 runs
  EXPECT_EQ(read_text(out + "/results.csv").rfind("variant,seed,run,device,", 0), 0u);
  EXPECT_NE(read_text(out + "/results.csv")
                .find("\n\"model.position.type=rotary\",2,\"runs/model.position.type=rotary.seed2\",\"cpu\","),
            std::string::npos)
      << read_text(out + "/results.csv");
  // paired bootstrap tests of rotary against sinusoidal: per seed and pooled, for BLEU, chrF and TER
  EXPECT_NE(table.find("## Paired tests against model.position.type=sinusoidal"), std::string::npos) << table;
  EXPECT_NE(table.find("| variant | column | seed 1 | seed 2 | pooled |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_bleu |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_chrf |"), std::string::npos) << table;
  EXPECT_NE(table.find("| model.position.type=rotary | test_ter |"), std::string::npos) << table;
  EXPECT_NE(table.find(" (p = ", table.find("## Paired")), std::string::npos) << table;
  std::ifstream significance(out + "/significance.csv");
  std::vector<std::string> tests;
  for (std::string line; std::getline(significance, line);) tests.push_back(line);
  ASSERT_EQ(tests.size(), 10u);  // header + 3 columns (BLEU, chrF, TER) x (2 seeds + pooled)
  EXPECT_EQ(tests[0],
            "variant,baseline_variant,column,test,seeds,baseline,score,difference,ci95_low,ci95_high,p_value,p_holm,"
            "note");
  EXPECT_EQ(tests[3].rfind("\"model.position.type=rotary\",\"model.position.type=sinusoidal\",test_bleu,"
                           "paired_bootstrap,\"pooled\",",
                           0),
            0u)
      << tests[3];
}

/// A finished run is skipped; one whose report lacks a column, or that stopped during its
/// evaluations, is evaluated again without training; a translator refuses LM protocols.
void finished_runs_skipped_or_evaluated_again(const std::string& exp, const std::string& out) {
  auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("4 finished already, 0 to run"), std::string::npos) << r.output;
  // a report without a column this version reads (here TER) is evaluated again, without training
  const auto run_dir = out + "/runs/model.position.type=rotary.seed2";
  auto report = nlohmann::json::parse(read_text(run_dir + "/eval.test.json"));
  report.erase("ter");
  std::ofstream(run_dir + "/eval.test.json") << report.dump() << "\n";
  const auto trained = std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("3 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(nlohmann::json::parse(read_text(run_dir + "/eval.test.json")).contains("ter"));
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  // stopped after its training, during its evaluations: only the evaluation it lacks runs,
  // the training's log is kept; stopped after the last one, before the marker: marked
  const auto log = read_text(run_dir + ".log");
  ASSERT_NE(log.find("step 4/4"), std::string::npos) << log;
  std::filesystem::remove(run_dir + "/ablation.done");
  std::filesystem::remove(run_dir + "/eval.test.json");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("3 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.json"));
  EXPECT_EQ(std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt"), trained);
  EXPECT_EQ(read_text(run_dir + ".log").rfind(log, 0), 0u);
  std::filesystem::remove(run_dir + "/ablation.done");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  EXPECT_NE(r.output.find("4 finished already, 0 to run"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/ablation.done"));
  r = run("eval --run " + run_dir + " --stride 4");  // a language-model protocol on a translator
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output,
            "ropelab: error: --context, --stride, --per-position and --context-gain measure language "
            "models; " +
                run_dir + " is a translator\n");
}

}  // namespace

TEST(Cli, AblateRunsTheGridWritesResultsAndSkipsFinishedRuns) {
  const auto root = fresh_dir("ablate");
  const auto exp = tiny_translator_experiment(root, "train.steps=4, train.valid_every=2",
                                              "grid:\n  model.position.type: [sinusoidal, rotary]\nseeds: [1, 2]\n");
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --jobs 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 variants x 2 seeds = 4 runs"), std::string::npos) << r.output;
  ASSERT_NO_FATAL_FAILURE(translator_grid_tables(out));
  ASSERT_NO_FATAL_FAILURE(finished_runs_skipped_or_evaluated_again(exp, out));
  std::filesystem::remove_all(root);
}

// Experiment files that stop before any run exit 2, with one line naming the file and key.
TEST(Cli, AblateRefusesBadExperimentFilesInOneLine) {
  const auto root = fresh_dir("ablate_bad");
  const auto exp = (root / "exp.yaml").string(), out = (root / "out").string();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"grid:\n  model.position.type: [sinusoidal, rotray]\n", "variant model.position.type=rotray"},
      {"eval_strides: [4]\n", "eval_strides applies to language models (task lm)"},
      {"eval_strides: [0]\n", "eval_strides: 0 must be positive"},
      {"eval_scaling: [yarm]\n", "eval_scaling: yarm is not a RoPE scaling (linear, ntk, dynamic_ntk, yarn)"},
      {"eval_scaling: [yarn]\neval_scaling_factors: [1]\n",
       "eval_scaling_factors: 1 must exceed 1 (a factor of 1 is the plain evaluation)"},
      {"eval_scaling: [dynamic_ntk]\neval_scaling_factors: [4]\n",
       "eval_scaling_factors needs a static scaling in eval_scaling (linear, ntk or yarn)"},
      {"eval_context: [128]\n",
       "unknown key eval_context (expected base, set, grid, seeds, eval_contexts, eval_strides, eval_scaling, "
       "eval_scaling_factors, eval_window_sinks, eval_context_gain, eval_tokens, passkey, retrieval, finetune, "
       "baseline, pairs)"},
      {"eval_window_sinks: [4]\n", "eval_window_sinks applies to language models (task lm)"},
      {"eval_window_sinks: [-1]\n", "eval_window_sinks: -1 must be >= 0 (attention sinks)"},
      {"grid:\n  model.position.type: [sinusoidal, rotary]\nfinetune:\n  from: model.position.type=rotary\n  steps: "
       "3\n",
       "finetune: unknown key steps (expected from, set, grid)"},
      {"eval_tokens: 4096\n", "eval_tokens applies to language models (task lm)"},
      {"eval_tokens: [1, 2]\n", "eval_tokens must be one number"},
      {"eval_tokens: 0\n", "eval_tokens: 0 must be positive"},
      {"passkey:\n  lengths: [120]\n", "passkey applies to language models (task lm)"},
      {"passkey:\n  lengths: [50]\n", "passkey.lengths: 50 is below the "},
      {"passkey:\n  lengths: [120]\n  depths: [0, 1.5]\n", "passkey.depths: 1.5 is not between 0 and 1"},
      {"passkey:\n  lengths: [120]\n  documents: [2, 3]\n", "passkey.documents must be one number"},
      {"passkey:\n  depths: [0]\n", "passkey.lengths (the prompts' characters) is required"},
      {"passkey:\n  lengths: [120]\n  size: 3\n",
       "passkey: unknown key size (expected lengths, depths, documents, documents_per_seed)"},
      {"grid:\n  model.position.type: [sinusoidal, rotary]\nfinetune:\n  from: rotray\n",
       "finetune.from: rotray is not a variant of the grid (model.position.type=sinusoidal, "
       "model.position.type=rotary)"}};
  for (const auto& [tail, message] : bad) {
    std::ofstream(exp) << "base: " << demo << "\nset: [data.test=" << pairs << "]\n" << tail;
    const auto r = run("ablate " + exp + " -o " + out);
    EXPECT_EQ(r.code, 2) << tail;
    EXPECT_NE(r.output.find(exp + ": " + message), std::string::npos) << r.output;
  }
  std::filesystem::remove_all(root);
}

// The run that fine-tunes start from is marked as such when it finishes, in the grid's own
// pass (an ablate killed before the fine-tunes leaves it marked for scripts/run_records.sh).
TEST(Cli, AblateMarksTheRunFineTunesStartFromWhenItFinishes) {
  const auto root = fresh_dir("ablate_finetune_source");
  const auto exp = tiny_finetune_experiment(root);
  const auto out = (root / "out").string();
  const auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 fine-tunes of model.position.type=rotary x 1 seeds = 1 runs"), std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/runs/model.position.type=rotary.seed1/finetune.source"));
  EXPECT_FALSE(std::filesystem::exists(out + "/runs/model.position.type=sinusoidal.seed1/finetune.source"));
  EXPECT_FALSE(std::filesystem::exists(out + "/runs/finetune.seed1/finetune.source"));
  EXPECT_TRUE(std::filesystem::exists(out + "/runs/finetune.seed1/ablation.done"));
  std::filesystem::remove_all(root);
}

// --seeds runs some of the experiment's seeds; a later run without it adds the others to the
// same directory and keeps the finished ones; seeds the file does not list stop it. OUT/runs
// may be a link to another disk: results.csv names each run relative to OUT all the same.
TEST(Cli, AblateRunsSomeSeedsFirstAndTheRestLater) {
  const auto root = fresh_dir("ablate_seeds");
  const auto exp =
      tiny_translator_experiment(root, "train.steps=2", "grid:\n  model.position.type: [rotary]\nseeds: [1, 2, 3]\n");
  const auto out = (root / "out").string();
  std::filesystem::create_directories(root / "other_disk");
  std::filesystem::create_directories(out);
  std::filesystem::create_directory_symlink(root / "other_disk", out + "/runs");
  auto r = run("ablate " + exp + " -o " + out + " --threads 1 --seeds 3,1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 variants x 2 seeds = 2 runs; 0 finished already, 2 to run"), std::string::npos)
      << r.output;
  const auto seed = [&](int s) { return out + "/runs/model.position.type=rotary.seed" + std::to_string(s); };
  EXPECT_TRUE(std::filesystem::exists(seed(1) + "/checkpoint_last.pt"));
  EXPECT_FALSE(std::filesystem::exists(seed(2)));
  EXPECT_TRUE(std::filesystem::exists(seed(3) + "/checkpoint_last.pt"));
  EXPECT_NE(read_text(out + "/results.md").find("| model.position.type=rotary | 2 |"), std::string::npos);
  const auto trained = std::filesystem::last_write_time(seed(3) + "/checkpoint_last.pt");
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 variants x 3 seeds = 3 runs; 2 finished already, 1 to run"), std::string::npos)
      << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(seed(3) + "/checkpoint_last.pt"), trained);
  EXPECT_NE(read_text(out + "/results.md").find("| model.position.type=rotary | 3 |"), std::string::npos);
  EXPECT_NE(read_text(out + "/results.csv")
                .find("\n\"model.position.type=rotary\",2,\"runs/model.position.type=rotary.seed2\","),
            std::string::npos)
      << read_text(out + "/results.csv");
  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"4", "seed 4 is not among its seeds (1, 2, 3)"}, {"2,2", "seed 2 selected twice"}}) {
    r = run("ablate " + exp + " -o " + out + " --seeds " + flag);
    EXPECT_EQ(r.code, 2) << flag;
    EXPECT_EQ(r.output, "ropelab: config error: --seeds: " + exp + ": " + message + "\n");
  }
  std::filesystem::remove_all(root);
}

namespace {

/// A language-model ablation in ROOT/out on a two-line text, its experiment file rewritten
/// and run again step by step: the run of rotary seed 1 is run_dir.
struct LmAblation {
  explicit LmAblation(const std::string& tag)
      : root(fresh_dir(tag)),
        text(write_temp((root / "text.txt").string(), "the cat sat on the mat\nthe dog sat on the log\n")),
        exp((root / "exp.yaml").string()),
        out((root / "out").string()),
        run_dir(out + "/runs/model.position.type=rotary.seed1") {}
  ~LmAblation() { std::filesystem::remove_all(root); }

  void write(const std::string& steps, const std::string& contexts,
             const std::string& grid = "  model.position.type: [rotary]\n", const std::string& strides = "",
             const std::string& scaling = "", const std::string& more = "") const {
    std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                       << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=8, data.train=" << text
                       << ", data.valid=" << text << ", data.test=" << text << ", train.steps=" << steps
                       << ", train.valid_every=2, model.d_model=16, model.heads=2, model.d_ff=16,"
                          " model.encoder_layers=1, model.decoder_layers=1]\n"
                          "grid:\n"
                       << grid << "eval_contexts: [" << contexts << "]\n"
                       << (strides.empty() ? "" : "eval_strides: [" + strides + "]\n")
                       << (scaling.empty() ? "" : "eval_scaling: [" + scaling + "]\n") << more;
  }
  Result ablate() const { return run("ablate " + exp + " -o " + out + " --threads 1"); }
  /// When the rotary run's last checkpoint was written: evaluations added later leave it.
  std::filesystem::file_time_type trained() const {
    return std::filesystem::last_write_time(run_dir + "/checkpoint_last.pt");
  }

  std::filesystem::path root;
  std::string text, exp, out, run_dir;
  std::filesystem::file_time_type trained_at;  // after the first ablate
};

/// Each window's NLL, tokens and unit, for paired tests between runs: together, the reported perplexity.
void window_items(const LmAblation& a) {
  const auto& run_dir = a.run_dir;
  {  // each window's NLL, tokens and unit, for paired tests between runs: together, the reported perplexity
    std::ifstream items(run_dir + "/eval.test.ctx8.items.tsv");
    std::string line;
    std::getline(items, line);
    EXPECT_EQ(line, "nll\ttokens\tdocument");
    double nll = 0, tokens = 0;
    int windows = 0;
    for (double n, t, d; items >> n >> t >> d; ++windows) {
      nll += n, tokens += t;
      EXPECT_EQ(d, windows);  // a stream: each window its own block
    }
    const auto report = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx8.json"));
    EXPECT_EQ(windows, report.at("chunks").get<int>());
    EXPECT_EQ(tokens, report.at("tokens").get<double>());
    EXPECT_NEAR(std::exp(nll / tokens), report.at("perplexity").get<double>(),
                1e-5 * report.at("perplexity").get<double>());
  }
}

/// An unreadable items file: the run's paired tests are named as missing, not dropped silently.
void unreadable_items(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  {  // an unreadable items file: the run's paired tests are named as missing, not dropped silently
    const auto items_path = run_dir + "/eval.test.ctx8.items.tsv";
    const auto kept = read_text(items_path);
    std::ofstream(items_path) << "nll\ttokens\n1.5\tx\n";
    auto r = a.ablate();
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("ablate: warning: no paired test uses model.position.type=rotary seed 1: " + items_path +
                            ":2: 'x' is not a finite number"),
              std::string::npos)
        << r.output;
    EXPECT_NE(read_text(out + "/results.md").find("No paired test uses model.position.type=rotary seed 1: "),
              std::string::npos);
    std::ofstream(items_path) << kept;
  }
}

/// The same runs with one more evaluation context: evaluated, not trained.
void added_context(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  a.write("3", "8, 16");  // the same runs, one more evaluation: no training
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("0 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_EQ(a.trained(), a.trained_at);
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx16.json"));
  EXPECT_NE(read_text(out + "/results.md").find("test_ppl@8 | test_ppl@16 |"), std::string::npos)
      << read_text(out + "/results.md");  // contexts in numeric order
  const auto one_seed = read_text(out + "/results.md");
  EXPECT_EQ(one_seed.find("±", one_seed.find("|---")), std::string::npos) << one_seed;  // one seed: no spread shown
  EXPECT_TRUE(std::filesystem::exists(out + "/extrapolation.svg"));  // two contexts: perplexity against length
}

/// Sliding windows at both contexts: evaluations only, a column per (context, stride).
void sliding_windows(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  // sliding windows at both contexts: evaluations only, a column per (context, stride)
  a.write("3", "8, 16", "  model.position.type: [rotary]\n", "4, 16");
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("0 finished already, 1 to run"), std::string::npos) << r.output;
  EXPECT_EQ(a.trained(), a.trained_at);
  EXPECT_NE(read_text(out + "/results.md").find("| test_ppl@8 | test_ppl@8/4 | test_ppl@16 | test_ppl@16/4 |"),
            std::string::npos)
      << read_text(out + "/results.md");  // stride 16 is no sliding window at 8 or 16
  const auto sliding = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.stride4.json"));
  EXPECT_EQ(sliding.at("stride").get<int>(), 4);
  EXPECT_EQ(sliding.at("tokens"), nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.json")).at("tokens"));
  EXPECT_NE(read_text(out + "/extrapolation.stride4.svg").find("windows sliding by 4"), std::string::npos);
  EXPECT_EQ(read_text(out + "/extrapolation.svg").find("sliding"), std::string::npos);
}

/// Windowed attention past the training context, alone and with sinks: evaluations only.
void windowed_attention(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  // Windowed attention at evaluation past the training context: a window of the 8 trained
  // keys, alone and with 2 sinks; evaluations only
  a.write("3", "8, 16", "  model.position.type: [rotary]\n", "", "", "eval_window_sinks: [0, 2]\n");
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(a.trained(), a.trained_at);
  EXPECT_NE(read_text(out + "/results.md").find("| test_ppl@16 | test_ppl@16#w8 | test_ppl@16#w8s2 |"),
            std::string::npos)
      << read_text(out + "/results.md");
  for (const char* sinks : {"0", "2"}) {
    const auto windowed = nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.set_8_" + sinks + ".json"));
    EXPECT_EQ(windowed.at("tokens"), nlohmann::json::parse(read_text(run_dir + "/eval.test.ctx16.json")).at("tokens"));
  }
  EXPECT_NE(read_text(out + "/extrapolation.svg").find(">rotary + w8s2<"), std::string::npos);
}

/// RoPE scaling at evaluation: the rotary run evaluated again past its training context.
void rope_scaling(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  // RoPE scaling at evaluation: the rotary run evaluated again (not retrained) past its
  // training context, at factor 16 / 8 = 2, and at the fixed factor 4 at every context; an
  // ALiBi variant has no such columns
  a.write("3", "8, 16", "  model.position.type: [rotary, alibi]\n", "", "yarn, linear", "eval_scaling_factors: [4]\n");
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(a.trained(), a.trained_at);
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx16.set_yarn_2.json"));
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/eval.test.ctx8.set_yarn_1.json"));  // no scaling at 8 itself
  const auto scaled = read_text(out + "/results.md");
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx8.set_yarn_4.json"));
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/eval.test.ctx16.set_linear_4.json"));
  EXPECT_NE(scaled.find("| test_ppl@8 | test_ppl@8+linear4x | test_ppl@8+yarn4x | test_ppl@16 | test_ppl@16+linear | "
                        "test_ppl@16+linear4x | test_ppl@16+yarn | test_ppl@16+yarn4x |"),
            std::string::npos)
      << scaled;
  EXPECT_NE(scaled.find("| model.position.type=alibi | 1 |"), std::string::npos) << scaled;
  EXPECT_NE(scaled.find(" - | - |"), std::string::npos) << scaled;  // alibi: no scaled columns
  EXPECT_EQ(scaled.find("n/a"), std::string::npos) << scaled;       // and no paired test that cannot apply
  const auto extrapolation = read_text(out + "/extrapolation.svg");
  EXPECT_NE(extrapolation.find(">rotary + yarn<"), std::string::npos) << extrapolation;  // a line per scaling
  EXPECT_NE(extrapolation.find(">rotary + yarn4x<"), std::string::npos) << extrapolation;
  EXPECT_EQ(extrapolation.find(">alibi + yarn<"), std::string::npos) << extrapolation;  // only where it applies
  EXPECT_NE(extrapolation.find("<circle"), std::string::npos);                          // its points marked
  // small multiples: rotary, its scalings and ALiBi in panels of their own
  for (const char* panel : {">rotations<", ">rotations, RoPE scaling at evaluation<", ">logit biases<"})
    EXPECT_NE(extrapolation.find(panel), std::string::npos) << panel;
  EXPECT_NE(extrapolation.find(">trained at 8<"), std::string::npos);
}

/// Fine-tunes of the rotary run at a longer context, from its best checkpoint.
void finetunes(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  // fine-tunes of the rotary run at a longer context, with and without YaRN, from its best checkpoint
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/finetune.source"));  // no fine-tune starts from it yet
  std::ofstream(a.exp, std::ios::app) << "finetune:\n  from: model.position.type=rotary\n"
                                         "  set: [data.context=16, train.steps=2, model.position.scaling.factor=2]\n"
                                         "  grid:\n    model.position.scaling.type: [none, yarn]\n";
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 fine-tunes of model.position.type=rotary x 1 seeds = 2 runs; 0 finished already"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(a.trained(), a.trained_at);  // the source untouched
  const auto yarn_dir = out + "/runs/finetune_model.position.scaling.type=yarn.seed1";
  EXPECT_NE(read_text(yarn_dir + "/config.yaml").find("init_from: " + run_dir), std::string::npos);
  // the source, finished before the fine-tunes were asked for, is marked when they are (its
  // records keep checkpoint_best.pt); the fine-tunes and the other variant's run are not
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/finetune.source"));
  EXPECT_FALSE(std::filesystem::exists(yarn_dir + "/finetune.source"));
  EXPECT_FALSE(std::filesystem::exists(out + "/runs/model.position.type=alibi.seed1/finetune.source"));
  EXPECT_NE(read_text(yarn_dir + ".log").find("init: parameters from " + run_dir + "/checkpoint_best.pt"),
            std::string::npos);
  const auto tuned = read_text(out + "/results.md");
  EXPECT_NE(tuned.find("| finetune:model.position.scaling.type=yarn | 1 |"), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("| finetune:model.position.scaling.type=none | 1 |"), std::string::npos) << tuned;
  r = a.ablate();  // all done: nothing runs again
  EXPECT_NE(r.output.find("= 2 runs; 2 finished already, 0 to run"), std::string::npos) << r.output;
}

/// Another experiment in the same directory: its variant with this config reuses the run.
void reused_run(const LmAblation& a) {
  const auto& out = a.out;
  // another experiment in the same directory: its variant with this config reuses the run
  a.write("3", "8", "  model.attention.type: [softmax]\n  model.position.type: [rotary]\n");
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 finished already, 0 to run"), std::string::npos) << r.output;
  EXPECT_NE(read_text(out + "/results.md").find("| model.attention.type=softmax,model.position.type=rotary | 1 |"),
            std::string::npos)
      << read_text(out + "/results.md");
  EXPECT_NE(read_text(out + "/results.csv")
                .find("\n\"model.attention.type=softmax,model.position.type=rotary\",1,"
                      "\"runs/model.position.type=rotary.seed1\","),  // the run it reused
            std::string::npos)
      << read_text(out + "/results.csv");
}

/// Another config in the same directory: trained again, the old run and its log moved aside.
void retrained_run(const LmAblation& a) {
  const auto &out = a.out, &run_dir = a.run_dir;
  a.write("4", "8");  // another config in the same directory: trained again
  const auto old_log = read_text(run_dir + ".log");
  ASSERT_NE(old_log.find("step 3/3"), std::string::npos) << old_log;
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(read_text(run_dir + "/metrics.jsonl").find("\"step\":4"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/eval.test.ctx16.json"));
  int kept = 0;  // the run of the old config was moved aside, not deleted
  for (const auto& entry : std::filesystem::directory_iterator(out + "/runs"))
    if (entry.path().filename().string().rfind("model.position.type=rotary.seed1.old-", 0) == 0)
      kept += std::filesystem::exists(entry.path() / "eval.test.ctx16.json");
  EXPECT_EQ(kept, 1);
  int logs = 0;  // and so was its log, which the new run's does not continue
  for (const auto& entry : std::filesystem::directory_iterator(out + "/runs"))
    if (const auto name = entry.path().filename().string();
        name.rfind("model.position.type=rotary.seed1.old-", 0) == 0 && entry.path().extension() == ".log") {
      EXPECT_EQ(read_text(entry.path().string()), old_log);
      EXPECT_NE(r.output.find("ablate: the previous log of model.position.type=rotary seed 1 moved to " +
                              entry.path().string()),
                std::string::npos)
          << r.output;
      ++logs;
    }
  EXPECT_EQ(logs, 1);
  EXPECT_EQ(read_text(run_dir + ".log").find("step 3/3"), std::string::npos);
  EXPECT_NE(read_text(run_dir + ".log").find("step 4/4"), std::string::npos);
}

}  // namespace

TEST(Cli, AblateAddsMissingEvaluationsAndRerunsChangedConfigs) {
  LmAblation a("ablate_lm");
  a.write("3", "8");
  auto r = a.ablate();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(a.run_dir + "/eval.test.ctx8.json"));
  EXPECT_TRUE(std::filesystem::exists(a.run_dir + "/eval.test.ctx8.positions.csv"));
  EXPECT_NE(read_text(a.out + "/positions.svg").find("test loss by position in windows of 8"), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(window_items(a));
  ASSERT_NO_FATAL_FAILURE(unreadable_items(a));
  a.trained_at = a.trained();
  ASSERT_NO_FATAL_FAILURE(added_context(a));
  ASSERT_NO_FATAL_FAILURE(sliding_windows(a));
  ASSERT_NO_FATAL_FAILURE(windowed_attention(a));
  ASSERT_NO_FATAL_FAILURE(rope_scaling(a));
  ASSERT_NO_FATAL_FAILURE(finetunes(a));
  ASSERT_NO_FATAL_FAILURE(reused_run(a));
  ASSERT_NO_FATAL_FAILURE(retrained_run(a));
}

namespace {

/// ROOT/exp.yaml: a tiny byte LM at context 32 trained 2 updates on passkey documents, with
/// `set` added to its overrides and `rest` (grid, evaluations) after them.
std::string passkey_experiment(const std::filesystem::path& root, const std::string& set, const std::string& rest) {
  const auto documents = run("passkey make --count 8 --length 100 --seed 5");
  EXPECT_EQ(documents.code, 0) << documents.output;
  const auto text = write_temp((root / "passkey.txt").string(), documents.output);
  const auto exp = (root / "exp.yaml").string();
  std::ofstream(exp) << "base: " << ROPELAB_SOURCE_DIR << "/experiments/demo_tiny.yaml\n"
                     << "set: [task=lm, data.format=text, tokenizer.type=byte, data.context=32, data.train=" << text
                     << ", data.valid=" << text << ", data.test=" << text
                     << ", train.steps=2, model.d_model=16, model.heads=2, model.d_ff=16, model.encoder_layers=1,"
                        " model.decoder_layers=1"
                     << set << "]\n"
                     << rest;
  return exp;
}

}  // namespace

// eval_window_sinks with passkey: the prompts past data.context are asked again under a window
// of data.context keys with the sinks, in a report of their own, read into their own columns.
TEST(Cli, AblateAsksPasskeyAgainUnderAWindowWithSinks) {
  const auto root = fresh_dir("ablate_passkey_window");
  const auto exp = passkey_experiment(root, "",
                                      "grid:\n  model.position.type: [rotary]\neval_window_sinks: [2]\n"
                                      "passkey:\n  lengths: [100]\n  depths: [0]\n  documents: 2\n");
  const auto out = (root / "out").string();
  const auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rotary = out + "/runs/model.position.type=rotary.seed1";
  const auto windowed = nlohmann::json::parse(read_text(rotary + "/passkey.set_32_2.json"));
  EXPECT_TRUE(windowed.at("accuracy@100").is_number()) << windowed;
  EXPECT_TRUE(nlohmann::json::parse(read_text(rotary + "/passkey.json")).at("accuracy@100").is_number());
  EXPECT_NE(read_text(out + "/results.md").find("| passkey@100 | passkey@100#w32s2 |"), std::string::npos)
      << read_text(out + "/results.md");
  EXPECT_NE(read_text(out + "/results.csv").find(",passkey@100#w32s2"), std::string::npos);
  // the heat map and the plot are full attention's, the windowed cells kept out of them
  EXPECT_TRUE(std::filesystem::exists(out + "/heat_maps/passkey.model.position.type=rotary.svg"));
  const auto plot = read_text(out + "/passkey.svg");
  size_t markers = 0;  // one variant at one length
  for (auto at = plot.find("<circle"); at != std::string::npos; at = plot.find("<circle", at + 1)) ++markers;
  EXPECT_EQ(markers, 1u) << plot;
}

// An experiment's evaluations on fewer test tokens (eval_tokens) and its passkey retrieval:
// a column per length, a plot, and no context beyond a learned table asked for.
TEST(Cli, AblateEvaluatesPasskeyRetrievalAndLimitsTestTokens) {
  const auto root = fresh_dir("ablate_passkey");
  const auto exp = passkey_experiment(root, ", model.position.max_len=112",
                                      "grid:\n  model.position.type: [rotary, learned]\n"
                                      "eval_contexts: [32, 128]\neval_strides: [16]\neval_tokens: 256\n"
                                      "passkey:\n  lengths: [100, 140]\n  depths: [0, 1]\n  documents: 2\n");
  const auto out = (root / "out").string();
  auto r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rotary = out + "/runs/model.position.type=rotary.seed1",
             learned = out + "/runs/model.position.type=learned.seed1";
  for (const auto* file : {"eval.test.ctx32.set_256.json", "eval.test.ctx32.set_256.positions.csv",
                           "eval.test.ctx128.set_256.json", "eval.test.ctx128.stride16.set_256.json", "passkey.json"})
    EXPECT_TRUE(std::filesystem::exists(rotary + "/" + file)) << file;
  // 256 of the 864 test tokens scored: the first window's 32, then 16 at a time
  const auto sliding = nlohmann::json::parse(read_text(rotary + "/eval.test.ctx32.stride16.set_256.json"));
  EXPECT_EQ(sliding.at("tokens").get<int>(), 256) << sliding;
  EXPECT_EQ(sliding.at("set"), nlohmann::json::array({"data.eval_tokens=256"}));
  const auto passkey = nlohmann::json::parse(read_text(rotary + "/passkey.json"));
  EXPECT_TRUE(passkey.at("accuracy@100").is_number()) << passkey;
  EXPECT_TRUE(passkey.at("accuracy@140").is_number()) << passkey;
  // the learned table (112 positions): no window of 128, no passkey prompt of 140 asked for
  EXPECT_FALSE(std::filesystem::exists(learned + "/eval.test.ctx128.set_256.json"));
  EXPECT_TRUE(nlohmann::json::parse(read_text(learned + "/passkey.json")).at("accuracy@140").is_null());
  {  // a cell that cannot run names why in one line, without LibTorch's backtrace
    const auto cells = read_text(learned + "/passkey.csv");
    EXPECT_NE(cells.find("\n140,0,0,0,0.0000,,,\"LearnedEncoder: position 140 is beyond the learned table of 112 "
                         "positions (raise position.max_len)\"\n"),
              std::string::npos)
        << cells;
  }
  const auto table = read_text(out + "/results.md");
  EXPECT_NE(table.find("| passkey@100 | passkey@140 | test_ppl@32 | test_ppl@32/16 | test_ppl@128 | test_ppl@128/16 |"),
            std::string::npos)
      << table;
  std::vector<std::string> learned_cells;  // "", variant, n, device, then the columns above
  {
    std::istringstream row(table.substr(table.find("| model.position.type=learned | 1 |")));
    std::string line;
    std::getline(row, line);
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '|');) learned_cells.push_back(cell);
  }
  ASSERT_GE(learned_cells.size(), 10u) << table;
  EXPECT_EQ(learned_cells[3], " cpu ") << table;
  EXPECT_NE(learned_cells[4], " - ") << table;  // passkey@100
  EXPECT_EQ(learned_cells[5], " - ") << table;  // passkey@140
  EXPECT_NE(learned_cells[6], " - ") << table;  // test_ppl@32
  EXPECT_EQ(learned_cells[8], " - ") << table;  // test_ppl@128
  EXPECT_EQ(learned_cells[9], " - ") << table;  // test_ppl@128/16
  EXPECT_NE(read_text(out + "/passkey.svg").find("passkey retrieval by document length"), std::string::npos);
  {  // the loss by position in windows of 128 (rotary's only): 128 positions in 24 quarter-octave bins
    const auto svg = read_text(out + "/positions.svg");
    const auto line = svg.find("<polyline");
    ASSERT_NE(line, std::string::npos) << svg;
    EXPECT_EQ(svg.find("<polyline", line + 1), std::string::npos) << svg;
    const auto begin = svg.find("points=\"", line) + 8;
    const auto points = svg.substr(begin, svg.find('"', begin) - begin);
    EXPECT_EQ(std::count(points.begin(), points.end(), ','), 24) << points;
  }
  r = run("ablate " + exp + " -o " + out + " --threads 1");  // nothing missing: nothing runs again
  EXPECT_NE(r.output.find("2 finished already, 0 to run"), std::string::npos) << r.output;
  // a document set per seed (passkey seed 1 + train.seed 1): the shared set's report is not it
  EXPECT_EQ(nlohmann::json::parse(read_text(rotary + "/passkey.json")).at("passkey_seed"), 1);
  std::ofstream(exp, std::ios::app) << "  documents_per_seed: true\n";
  r = run("ablate " + exp + " -o " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(rotary + "/passkey.json")).at("passkey_seed"), 2);
  std::filesystem::remove_all(root);
}
