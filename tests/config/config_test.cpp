// The config loader: priority, shorthand, round trip, and one clear error per mistake.
#include "ropelab/config/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "ropelab/attention/softmax.h"
#include "ropelab/config/yaml_values.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/task/task_registry.h"

using namespace ropelab;
using ropelab::testing::error_of;

namespace {

class ConfigTest : public ropelab::testing::TempDir {
 protected:
  std::string load_error(const std::vector<std::string>& files, const std::vector<std::string>& overrides = {}) {
    return error_of([&] { load_config({files, overrides}); });
  }
  /// load_error of a config to train with (ConfigSources::training).
  std::string training_error(const std::vector<std::string>& overrides) {
    ConfigSources sources{{}, overrides};
    sources.training = true;
    return error_of([&] { load_config(sources); });
  }
  /// load_config, keys the chosen encoders do not read listed rather than refused.
  static Config load_listing_unread(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
    std::vector<UnreadKey> unread;
    ConfigSources sources{files, overrides};
    sources.unread = &unread;
    return load_config(sources);
  }
};

}  // namespace

TEST_F(ConfigTest, DefaultsAreThePaperBaseModel) {
  auto c = load_config({});
  EXPECT_EQ(c.model.d_model(), 512);
  EXPECT_EQ(c.model.heads(), 8);
  EXPECT_EQ(c.model.d_ff(), 2048);
  EXPECT_EQ(c.model.encoder_layers(), 6);
  EXPECT_DOUBLE_EQ(c.model.dropout(), 0.1);
  EXPECT_EQ(c.model.norm(), NormPosition::post);
  EXPECT_DOUBLE_EQ(c.train.adam_beta2(), 0.98);
  EXPECT_DOUBLE_EQ(c.train.adam_eps(), 1e-9);
  EXPECT_EQ(c.train.warmup(), 4000);
  EXPECT_DOUBLE_EQ(c.train.label_smoothing(), 0.1);
  EXPECT_EQ(c.decode.beam(), 4);
  EXPECT_DOUBLE_EQ(c.decode.lenpen(), 0.6);
}

TEST_F(ConfigTest, LaterFilesWinAndSetWinsOverFiles) {
  auto a = write("a.yaml", "model:\n  d_model: 256\n  heads: 4\ntrain:\n  steps: 10\n");
  auto b = write("b.yaml", "model:\n  d_model: 128\n");
  auto c = load_config({{a, b}, {"train.steps=99"}});
  EXPECT_EQ(c.model.d_model(), 128);
  EXPECT_EQ(c.model.heads(), 4);  // merged, not replaced
  EXPECT_EQ(c.train.steps(), 99);
}

TEST_F(ConfigTest, PositionShorthandSetsBothStacksAndSpecificKeysWin) {
  auto a = write("a.yaml",
                 "model:\n  position:\n    type: rotary\n    fraction: 0.5\n  decoder_position:\n    type: xpos\n");
  auto c = load_config({{a}, {}});
  EXPECT_EQ(c.model.encoder_position().type(), PositionType::rotary);
  EXPECT_DOUBLE_EQ(c.model.encoder_position().fraction(), 0.5);
  EXPECT_EQ(c.model.decoder_position().type(), PositionType::xpos);
  EXPECT_DOUBLE_EQ(c.model.decoder_position().fraction(), 0.5);
  // on the command line the shorthand beats the files, their per-stack keys included
  auto d = load_config({{a}, {"model.position.type=rotary", "model.position.scaling={type: linear, factor: 2}"}});
  EXPECT_EQ(d.model.encoder_position().type(), PositionType::rotary);
  EXPECT_EQ(d.model.decoder_position().type(), PositionType::rotary);
  EXPECT_DOUBLE_EQ(d.model.decoder_position().scaling().factor(), 2.0);
}

// What the position registry says of each encoder, validation enforces: where RoPE scaling
// applies, which rotations may act in cross-attention, which stacks take it; and each
// length hyperparameter it names is a key of that encoder.
TEST_F(ConfigTest, ValidationFollowsThePositionRegistry) {
  for (const auto& row : position_registry()) {
    SCOPED_TRACE(row.name);
    const std::string type = std::string("model.position.type=") + row.name;
    const std::vector<std::string> lm = {"task=lm", "data.format=text", type};
    auto with = [&](const std::string& more) {
      auto all = lm;
      all.push_back(more);
      return all;
    };
    EXPECT_EQ(load_error({}, with("model.position.scaling.type=linear")).empty(), row.scalable);
    if (row.kind == PositionKind::rotary) {
      EXPECT_EQ(load_error({}, with("model.position.rotate_cross_attention=true")).empty(), row.cross_attention);
    }
    EXPECT_EQ(load_error({}, {type}).empty(), !row.causal_only);  // a translator: a bidirectional encoder stack
    for (const auto& key : row.length_keys) {  // scaling.original_max is read with YaRN (or dynamic NTK)
      auto all = with("model.position." + key + "=64");
      if (key.rfind("scaling.", 0) == 0) all.push_back("model.position.scaling.type=yarn");
      EXPECT_EQ(load_error({}, all), "");
    }
  }
}

