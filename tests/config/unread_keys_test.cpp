// Nothing set is silently ignored: a key the user wrote that the chosen encoder, scaling or
// attention backend does not read is refused by name; ropelab's own config files carry every
// key, and one cut short is reported as such.
#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/position/unused_settings.h"

using namespace ropelab;
using ropelab::testing::error_of;

namespace {

class UnreadKeys : public ropelab::testing::TempDir {
 protected:
  std::string load_error(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
    return error_of([&] { load_config({files, overrides}); });
  }
};

}  // namespace

TEST_F(UnreadKeys, ASetKeyOfAnotherEncoderIsRefusedNamingItsReaders) {
  const auto error =
      load_error({}, {"task=lm", "data.format=text", "model.position.type=alibi", "model.position.unrotated=0.25"});
  EXPECT_EQ(error,
            "--set: model.decoder_position.unrotated=0.25 is not read (model.decoder_position.type=alibi, "
            "scaling.type=none); it applies to rotary and rotary_nd");
  // the encoders that read it take it
  EXPECT_DOUBLE_EQ(load_config({{}, {"model.position.type=rotary", "model.position.unrotated=0.25"}})
                       .model.decoder_position()
                       .unrotated(),
                   0.25);
  // a translator checks both stacks, the encoder's first
  EXPECT_NE(load_error({}, {"model.position.type=t5_bias", "model.position.base=500"})
                .find("--set: model.encoder_position.base=500 is not read (model.encoder_position.type=t5_bias"),
            std::string::npos);
}

TEST_F(UnreadKeys, AFileKeyIsRefusedNamingTheFile) {
  const auto file = write("fire.yaml", "model:\n  position: {type: rotary, fire_threshold: 64}\n");
  EXPECT_EQ(load_error({file}, {}), file +
                                        ": model.encoder_position.fire_threshold=64 is not read "
                                        "(model.encoder_position.type=rotary, scaling.type=none); it applies to fire");
}

TEST_F(UnreadKeys, ScalingAndAttentionSettingsFollowTheirChoice) {
  EXPECT_NE(load_error({}, {"model.position.type=rotary", "model.position.scaling.ramp=continuous"})
                .find("model.encoder_position.scaling.ramp=continuous is not read (model.encoder_position.type=rotary, "
                      "scaling.type=none); it applies to scaling.type: yarn"),
            std::string::npos);
  EXPECT_NO_THROW(load_config(
      {{}, {"model.position={type: rotary, scaling: {type: yarn, factor: 2, original_max: 64, ramp: continuous}}"}}));
  EXPECT_EQ(load_error({}, {"model.attention.num_features=64"}),
            "--set: model.attention.num_features=64 is not read (model.attention.type=softmax, window=0); it applies "
            "to type: performer");
  EXPECT_NE(
      load_error({}, {"model.attention.window_positions=sequence"}).find("it applies to type: softmax with a window"),
      std::string::npos);
}

TEST_F(UnreadKeys, ListedInsteadOfRefusedWhenAsked) {
  std::vector<UnreadKey> unread;
  ConfigSources sources{{}, {"model.position.type=alibi", "model.position.fraction=0.5"}};
  sources.unread = &unread;
  const auto config = load_config(sources);
  ASSERT_EQ(unread.size(), 2u);  // one per stack
  EXPECT_EQ(unread[0].key, "model.encoder_position.fraction");
  EXPECT_EQ(unread[1].key, "model.decoder_position.fraction");
  EXPECT_EQ(unread[1].origin, "--set");
  EXPECT_EQ(config.model.decoder_position().type(), PositionType::alibi);
}

// dump_config writes every key between a first and a last line of its own: such a file is
// never checked for unread keys, and one without its last line was cut short.
TEST_F(UnreadKeys, ConfigsThatRopelabWroteCarryEveryKeyAndAreWhole) {
  const auto text = dump_config(load_config({{}, {"model.position.type=alibi"}}));
  EXPECT_EQ(text.rfind(std::string(kConfigHeader) + "\n", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - std::string(kConfigFooter).size() - 1), std::string(kConfigFooter) + "\n");
  const auto whole = write("whole.yaml", text);
  EXPECT_EQ(load_config({{whole}, {}}).model.decoder_position().type(), PositionType::alibi);  // base, fraction, ...
  const auto cut = write("cut.yaml", text.substr(0, text.size() / 2));
  EXPECT_EQ(load_error({cut}, {}),
            cut +
                ": incomplete: written by ropelab, but the line '# end of config' that ends it is missing (a partial "
                "copy?)");
  const auto edited = write("edited.yaml", text + "# a line added by hand\n");
  EXPECT_EQ(load_config({{edited}, {}}).model.decoder_position().type(), PositionType::alibi);
  // a trained run's config.yaml from before these lines existed holds every key too
  std::filesystem::create_directories(dir_ / "old_run");
  write("old_run/checkpoint_last.pt", "");
  const auto body = text.substr(text.find('\n') + 1, text.size() - text.find('\n') - 1 - (sizeof "# end of config"));
  const auto old_run = write("old_run/config.yaml", body);
  EXPECT_EQ(load_config({{old_run}, {}}).model.decoder_position().type(), PositionType::alibi);
  // the same keys in a file of the user's: checked
  const auto copied = write("copied.yaml", body);
  EXPECT_NE(load_error({copied}, {}).find(copied + ": model.encoder_position.max_len="), std::string::npos);
}

// A run directory's identity compares options without the settings their encoders do not
// read, the rotary ladder's base and the YaRN ramp as much as T5's buckets.
TEST(UnusedSettings, ClearedWhereTheEncoderDoesNotReadThem) {
  const auto alibi = PositionOptions().type(PositionType::alibi).base(500).num_buckets(8);
  EXPECT_DOUBLE_EQ(with_unused_settings_cleared(alibi).base(), PositionOptions().base());
  EXPECT_EQ(with_unused_settings_cleared(alibi).num_buckets(), PositionOptions().num_buckets());
  const auto rotary = PositionOptions().type(PositionType::rotary).base(500).fraction(0.5);
  EXPECT_DOUBLE_EQ(with_unused_settings_cleared(rotary).base(), 500);
  EXPECT_DOUBLE_EQ(with_unused_settings_cleared(rotary).fraction(), 0.5);
  auto yarn = rotary;
  yarn.scaling().type(RopeScalingType::yarn).ramp(YarnRamp::continuous);
  EXPECT_EQ(with_unused_settings_cleared(yarn).scaling().ramp(), YarnRamp::continuous);
  auto linear = yarn;
  linear.scaling().type(RopeScalingType::linear);
  EXPECT_EQ(with_unused_settings_cleared(linear).scaling().ramp(), PositionOptions().scaling().ramp());
}
