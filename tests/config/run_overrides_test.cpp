// What --set may change on a trained run comes from the schema's marks (config/schema.h):
// keys that leave the trained parameters as they are, in either spelling of a stack's keys,
// and mapping values by the keys they set.
#include "ropelab/config/run_overrides.h"

#include "../test_util.h"

using namespace ropelab;

TEST(RunOverrides, TheKeysAreListedOnceInTheShorthandsSpelling) {
  EXPECT_EQ(run_override_keys(),
            "data.{eval_tokens,documents}, model.position.rotary_impl, model.position.scaling.*, "
            "model.position.train_positions.drawn_at_eval, "
            "model.attention.{kernel,window,layer_windows,sinks,window_positions}, decode.*");
}

TEST(RunOverrides, KeysThatLeaveTheParametersAloneAreTaken) {
  for (const std::string assignment :
       {"model.position.scaling.factor=4", "model.decoder_position.scaling.type=yarn",
        "model.encoder_position.rotary_impl=fused", "model.position.scaling={type: yarn, factor: 8}",
        "model.position={scaling: {type: linear}}", "decode.beam=2", "decode={beam: 1, lenpen: 0}",
        "data.eval_tokens=100", "data.documents=true", "model.attention.window=8", "model.attention.kernel=streaming",
        "model.attention.window_positions=sequence", "model.position.train_positions.drawn_at_eval=true"})
    EXPECT_EQ(run_override_error(assignment), "") << assignment;
}

TEST(RunOverrides, KeysThatDescribeAnotherModelAreRefusedInOneLine) {
  for (const std::string assignment :
       {"model.d_model=8", "model.position.type=alibi", "model.decoder_position.base=500000",
        "model.position={scaling: {type: yarn}, type: alibi}", "model.attention.type=performer", "data.context=64",
        "decode.beam.x=1", "train.steps=5", "task=lm", "model={heads: 2}"}) {
    const auto error = run_override_error(assignment);
    EXPECT_EQ(error.rfind("--set " + assignment + ": a trained run takes only data.{eval_tokens,documents}, ", 0), 0u)
        << assignment << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}