// The settings measured in tokens follow a language model's training context unless given
// (position/context_defaults.h: learned C, T5 max(C / 4, buckets), xPos C / 2, FIRE C); a
// translator keeps the absolute values; --dump-config shows the values in force.
TEST_F(ConfigTest, LengthSettingsFollowTheTrainingContext) {
  struct Case {
    std::vector<std::string> set;
    int64_t max_len, max_distance;
    double scale_base, fire_threshold;
  };
  const std::vector<Case> cases = {
      {{"task=lm", "data.format=text", "data.context=512"}, 512, 128, 256, 512},
      {{"task=lm", "data.format=text", "data.context=128"}, 128, 32, 64, 128},
      {{"task=lm", "data.format=text", "data.context=64"}, 64, 32, 32, 64},  // T5: no fewer than the buckets
      {{"task=lm", "data.format=text", "data.context=64", "model.position.num_buckets=8"}, 64, 16, 32, 64},
      {{}, 1024, 128, 512, 512},  // translation
      {{"task=lm", "data.format=text", "data.context=512", "model.position.max_len=2048",
        "model.position.max_distance=100", "model.position.scale_base=300", "model.position.fire_threshold=77"},
       2048,
       100,
       300,
       77},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.set));
    const auto config = load_listing_unread({}, c.set);  // the settings of every encoder at once
    for (const auto* p : {&config.model.encoder_position(), &config.model.decoder_position()}) {
      EXPECT_EQ(p->max_len(), c.max_len);
      EXPECT_EQ(p->max_distance(), c.max_distance);
      EXPECT_DOUBLE_EQ(p->scale_base(), c.scale_base);
      EXPECT_DOUBLE_EQ(p->fire_threshold(), c.fire_threshold);
    }
    const auto dumped = dump_config(config);
    EXPECT_NE(dumped.find("max_distance: " + std::to_string(c.max_distance)), std::string::npos) << dumped;
    // The dump holds the values, not the rule: it loads to the same config at any context.
    auto file = write("dumped.yaml", dumped);
    const auto reloaded = load_config({{file}, {"data.context=32"}});
    EXPECT_EQ(reloaded.model.decoder_position().max_len(), c.max_len);
    EXPECT_EQ(reloaded.model.decoder_position().max_distance(), c.max_distance);
  }
  EXPECT_EQ(load_error({}, {"model.position.max_distance=-3"}),
            "--set: model.encoder_position.max_distance=-3 must be positive (unset: from the training context)");
}

// The shorthand takes a mapping too (an ablation grid's value), setting its keys in both
// stacks and leaving the others.
TEST_F(ConfigTest, PositionShorthandTakesAMapping) {
  const auto c = load_config({{}, {"model.position.base=500", "model.position={type: rotary, nope_every: 3}"}});
  for (const auto* p : {&c.model.encoder_position(), &c.model.decoder_position()}) {
    EXPECT_EQ(p->type(), PositionType::rotary);
    EXPECT_EQ(p->nope_every(), 3);
    EXPECT_DOUBLE_EQ(p->base(), 500);
  }
}

// RoPE/NoPE interleaving is an option of rotating encoders only.
TEST_F(ConfigTest, NopeEveryAppliesToRotations) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "model.position.nope_every=4"};
  auto with = [&](const std::string& type) {
    auto all = lm;
    all.push_back("model.position.type=" + type);
    return all;
  };
  EXPECT_EQ(load_config({{}, with("rotary")}).model.decoder_position().nope_every(), 4);
  EXPECT_EQ(load_error({}, with("xpos")), "");
  EXPECT_EQ(load_error({}, with("alibi")),
            "--set: model.decoder_position.nope_every=4 applies to rotary, rotary_nd and xpos only, not "
            "model.decoder_position.type=alibi");
  EXPECT_EQ(load_error({}, {"model.position.nope_every=-1"}),
            "--set: model.encoder_position.nope_every=-1 must be >= 0 (0 = every layer rotates)");
}

