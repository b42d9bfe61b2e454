// A run directory's identity: the config it was started from, but for the settings that
// change no result (threads, device, position settings its encoders do not read).
#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/position/unused_settings.h"
#include "ropelab/run/run.h"

using namespace ropelab;

namespace {

class RunIdentity : public ropelab::testing::TempDir {
 protected:
  // A run directory started from the LM config with `settings`; returns the directory.
  std::string started(const std::string& name, const std::vector<std::string>& settings) {
    const auto dir = (dir_ / name).string();
    std::filesystem::create_directories(dir);
    write(name + "/config.yaml", dump_config(lm(settings)));
    return dir;
  }
  static Config lm(std::vector<std::string> settings) {
    settings.insert(settings.begin(), {"task=lm", "data.format=text", "data.context=64"});
    std::vector<UnreadKey> unread;  // the settings other encoders read are the point here
    ConfigSources sources{{}, settings};
    sources.unread = &unread;
    return load_config(sources);
  }
  bool same(const std::string& dir, const std::vector<std::string>& settings) {
    return run_started_with(dir, lm(settings), yaml_config_files());
  }
};

}  // namespace

TEST_F(RunIdentity, SettingsTheEncoderDoesNotReadAreNotPartOfIt) {
  const auto rotary = started("rotary", {"model.position.type=rotary"});
  EXPECT_TRUE(same(rotary, {"model.position.type=rotary"}));
  EXPECT_TRUE(same(rotary, {"model.position.type=rotary", "train.threads=3"}));
  for (const char* unread : {"learned_init_std=1", "t5_init_std=1", "max_distance=9", "kerple_bound=clamp",
                             "fire_threshold=7", "scale_base=7", "cope_positions=7", "scaling.ramp=continuous",
                             "scaling.dynamic=call"})  // other encoders' settings
    EXPECT_TRUE(same(rotary, {"model.position.type=rotary", std::string("model.position.") + unread})) << unread;
  for (const char* read : {"base=500", "unrotated=0.25", "layout=interleaved", "scaling={type: linear, factor: 2}"})
    EXPECT_FALSE(same(rotary, {"model.position.type=rotary", std::string("model.position.") + read})) << read;
  EXPECT_FALSE(same(rotary, {"model.position.type=xpos"}));
  EXPECT_FALSE(same(rotary, {"model.position.type=rotary", "model.d_model=32"}));

  const auto learned = started("learned", {"model.position.type=learned"});
  EXPECT_FALSE(same(learned, {"model.position.type=learned", "model.position.learned_init_std=1"}));
  EXPECT_TRUE(same(learned, {"model.position.type=learned", "model.position.t5_init_std=1"}));
  const auto t5 = started("t5", {"model.position.type=t5_bias"});
  EXPECT_FALSE(same(t5, {"model.position.type=t5_bias", "model.position.t5_init_std=1"}));
  EXPECT_FALSE(same(t5, {"model.position.type=t5_bias", "model.position.max_distance=40"}));
  EXPECT_FALSE(same(t5, {"model.position.type=t5_bias", "model.position.num_buckets=16"}));
  const auto kerple = started("kerple", {"model.position.type=kerple_power"});
  EXPECT_FALSE(same(kerple, {"model.position.type=kerple_power", "model.position.kerple_bound=clamp"}));
  const auto fire = started("fire", {"model.position.type=fire"});
  EXPECT_FALSE(same(fire, {"model.position.type=fire", "model.position.fire_threshold=7"}));
  EXPECT_FALSE(same(fire, {"model.position.type=fire", "model.position.fire_hidden=7"}));
  const auto xpos = started("xpos", {"model.position.type=xpos"});
  EXPECT_FALSE(same(xpos, {"model.position.type=xpos", "model.position.scale_base=7"}));
  const auto sinusoidal = started("sinusoidal", {});
  EXPECT_FALSE(same(sinusoidal, {"model.position.sinusoid_layout=concat"}));
  const auto cope = started("cope", {"model.position={type: none, cope: true}"});
  EXPECT_FALSE(same(cope, {"model.position={type: none, cope: true, cope_positions: 7}"}));
  const auto yarn = started("yarn", {"model.position={type: rotary, scaling: {type: yarn, factor: 2}}"});
  EXPECT_FALSE(same(yarn, {"model.position={type: rotary, scaling: {type: yarn, factor: 2, ramp: continuous}}"}));
  EXPECT_FALSE(same(yarn, {"model.position={type: rotary, scaling: {type: yarn, factor: 2, beta_fast: 16}}"}));
  EXPECT_TRUE(same(yarn, {"model.position={type: rotary, scaling: {type: yarn, factor: 2, dynamic: call}}"}));
  const auto dynamic = started("dynamic", {"model.position={type: rotary, scaling: {type: dynamic_ntk, factor: 2}}"});
  EXPECT_FALSE(
      same(dynamic, {"model.position={type: rotary, scaling: {type: dynamic_ntk, factor: 2, dynamic: token}}"}));
  EXPECT_TRUE(same(dynamic, {"model.position={type: rotary, scaling: {type: dynamic_ntk, factor: 2, beta_slow: 2}}"}));
}

// The device a run trained on, from its config.yaml: "unknown" without one; one that cannot
// be read is an error naming it, not an unknown device.
TEST_F(RunIdentity, TheDeviceComesFromTheRunsConfig) {
  const auto cpu = started("cpu", {"train.device=cpu"});
  EXPECT_EQ(run_device(cpu, yaml_config_files()), "cpu");
  const auto none = (dir_ / "none").string();
  std::filesystem::create_directories(none);
  EXPECT_EQ(run_device(none, yaml_config_files()), "unknown");
  write("cpu/config.yaml", "train: [unclosed\n");
  try {
    run_device(cpu, yaml_config_files());
    ADD_FAILURE() << "an unreadable config.yaml read as a device";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(cpu + "/config.yaml"), std::string::npos) << e.what();
  }
}

// Clearing keeps what the type reads and resets only the rest.
TEST(UnusedSettings, ClearsOnlyWhatTheTypeDoesNotRead) {
  const auto p = PositionOptions().type(PositionType::t5_bias).max_distance(9).t5_init_std(2).learned_init_std(0.5);
  const auto cleared = with_unused_settings_cleared(p);
  EXPECT_EQ(cleared.max_distance(), 9);
  EXPECT_DOUBLE_EQ(cleared.t5_init_std(), 2);
  EXPECT_DOUBLE_EQ(cleared.learned_init_std(), PositionOptions().learned_init_std());
}
