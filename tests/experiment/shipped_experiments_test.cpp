// The experiment files in experiments/: each loads, and every variant's config validates;
// the recorded 128-context studies keep the position settings they were measured with, and
// the studies at 512 take the settings relative to their training context.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "ropelab/experiment/evaluations.h"
#include "ropelab/experiment/spec.h"

using namespace ropelab;

TEST(ShippedExperiments, EveryVariantLoadsAndTheRecordedStudiesKeepTheirSettings) {
  // Paths in experiment files are from the repository root.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(ROPELAB_SOURCE_DIR);
  int experiments = 0;
  for (const auto& entry : std::filesystem::directory_iterator("experiments")) {
    const auto name = entry.path().stem().string();
    if (entry.path().extension() != ".yaml" || name.rfind("ablate_", 0) != 0) continue;
    SCOPED_TRACE(name);
    ++experiments;
    const auto spec = load_experiment(entry.path().string());
    const bool at_512 = name.find("_512") != std::string::npos;
    const bool recorded = !at_512 && name != "ablate_translator_positions";  // the LM studies at context 128
    for (const auto& variant : expand_grid(spec)) {
      SCOPED_TRACE(variant.name);
      std::vector<UnreadKey> unread;  // position_settings_128.yaml holds every encoder's settings
      const auto config = variant_config(spec, variant, spec.seeds.front(), &unread);
      const auto& p = config.model.decoder_position();
      if (at_512) {  // the defaults, from the training context
        EXPECT_EQ(config.data.context(), 512);
        EXPECT_EQ(p.max_len(), 512);
        EXPECT_EQ(p.max_distance(), 128);
        EXPECT_DOUBLE_EQ(p.scale_base(), 256);
        EXPECT_DOUBLE_EQ(p.fire_threshold(), 512);
        EXPECT_EQ(p.scaling().original_max(), 512);
        EXPECT_DOUBLE_EQ(p.t5_init_std(), 0);
        if (variant.name.find("learned_init_std") == std::string::npos) {  // unless the grid varies it
          EXPECT_DOUBLE_EQ(p.learned_init_std(), 0.02);
        }
        EXPECT_EQ(p.kerple_bound(), KerpleBound::reset);
        EXPECT_EQ(p.scaling().ramp(), YarnRamp::reference);
        // the records' runs wrote dynamic: token (the default then) in their config.yaml, which
        // their evaluations keep; a run trained now evaluates dynamic NTK per call
        EXPECT_EQ(p.scaling().dynamic(), DynamicLength::call);
      }
      if (!recorded) continue;
      EXPECT_EQ(config.data.context(), 128);
      EXPECT_EQ(p.max_len(), 1024);
      EXPECT_EQ(p.max_distance(), 128);
      EXPECT_DOUBLE_EQ(p.scale_base(), 512);
      EXPECT_DOUBLE_EQ(p.fire_threshold(), 512);
      EXPECT_DOUBLE_EQ(p.t5_init_std(), 1);
      EXPECT_DOUBLE_EQ(p.learned_init_std(), 0.02);
      EXPECT_EQ(p.kerple_bound(), KerpleBound::clamp);
      EXPECT_EQ(p.scaling().ramp(), YarnRamp::continuous);
      EXPECT_EQ(p.scaling().dynamic(), DynamicLength::call);
    }
  }
  std::filesystem::current_path(cwd);
  EXPECT_GE(experiments, 9);
}

// The effective-context studies: every variant loads and validates, each of its evaluations'
// --set loads on its config as a trained run's config.yaml does, and every setting that is a
// length follows the training context (drawn positions over 64 C, or 256 C where drawn at
// evaluation too; the scalings' original_max C, FIRE's initial L at most C, windows below C).
TEST(ShippedExperiments, EffectiveContextStudiesTakeTheirLengthsFromTheContext) {
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(ROPELAB_SOURCE_DIR);
  int experiments = 0, drawn = 0, windowed = 0, evaluations = 0;
  const auto saved = (std::filesystem::temp_directory_path() / "ropelab_shipped_config.yaml").string();
  for (const auto& entry : std::filesystem::directory_iterator("experiments")) {
    const auto name = entry.path().stem().string();
    if (entry.path().extension() != ".yaml" || name.rfind("effective_context_", 0) != 0) continue;
    // an experiment with retrieval probes (a top-level `retrieval:` block) reads their haystack,
    // data/prepare_sotu.sh's, absent from a fresh clone
    const bool probes = ropelab::testing::read_text(entry.path()).find("\nretrieval:") != std::string::npos;
    if (probes && !std::filesystem::exists("data/corpora/sotu/test.txt")) continue;
    SCOPED_TRACE(name);
    ++experiments;
    const auto spec = load_experiment(entry.path().string());
    for (const auto& variant : expand_grid(spec)) {
      SCOPED_TRACE(variant.name);
      const auto config = variant_config(spec, variant, spec.seeds.front(), nullptr);
      const auto& p = config.model.decoder_position();
      const int64_t c = config.data.context();
      if (name != "effective_context_passkey") {  // its documents are packed as the 512 study's passkey grid's
        EXPECT_TRUE(config.data.documents());
      }
      std::ofstream(saved) << dump_config(config);
      for (const auto& eval : ablation_evals(config, spec.evaluations)) {
        std::vector<std::string> overrides;
        for (size_t i = 0; i + 1 < eval.args.size(); ++i)
          if (eval.args[i] == "--set") overrides.push_back(eval.args[i + 1]);
        ++evaluations;
        EXPECT_NO_THROW(load_config({{saved}, overrides})) << eval.tag;
      }
      EXPECT_EQ(p.scaling().original_max(), c);
      if (p.train_positions().drawn()) {
        ++drawn;
        // the longest evaluation (64x); drawn at evaluation too, 4 times it, well above it as
        // Ruoss et al. 2023's range is (a draw of n from n is 0 ... n - 1)
        EXPECT_EQ(p.train_positions().range(), (p.train_positions().drawn_at_eval() ? 256 : 64) * c);
      }
      if (p.type() == PositionType::fire) {
        EXPECT_LE(p.fire_threshold(), c);
      }
      for (auto w : layer_windows(config.model.attention(), config.model.decoder_layers()))
        if (w > 0) {
          ++windowed;
          EXPECT_LT(w, c);
        }
    }
  }
  std::filesystem::current_path(cwd);
  std::filesystem::remove(saved);
  EXPECT_GE(experiments, 5);
  EXPECT_GE(evaluations, 200);
  EXPECT_GE(drawn, 2);
  EXPECT_EQ(windowed, 3);
}