// Drawn training positions (randomized, PoSE): their range follows the training context
// (64 C), a learned table follows the range, and a range below the longest training
// sequence, a table below the range, or an encoder without one position per token is one line.
TEST_F(ConfigTest, TrainPositionsFollowTheContextAndCoverTheTrainingSequence) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "data.context=512"};
  auto with = [&](const std::vector<std::string>& more) {
    auto all = lm;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const auto rotary =
      load_config({{}, with({"model.position.type=rotary", "model.position.train_positions.type=pose"})});
  EXPECT_EQ(rotary.model.decoder_position().train_positions().range(), 64 * 512);
  EXPECT_EQ(position_label(rotary.model.decoder_position()), "rotary+pose");
  const auto learned =
      load_config({{}, with({"model.position.type=learned", "model.position.train_positions.type=randomized"})});
  EXPECT_EQ(learned.model.decoder_position().max_len(), 64 * 512);
  EXPECT_EQ(load_config({{}, with({"model.position.type=learned"})}).model.decoder_position().max_len(), 512);
  EXPECT_EQ(load_error({}, with({"model.position.type=rotary", "model.position.train_positions.type=randomized",
                                 "model.position.train_positions.range=256"})),
            "--set: model.decoder_position.train_positions.range=256 is below data.context=512: randomized draws "
            "positions for a whole training sequence within [0, range)");
  EXPECT_EQ(load_error({}, {"model.position.type=rotary", "model.position.train_positions.type=pose",
                            "model.position.train_positions.range=100"}),
            "--set: model.encoder_position.train_positions.range=100 is below data.max_len=256: pose draws positions "
            "for a whole training sequence within [0, range)");
  EXPECT_EQ(load_error({}, with({"model.position.type=learned", "model.position.max_len=1024",
                                 "model.position.train_positions.type=pose"})),
            "--set: model.decoder_position.max_len=1024 must be >= train_positions.range=32768 (every position "
            "training may draw needs a row)");
  EXPECT_EQ(load_error({}, with({"model.position.type=none", "model.position.train_positions.type=pose"})),
            "--set: model.decoder_position.train_positions.type=pose is not read (model.decoder_position.type=none, "
            "scaling.type=none); it applies to sinusoidal, learned, t5_bias, rotary, alibi, kerple, kerple_power "
            "and fire");
  EXPECT_EQ(load_error({}, with({"model.position.type=rotary", "model.position.train_positions.range=4096"})),
            "--set: model.decoder_position.train_positions.range=4096 is not read (model.decoder_position.type=rotary, "
            "scaling.type=none); it applies to train_positions.type: randomized or pose");
  EXPECT_EQ(load_error({}, with({"model.position.type=rotary", "model.position.train_positions.type=pose",
                                 "model.position.train_positions.drawn_at_eval=true"})),
            "--set: model.decoder_position.train_positions.drawn_at_eval=true is not read "
            "(model.decoder_position.type=rotary, scaling.type=none); it applies to train_positions.type: randomized");
  // settings whose positions would not be the drawn ones in training, which an evaluation
  // of the trained run (positions 0 ... T - 1) may take
  const std::vector<std::string> dynamic = {"model.position.type=rotary", "model.position.train_positions.type=pose",
                                            "model.position.scaling={type: dynamic_ntk, dynamic: call}"};
  EXPECT_EQ(training_error(with(dynamic)),
            "--set: model.decoder_position.scaling.dynamic=call follows the call's largest position, which "
            "model.decoder_position.train_positions.type=pose puts near the range in training; use token");
  EXPECT_EQ(load_error({}, with(dynamic)), "");
  const std::vector<std::string> windowed = {
      "model.position.type=rotary", "model.position.train_positions.type=randomized", "model.attention.window=128"};
  EXPECT_EQ(training_error(with(windowed)),
            "--set: model.attention.window_positions=cache places the queries of a window at cache positions (at "
            "most sinks + window - 1), not at the drawn positions of model.decoder_position.train_positions.type="
            "randomized; use sequence");
  EXPECT_EQ(load_error({}, with(windowed)), "");
  EXPECT_EQ(training_error(with({"model.position.type=rotary", "model.position.train_positions.type=randomized",
                                 "model.attention.window=128", "model.attention.window_positions=sequence"})),
            "");
  EXPECT_EQ(load_error({}, {"model.position.type=rotary", "model.position.train_positions.type=pose",
                            "model.decoder_position.rotate_cross_attention=true"}),
            "--set: model.decoder_position.rotate_cross_attention=true and model.decoder_position.train_positions."
            "type=pose cannot both be set: source and target positions would not share an origin in training");
  EXPECT_EQ(load_error({}, with({"model.position.train_positions.type=shuffled"})),
            "--set: model.encoder_position.train_positions.type: unknown train_positions.type 'shuffled' (expected "
            "contiguous | randomized | pose)");
}

