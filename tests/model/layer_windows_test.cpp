// Per-layer attention windows (model.attention.layer_windows) and RNoPE-SWA (Yang et al.
// 2025: rotary layers with a sliding window, every fourth layer NoPE with every key): each
// layer computes as a stack with that layer's window everywhere would, and cached decoding
// equals recomputation.
#include "../test_util.h"
#include "ropelab/model/transformer.h"

using namespace ropelab;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class LayerWindows : public ropelab::testing::Seeded {};

TransformerOptions windowed(TransformerOptions options, int64_t window, const std::string& layers = "") {
  options.attention().window(window).layer_windows(layers);
  return options;
}

void copy_parameters(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto source = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(source[p.key()]);
}

}  // namespace

TEST_F(LayerWindows, EachLayerAttendsWithinItsOwnWindow) {
  const auto base = tiny_options().decoder_layers(3).decoder_position(PositionOptions().type(PositionType::rotary));
  LanguageModel mixed(windowed(base, 0, "2,0,3"));
  mixed->eval();
  const std::vector<int64_t> windows{2, 0, 3};
  std::vector<LanguageModel> uniform;  // a model with layer i's window in every layer
  for (auto w : windows) {
    uniform.emplace_back(windowed(base, w));
    copy_parameters(*mixed, *uniform.back());
    uniform.back()->eval();
  }
  auto tokens = torch::randint(1, 23, {2, 9});
  torch::NoGradGuard no_grad;
  auto h = mixed->embedding(tokens);
  StackInputs in;
  in.positions = Positions::range(0, 9, 1, torch::kCPU);
  for (size_t i = 0; i < windows.size(); ++i) {
    auto layer = mixed->decoder->layers[i]->as<TransformerLayerImpl>();
    EXPECT_EQ(layer->self_attn->options.attention().window(), windows[i]);
    h = uniform[i]->decoder->layers[i]->as<TransformerLayerImpl>()->forward(h, in);
  }
  const auto expected = mixed->embedding->logits(h);
  EXPECT_LT(max_diff(mixed(tokens), expected), 1e-5);
  for (auto& model : uniform) EXPECT_GT(max_diff(model(tokens), expected), 1e-4);  // the windows matter
}

TEST_F(LayerWindows, RnopeSwaDecodesAsItRecomputes) {
  auto position = PositionOptions().type(PositionType::rotary).nope_every(4);
  auto options = windowed(tiny_options().encoder_layers(4).decoder_layers(4), 0, "3,3,3,0")
                     .encoder_position(position)
                     .decoder_position(position);
  ropelab::testing::expect_cached_decoding_matches_full(options, 1e-5);
  // the windowed layers keep the last window - 1 keys, the full one every key
  LanguageModel lm(options);
  lm->eval();
  DecoderCache state;
  lm(torch::randint(1, 23, {1, 8}), &state);
  const std::vector<int64_t> kept{2, 2, 2, 8};
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_EQ(dynamic_cast<KeyValueCache&>(*state.self[i]).k.size(2), kept[i]) << "layer " << i;
  auto sinks = options;
  sinks.attention().sinks(1).window_positions(WindowPositions::sequence);
  ropelab::testing::expect_cached_decoding_matches_full(sinks, 1e-5);
}

TEST_F(LayerWindows, AStackRefusesAWrongCount) {
  auto message = ropelab::testing::error_of([] { LanguageModel lm(windowed(tiny_options(), 0, "3,3,3")); });
  EXPECT_NE(message.find("'3,3,3' has 3 windows for 2 layers: give one window per layer"), std::string::npos)
      << message;
}