// The learned table's initial scale: 0.02 unless given; a negative one names the key.
TEST_F(ConfigTest, LearnedInitStdIsChecked) {
  EXPECT_DOUBLE_EQ(load_config({{}, {"model.position.type=learned"}}).model.decoder_position().learned_init_std(),
                   0.02);
  EXPECT_DOUBLE_EQ(load_config({{}, {"model.position.type=learned", "model.position.learned_init_std=1"}})
                       .model.encoder_position()
                       .learned_init_std(),
                   1);
  EXPECT_EQ(load_error({}, {"model.position.learned_init_std=-0.5"}),
            "--set: model.encoder_position.learned_init_std=-0.5 must be >= 0");
}

// A trained run's config.yaml written before a key existed means the behaviour from before
// it; where the run's own type does not use the key, and in any other file, the default holds.
TEST_F(ConfigTest, ATrainedRunsConfigKeepsTheBehaviourOfKeysItPredates) {
  const auto saved = [&](const std::string& name, const std::vector<std::string>& settings,
                         const std::vector<std::string>& predated, bool trained = true) {
    auto lm = settings;
    lm.insert(lm.begin(), {"task=lm", "data.format=text"});
    std::istringstream lines(dump_config(load_config({{}, lm})));
    std::string text, line;
    size_t dropped = 0;
    while (std::getline(lines, line)) {
      const auto first = line.find_first_not_of(' ');
      const bool drop =
          first != std::string::npos && std::any_of(predated.begin(), predated.end(), [&](const std::string& key) {
            return line.compare(first, key.size() + 1, key + ":") == 0;
          });
      dropped += drop;
      if (!drop) text += line + "\n";
    }
    EXPECT_EQ(dropped, 2 * predated.size()) << name;  // once per stack
    std::filesystem::create_directories(dir_ / name);
    if (trained) write(name + "/checkpoint_last.pt", "");
    return write(name + "/config.yaml", text);
  };
  const auto t5 = saved("t5", {"model.position.type=t5_bias"}, {"t5_init_std"});
  EXPECT_DOUBLE_EQ(load_config({{t5}, {}}).model.decoder_position().t5_init_std(), 1);
  EXPECT_DOUBLE_EQ(load_config({{t5}, {}}).model.encoder_position().t5_init_std(), 1);
  EXPECT_DOUBLE_EQ(load_config({{t5}, {"model.position.t5_init_std=0.5"}}).model.decoder_position().t5_init_std(),
                   0.5);  // a --set still wins
  const auto untrained = saved("untrained", {"model.position.type=t5_bias"}, {"t5_init_std"}, false);
  EXPECT_DOUBLE_EQ(load_config({{untrained}, {}}).model.decoder_position().t5_init_std(), 0);
  std::filesystem::copy_file(t5, dir_ / "t5" / "other.yaml");
  EXPECT_DOUBLE_EQ(load_config({{(dir_ / "t5" / "other.yaml").string()}, {}}).model.decoder_position().t5_init_std(),
                   0);
  const auto sinusoidal = saved("sinusoidal", {}, {"t5_init_std"});
  EXPECT_DOUBLE_EQ(load_config({{sinusoidal}, {}}).model.decoder_position().t5_init_std(), 0);

  for (const char* type : {"kerple", "kerple_power"}) {
    const auto kerple = saved(type, {std::string("model.position.type=") + type}, {"kerple_bound"});
    EXPECT_EQ(load_config({{kerple}, {}}).model.decoder_position().kerple_bound(), KerpleBound::clamp) << type;
  }
  const auto written = saved("written", {"model.position.type=kerple"}, {});  // a key the file has is kept
  EXPECT_EQ(load_config({{written}, {}}).model.decoder_position().kerple_bound(), KerpleBound::reset);
  const auto yarn = saved("yarn", {"model.position={type: rotary, scaling: {type: yarn, factor: 2}}"}, {"ramp"});
  EXPECT_EQ(load_config({{yarn}, {}}).model.decoder_position().scaling().ramp(), YarnRamp::continuous);
  const auto dynamic =
      saved("dynamic", {"model.position={type: rotary, scaling: {type: dynamic_ntk, factor: 2}}"}, {"dynamic"});
  EXPECT_EQ(load_config({{dynamic}, {}}).model.decoder_position().scaling().dynamic(), DynamicLength::call);
  const auto rotary = saved("rotary", {"model.position.type=rotary"}, {"ramp", "dynamic"});
  EXPECT_EQ(load_config({{rotary}, {}}).model.decoder_position().scaling().ramp(), YarnRamp::reference);
  EXPECT_EQ(load_config({{rotary}, {}}).model.decoder_position().scaling().dynamic(), DynamicLength::call);
}

// The forget gate goes with any encoder of a causal stack whose attention takes a logit bias.
// SSMax acts in causal softmax self-attention, without CoPE; s starts at ssmax_init.
TEST_F(ConfigTest, SsmaxNeedsCausalSoftmaxAttention) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "model.position={type: none, ssmax: true}"};
  const auto config = load_config({{}, lm});
  EXPECT_TRUE(config.model.decoder_position().ssmax());
  EXPECT_DOUBLE_EQ(config.model.decoder_position().ssmax_init(), 0.43);
  EXPECT_EQ(position_label(config.model.decoder_position()), "none+ssmax");
  auto with = [&](const std::string& more) {
    auto all = lm;
    all.push_back(more);
    return all;
  };
  EXPECT_EQ(load_error({}, with("model.attention.type=performer")),
            "--set: model.decoder_position.ssmax=true needs model.attention.type=softmax, not performer");
  EXPECT_EQ(load_error({}, with("model.position.cope=true")),
            "--set: model.decoder_position.ssmax=true and model.decoder_position.cope cannot both be set (CoPE's "
            "gates read the unscaled query)");
  EXPECT_EQ(load_error({}, {"model.position.ssmax=true"}),
            "--set: model.encoder_position.ssmax=true needs causal self-attention (a language model or a "
            "translator's decoder), not the encoder");
  EXPECT_EQ(load_error({}, {"model.decoder_position.ssmax=true"}), "");
  EXPECT_EQ(load_error({}, {"task=lm", "data.format=text", "model.position.ssmax_init=0.5"}),
            "--set: model.decoder_position.ssmax_init=0.5 is not read (model.decoder_position.type=sinusoidal, "
            "scaling.type=none); it applies to ssmax: true");
}

// Per-layer windows: one per layer of every stack, in place of one window, for softmax
// attention and encoders whose stack makes nothing once for every layer.
TEST_F(ConfigTest, LayerWindowsGiveOnePerLayer) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "model.decoder_layers=4",
                                       "model.position={type: rotary, nope_every: 4}",
                                       "model.attention.layer_windows='64, 64,64,0'"};
  EXPECT_EQ(layer_windows(load_config({{}, lm}).model.attention(), 4), (std::vector<int64_t>{64, 64, 64, 0}));
  auto with = [&](const std::string& more) {
    auto all = lm;
    all.push_back(more);
    return load_error({}, all);
  };
  EXPECT_EQ(with("model.attention.layer_windows='64,64,0'"),
            "--set: model.attention.layer_windows: '64,64,0' has 3 windows for 4 layers: give one window per layer "
            "(model.decoder_layers=4)");
  EXPECT_EQ(with("model.attention.layer_windows='64,-1,64,0'"),
            "--set: model.attention.layer_windows: '-1' in '64,-1,64,0' is not a window (a whole number >= 0) "
            "(model.decoder_layers=4)");
  EXPECT_EQ(with("model.attention.layer_windows='64,64,64,0,'"),
            "--set: model.attention.layer_windows: '64,64,64,0,' ends with a comma: give one window per layer "
            "(model.decoder_layers=4)");
  EXPECT_EQ(with("model.attention.window=64"),
            "--set: model.attention.layer_windows='64, 64,64,0' and model.attention.window=64 cannot both be set (one "
            "window for every layer)");
  EXPECT_EQ(load_error({}, {"task=lm", "data.format=text", "model.decoder_layers=4", "model.position.type=alibi",
                            "model.attention.layer_windows='64,64,64,0'"}),
            "--set: model.decoder_position.type=alibi and model.attention.layer_windows cannot both be set: a logit "
            "bias is made once per stack, for one window");
  EXPECT_EQ(with("model.position.ssmax=true"),
            "--set: model.decoder_position.ssmax=true and model.attention.layer_windows cannot both be set (one "
            "count of keys per stack)");
  EXPECT_EQ(with("model.attention.sinks=4"), "");
  EXPECT_EQ(load_error({}, {"model.attention.layer_windows='8,8,8,8,8,8'", "model.encoder_layers=2"}),
            "--set: model.attention.layer_windows: '8,8,8,8,8,8' has 6 windows for 2 layers: give one window per "
            "layer (model.encoder_layers=2)");
}

TEST_F(ConfigTest, ForgetGateNeedsCausalSoftmaxAttention) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "model.position={type: none, forget_gate: true}"};
  EXPECT_TRUE(load_config({{}, lm}).model.decoder_position().forget_gate());
  auto biased = lm;
  biased.push_back("model.position.forget_gate_bias=4");
  EXPECT_DOUBLE_EQ(load_config({{}, biased}).model.decoder_position().forget_gate_bias(), 4);
  EXPECT_EQ(position_label(load_config({{}, biased}).model.decoder_position()), "fox bias 4");
  auto unbounded = lm;
  unbounded.push_back("model.position.forget_gate_bias=.inf");
  EXPECT_EQ(load_error({}, unbounded), "--set: model.decoder_position.forget_gate_bias=inf must be a number");
  EXPECT_EQ(load_error({}, {"task=lm", "data.format=text", "model.position.forget_gate_bias=4"}),
            "--set: model.decoder_position.forget_gate_bias=4 is not read (model.decoder_position.type=sinusoidal, "
            "scaling.type=none); it applies to forget_gate: true");
  EXPECT_FALSE(load_config({{}, {"task=lm", "data.format=text"}}).model.decoder_position().forget_gate());
  auto performer = lm;
  performer.push_back("model.attention.type=performer");
  EXPECT_EQ(load_error({}, performer),
            "--set: model.decoder_position.forget_gate=true needs an attention backend that takes a logit bias; "
            "model.attention.type=performer does not");
  EXPECT_EQ(load_error({}, {"model.position.forget_gate=true"}),
            "--set: model.encoder_position.forget_gate=true needs causal self-attention (a language model or a "
            "translator's decoder), not the encoder");
  EXPECT_EQ(load_error({}, {"model.decoder_position.forget_gate=true"}), "");
}

// CoPE's positions follow the training context (P = C / 16, at least 2, unless given; 64
// without one), in causal softmax attention without another logit bias or a forget gate.
TEST_F(ConfigTest, CopeFollowsTheContextAndNeedsCausalSoftmaxAttention) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text", "data.context=96",
                                       "model.position={type: none, cope: true}"};
  const auto c = load_config({{}, lm});
  EXPECT_TRUE(c.model.decoder_position().cope());
  EXPECT_EQ(c.model.decoder_position().cope_positions(), 6);
  auto with = [&](const std::string& extra) {
    auto all = lm;
    all.push_back(extra);
    return all;
  };
  EXPECT_EQ(load_config({{}, with("data.context=20")}).model.decoder_position().cope_positions(), 2);
  EXPECT_EQ(load_config({{}, {"model.decoder_position.cope=true"}}).model.decoder_position().cope_positions(), 64);
  EXPECT_EQ(load_config({{}, with("model.position.cope_positions=40")}).model.decoder_position().cope_positions(), 40);
  EXPECT_EQ(load_error({}, with("model.position.type=alibi")),
            "--set: model.decoder_position.cope=true takes no other logit bias, not model.decoder_position.type=alibi");
  EXPECT_EQ(load_error({}, with("model.position.forget_gate=true")),
            "--set: model.decoder_position.cope=true and model.decoder_position.forget_gate cannot both be set");
  EXPECT_EQ(load_error({}, with("model.attention.type=performer")),
            "--set: model.decoder_position.cope=true needs model.attention.type=softmax, not performer");
  EXPECT_EQ(load_error({}, {"model.position.cope=true"}),
            "--set: model.encoder_position.cope=true needs causal self-attention (a language model or a "
            "translator's decoder), not the encoder");
  EXPECT_EQ(load_error({}, with("model.position.cope_positions=-2")),
            "--set: model.decoder_position.cope_positions=-2 must be positive (unset: from the training context)");
}

// Length-generalisation encoders and RoPE scaling: every combination that cannot work is
// one line naming the key and why.
TEST_F(ConfigTest, IncompatiblePositionChoicesNameTheKeyAndTheReason) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text"};
  auto with = [](std::vector<std::string> base, std::initializer_list<std::string> more) {
    base.insert(base.end(), more);
    return base;
  };
  auto message = load_error({}, {"model.position.type=xpos"});  // the translator's encoder is bidirectional
  EXPECT_EQ(message.rfind("--set: model.encoder_position: xPos is defined for causal attention only", 0), 0u)
      << message;
  EXPECT_EQ(load_config({{}, with(lm, {"model.position.type=xpos"})}).model.decoder_position().type(),
            PositionType::xpos);
  EXPECT_EQ(load_error({}, with(lm, {"model.position.type=xpos", "model.position.rotate_cross_attention=true"})),
            "--set: model.decoder_position.rotate_cross_attention=true does not apply to xpos (defined for causal "
            "self-attention only)");
  for (auto bias : position_types([](const PositionTraits& t) { return t.kind == PositionKind::bias; })) {
    const std::string type = position_traits(bias).name;
    EXPECT_EQ(load_error({}, with(lm, {"model.position.type=" + type, "model.attention.type=performer"})),
              std::string("--set: model.decoder_position.type=") + type +
                  " needs an attention backend that takes a logit bias; model.attention.type=performer does not");
  }
  EXPECT_EQ(load_error({}, {"model.position.type=alibi", "model.position.scaling.type=yarn"}),
            "--set: model.encoder_position.scaling.type=yarn applies to rotary and rotary_nd only, not "
            "model.encoder_position.type=alibi");
  EXPECT_EQ(load_error({}, {"model.position.type=rotary", "model.position.scaling.type=linear",
                            "model.position.scaling.factor=0.5"}),
            "--set: model.encoder_position.scaling.factor=0.5 must be >= 1 (the extension ratio)");
  EXPECT_EQ(load_error({}, {"model.position.type=rotary", "model.position.scaling.type=longrope"}),
            "--set: model.encoder_position.scaling.type: unknown RoPE scaling type 'longrope' (expected none | linear "
            "| ntk | dynamic_ntk | yarn)");
  EXPECT_EQ(load_error({}, {"model.position.type=rotary", "model.position.scaling.type=yarn"}),
            "--set: model.encoder_position.scaling.original_max=0 must be the training context for scaling.type=yarn");
  // a language model's training context is the default original_max
  auto c = load_config({{},
                        with(lm, {"data.context=96", "model.position.type=rotary", "model.position.scaling.type=yarn",
                                  "model.position.scaling.factor=4"})});
  EXPECT_EQ(c.model.decoder_position().scaling().original_max(), 96);
}

// The attention kernel, window and sinks: parsed, and every impossible value one line.
TEST_F(ConfigTest, AttentionKernelWindowAndSinks) {
  auto c = load_config(
      {{}, {"model.attention.kernel=materialized", "model.attention.window=64", "model.attention.sinks=4"}});
  EXPECT_EQ(c.model.attention().kernel(), AttentionKernel::materialized);
  EXPECT_EQ(c.model.attention().window(), 64);
  EXPECT_EQ(c.model.attention().sinks(), 4);
  EXPECT_EQ(c.model.attention().window_positions(), WindowPositions::cache);  // StreamingLLM's, by default
  EXPECT_EQ(load_config({{}, {"model.attention.window=8", "model.attention.window_positions=sequence"}})
                .model.attention()
                .window_positions(),
            WindowPositions::sequence);
  EXPECT_EQ(load_error({}, {"model.attention.window_positions=absolute"}),
            "--set: model.attention.window_positions: unknown window positions 'absolute' (expected cache | "
            "sequence)");
  EXPECT_EQ(load_config({{}, {}}).model.attention().kernel(), AttentionKernel::automatic);
  EXPECT_EQ(load_error({}, {"model.attention.kernel=flash"}),
            "--set: model.attention.kernel: unknown attention kernel 'flash' (expected auto | streaming | "
            "chunked | materialized)");
  EXPECT_EQ(load_error({}, {"model.attention.window=-1"}),
            "--set: model.attention.window=-1 must be >= 0 (0 = every key)");
  EXPECT_EQ(load_error({}, {"model.attention.sinks=4"}),
            "--set: model.attention.sinks=4 needs a sliding window (model.attention.window > 0 or layer_windows)");
  EXPECT_EQ(load_error({}, {"model.attention.window=8", "model.attention.type=performer"}),
            "--set: model.attention.window=8 needs model.attention.type=softmax, not performer");
}

TEST_F(ConfigTest, DumpRoundTrips) {
  auto a = write("a.yaml", "model:\n  position: {type: rotary_nd, axes: 2}\n  norm: pre\ntrain: {lr: 0.0007}\n");
  auto c = load_config({{a}, {}});
  auto dumped = write("dumped.yaml", dump_config(c));
  EXPECT_EQ(dump_config(load_config({{dumped}, {}})), dump_config(c));
  EXPECT_NE(dump_config(c).find("type: rotary_nd"), std::string::npos);
}

TEST_F(ConfigTest, UnknownKeySuggestsTheClosestKnownKey) {
  auto a = write("x.yaml", "model:\n  dmodel: 256\n");
  EXPECT_EQ(load_error({a}), a + ": unknown key model.dmodel (did you mean model.d_model?)");
  auto b = write("y.yaml", "trian:\n  steps: 3\n");
  EXPECT_EQ(load_error({b}), b + ": unknown key trian (did you mean train?)");
  EXPECT_EQ(load_error({}, {"model.zzzzzzzz=1"}), "--set: unknown key model.zzzzzzzz");
}

TEST_F(ConfigTest, WrongTypesNameFileAndKey) {
  auto a = write("x.yaml", "model:\n  heads: six\n");
  EXPECT_EQ(load_error({a}), a + ": model.heads=six is not an integer");
  auto b = write("y.yaml", "model:\n  dropout: [1, 2]\n");
  EXPECT_EQ(load_error({b}), b + ": model.dropout expected a number, got a list or mapping");
  EXPECT_EQ(load_error({}, {"model.heads="}), "--set: model.heads has no value (expected an integer)");
  EXPECT_EQ(load_config({{}, {"data.valid="}}).data.valid(), "");
  auto c = write("z.yaml", "model:\n  norm: middle\n");
  EXPECT_EQ(load_error({c}), c + ": model.norm: unknown norm position 'middle' (expected post | pre)");
}

TEST_F(ConfigTest, OutOfRangeValuesAreRejectedWithTheKey) {
  auto a = write("x.yaml", "model:\n  heads: 6\n");
  EXPECT_EQ(load_error({a}), a + ": model.heads=6 does not divide model.d_model=512");
  EXPECT_EQ(load_error({}, {"model.dropout=1.5"}), "--set: model.dropout=1.5 must be in [0, 1)");
  EXPECT_EQ(load_error({}, {"train.device=tpu"}),
            "--set: train.device=tpu is not a device (expected cpu, cuda or cuda:N)");
  EXPECT_EQ(load_error({}, {"decode.beam=0"}), "--set: decode.beam=0 must be >= 1");
}

TEST_F(ConfigTest, PositionEncoderChecksRunAtConfigTime) {
  // d_model 512 / 8 heads = Dh 64; fraction 0.3 -> 19 rotated dims: odd
  auto a = write("x.yaml", "model:\n  encoder_position: {type: rotary, fraction: 0.3}\n");
  auto message = load_error({a});
  EXPECT_EQ(message.rfind(a + ": model.encoder_position: RotaryEncoder: rotated dimensions (19", 0), 0u) << message;
  auto b = write("y.yaml", "model:\n  position: {type: rotary_nd, axes: 3}\n");
  message = load_error({b});
  EXPECT_NE(message.find("must be a positive multiple of 2 x axes = 6"), std::string::npos) << message;
}

TEST_F(ConfigTest, SyntaxErrorsNameTheLine) {
  auto a = write("x.yaml", "model:\n  d_model: 256\n  heads: [4\n");
  auto message = load_error({a});
  EXPECT_EQ(message.rfind(a + ":", 0), 0u) << message;
  EXPECT_NE(message.find("YAML syntax error"), std::string::npos) << message;
  EXPECT_EQ(load_error({(dir_ / "missing.yaml").string()}),
            (dir_ / "missing.yaml").string() + ": cannot open config file");
  EXPECT_EQ(load_error({}, {"model.d_model"}), "--set model.d_model: expected key=value, e.g. --set model.d_model=256");
  // control characters echoed from the input are escaped: an error stays one line
  EXPECT_EQ(load_error({}, {"model:\n  d_model"}),
            "--set model:\\n  d_model: expected key=value, e.g. --set model.d_model=256");
}

// `task` is spelled as the task registry names its rows, and nowhere else.
TEST_F(ConfigTest, TaskNamesComeFromTheTaskRegistry) {
  std::string names;
  for (const auto& row : task_registry()) {
    EXPECT_EQ(parse_task(row.name), row.type);
    EXPECT_EQ(to_string(row.type), row.name);
    names += (names.empty() ? "" : " | ") + std::string(row.name);
  }
  EXPECT_EQ(load_error({}, {"task=mt"}), "--set: task: unknown task 'mt' (expected " + names + ")");
}

// Each task's row in the registry names the data settings it cannot work from; the message
// names the key, its value and why.
TEST_F(ConfigTest, EachTaskRefusesDataItCannotRead) {
  const std::vector<std::string> lm = {"task=lm", "data.format=text"};
  auto with = [](std::vector<std::string> base, const std::string& extra) {
    base.push_back(extra);
    return base;
  };
  EXPECT_EQ(load_error({}, {"task=lm"}), "config: data.format=tsv cannot feed task lm (expected text)");
  EXPECT_EQ(load_error({}, {"task=lm", "data.format=parallel"}),
            "--set: data.format=parallel cannot feed task lm (expected text)");
  EXPECT_EQ(load_error({}, with(lm, "data.source_layout=grid")),
            "--set: data.source_layout=grid applies to translation sources only");
  EXPECT_EQ(load_error({}, with(lm, "data.retrieval={tasks: mqar, ratio: 1.5}")),
            "--set: data.retrieval.ratio=1.5 must be in [0, 1)");
  EXPECT_EQ(load_error({}, lm), "");
  EXPECT_EQ(load_error({}, {"data.format=text"}),
            "--set: data.format=text holds no pairs for task translation (expected tsv or parallel)");
  EXPECT_EQ(load_error({}, {"data.documents=true"}), "--set: data.documents=true applies to language models (task lm)");
  EXPECT_EQ(load_error({}, {"data.retrieval.tasks=mqar"}),
            "--set: data.retrieval.tasks=mqar applies to language models (task lm)");
  EXPECT_EQ(load_error({}, {"data.format=parallel"}), "");
}

TEST(EditDistance, Levenshtein) {
  EXPECT_EQ(yaml_values::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(yaml_values::edit_distance("", "abc"), 3u);
  EXPECT_EQ(yaml_values::edit_distance("same", "same"), 0u);
}
