// Properties of the Transformer modules (Vaswani et al. 2017, section 3).
#include "ropelab/model/transformer.h"

#include <functional>

#include "../test_util.h"
#include "ropelab/position/position_traits.h"

using namespace ropelab;
using ropelab::testing::all_position_types;
using ropelab::testing::causal_position_types;
using ropelab::testing::central_difference;
using ropelab::testing::max_diff;
using ropelab::testing::tiny_options;

namespace {

class Transformer : public ropelab::testing::Seeded {};

}  // namespace

TEST_F(Transformer, OutputShapes) {
  Seq2Seq model(tiny_options());
  auto src = torch::randint(1, 23, {3, 7});
  auto tgt = torch::randint(1, 23, {3, 5});
  EXPECT_EQ(model(src, tgt).sizes(), (std::vector<int64_t>{3, 5, 23}));
  auto memory = model->encode(src);
  EXPECT_EQ(memory.out.sizes(), (std::vector<int64_t>{3, 7, 16}));
  LanguageModel lm(tiny_options());
  EXPECT_EQ(lm(tgt).sizes(), (std::vector<int64_t>{3, 5, 23}));
}

TEST_F(Transformer, PreNormHasFinalLayerNormAndPostNormDoesNot) {
  Seq2Seq post(tiny_options());
  Seq2Seq pre(tiny_options().norm(NormPosition::pre));
  EXPECT_FALSE(post->encoder->final_norm);
  EXPECT_TRUE(pre->encoder->final_norm);
  EXPECT_TRUE(pre->decoder->final_norm);
}

// Changing target tokens at positions >= t must leave decoder outputs before t unchanged.
TEST_F(Transformer, DecoderIsCausalForEveryPositionEncoder) {
  for (const auto& position : all_position_types()) {
    for (auto norm : {NormPosition::post, NormPosition::pre}) {
      SCOPED_TRACE(to_string(position.type()) + " " + to_string(norm));
      Seq2Seq model(tiny_options().decoder_position(position).encoder_position(position).norm(norm));
      model->eval();
      auto src = torch::randint(1, 23, {2, 6});
      auto tgt = torch::randint(1, 23, {2, 8});
      auto changed = tgt.clone();
      changed.narrow(1, 5, 3).random_(1, 23);
      auto a = model(src, tgt), b = model(src, changed);
      EXPECT_LT(max_diff(a.narrow(1, 0, 5), b.narrow(1, 0, 5)), 1e-5);
      EXPECT_GT(max_diff(a.narrow(1, 5, 3), b.narrow(1, 5, 3)), 1e-3);  // the change did reach later positions

      LanguageModel lm(tiny_options().decoder_position(position).norm(norm));
      lm->eval();
      auto la = lm(tgt), lb = lm(changed);
      EXPECT_LT(max_diff(la.narrow(1, 0, 5), lb.narrow(1, 0, 5)), 1e-5);
    }
  }
  // causal-only encoders and scaled rotary: the language model, and the translator's decoder
  for (const auto& position : causal_position_types()) {
    SCOPED_TRACE(to_string(position.type()) + "/" + to_string(position.scaling().type()));
    LanguageModel lm(tiny_options().decoder_position(position));
    Seq2Seq model(tiny_options().decoder_position(position));
    lm->eval();
    model->eval();
    auto src = torch::randint(1, 23, {2, 6});
    auto tgt = torch::randint(1, 23, {2, 8});
    auto changed = tgt.clone();
    changed.narrow(1, 5, 3).random_(1, 23);
    EXPECT_LT(max_diff(lm(tgt).narrow(1, 0, 5), lm(changed).narrow(1, 0, 5)), 1e-5);
    EXPECT_LT(max_diff(model(src, tgt).narrow(1, 0, 5), model(src, changed).narrow(1, 0, 5)), 1e-5);
    // Dynamic NTK per call follows the whole sequence's length, so only sequences of one
    // length compare; for the others (per token included) a missing future changes nothing.
    const bool per_call = position.scaling().type() == RopeScalingType::dynamic_ntk &&
                          position.scaling().dynamic() == DynamicLength::call;
    if (!per_call) {
      EXPECT_LT(max_diff(lm(tgt).narrow(1, 0, 5), lm(tgt.narrow(1, 0, 5))), 1e-5);
    }
    EXPECT_GT(max_diff(lm(tgt).narrow(1, 5, 3), lm(changed).narrow(1, 5, 3)), 1e-3);
  }
}

// RoPE/NoPE interleaving (Yang et al. 2025): layers N, 2N, ... of `nope_every: N` rotate
// nothing. With the same weights (same seed, and neither encoder has parameters),
// nope_every 1 is the model without positions, a stack shorter than N is plain rotary, and
// nope_every 2 in two layers is neither.
TEST_F(Transformer, NopeLayersRotateNothing) {
  const auto tokens = torch::randint(1, 23, {2, 9});
  auto logits = [&](const PositionOptions& position, int64_t layers) {
    torch::manual_seed(7);
    LanguageModel lm(tiny_options().decoder_layers(layers).decoder_position(position));
    lm->eval();
    return lm(tokens);
  };
  const auto rotary = PositionOptions().type(PositionType::rotary);
  const auto none = PositionOptions().type(PositionType::none);
  auto nope = [&](int64_t every) { return PositionOptions(rotary).nope_every(every); };
  EXPECT_LT(max_diff(logits(nope(1), 2), logits(none, 2)), 1e-6);
  EXPECT_LT(max_diff(logits(nope(2), 1), logits(rotary, 1)), 1e-6);
  EXPECT_LT(max_diff(logits(nope(0), 2), logits(rotary, 2)), 1e-6);
  const auto mixed = logits(nope(2), 2);
  EXPECT_GT(max_diff(mixed, logits(none, 2)), 1e-3);
  EXPECT_GT(max_diff(mixed, logits(rotary, 2)), 1e-3);
}

// xPos's scales count from the middle of the call: far from position 0 (scale_base 256,
// the default at a 512 context; zeta^(40000/256) is below fp32's range) the stack stays
// finite and gives what the same tokens give at positions 0..T-1, as its logits depend on
// distances alone; decoding with a cache keeps the first call's origin.
TEST_F(Transformer, XposHoldsFarFromTheStart) {
  auto options = StackOptions()
                     .layer(LayerOptions().d_model(16).heads(2).d_ff(16).dropout(0))
                     .layers(2)
                     .causal(true)
                     .position(PositionOptions().type(PositionType::xpos).scale_base(256));
  Stack stack(options);
  stack->eval();
  const auto x = torch::randn({1, 8, 16});
  StackInputs near, far;
  near.positions = Positions(torch::arange(8));
  far.positions = Positions(torch::arange(40000, 40008));
  const auto a = stack(x, near), b = stack(x, far);
  EXPECT_TRUE(torch::isfinite(b).all().item<bool>());
  EXPECT_LT(max_diff(a, b), 1e-4);
  DecoderCache state;
  stack(x.narrow(1, 0, 5), StackInputs(), &state);
  EXPECT_EQ(state.origin, 2);  // the middle of positions 0..4
  const auto rest = stack(x.narrow(1, 5, 3), StackInputs(), &state);
  EXPECT_EQ(state.origin, 2);
  EXPECT_LT(max_diff(rest, a.narrow(1, 5, 3)), 1e-5);
}

// Source padding never changes the outputs at real tokens, alone or batched with a longer
// sentence. (Right padding of the target needs no test: the causal mask hides it already;
// TargetPadsAreMaskedAsKeys tests the target's key mask.)
TEST_F(Transformer, PaddingDoesNotChangeNonPadOutputs) {
  for (const auto& position : all_position_types()) {
    SCOPED_TRACE(to_string(position.type()));
    Seq2Seq model(tiny_options().encoder_position(position).decoder_position(position));
    model->eval();
    auto src = torch::randint(1, 23, {1, 5});
    auto tgt = torch::randint(1, 23, {1, 4});
    auto padded_src = torch::cat({src, torch::zeros({1, 3}, torch::kLong)}, 1);
    auto padded_tgt = torch::cat({tgt, torch::zeros({1, 2}, torch::kLong)}, 1);
    auto reference = model(src, tgt);
    EXPECT_LT(max_diff(reference, model(padded_src, tgt)), 1e-5);
    // ...and batching with a longer sentence is the same as decoding alone.
    auto other_src = torch::randint(1, 23, {1, 8});
    auto other_tgt = torch::randint(1, 23, {1, 6});
    auto batch = model(torch::cat({padded_src, other_src}), torch::cat({padded_tgt, other_tgt}));
    EXPECT_LT(max_diff(reference, batch.narrow(0, 0, 1).narrow(1, 0, 4)), 1e-5);
  }
}

// A pad inside the target is masked as a key: without a position encoding (the one case
// where a pad leaves the other tokens' positions untouched), [a b PAD c] gives c the output
// of [a b c], in the translator's decoder and in the language model.
TEST_F(Transformer, TargetPadsAreMaskedAsKeys) {
  const auto none = PositionOptions().type(PositionType::none);
  Seq2Seq model(tiny_options().encoder_position(none).decoder_position(none));
  LanguageModel lm(tiny_options().decoder_position(none));
  model->eval();
  lm->eval();
  auto src = torch::randint(1, 23, {1, 5});
  auto tgt = torch::randint(1, 23, {1, 3});
  auto with_pad = torch::cat({tgt.narrow(1, 0, 2), torch::zeros({1, 1}, torch::kLong), tgt.narrow(1, 2, 1)}, 1);
  EXPECT_LT(max_diff(model(src, tgt).select(1, 2), model(src, with_pad).select(1, 3)), 1e-5);
  EXPECT_LT(max_diff(lm(tgt).select(1, 2), lm(with_pad).select(1, 3)), 1e-5);
}

TEST_F(Transformer, EmbeddingIsSharedAndTiedToTheOutputProjection) {
  Seq2Seq model(tiny_options());
  // one (V, D) matrix serves source, target and the pre-softmax projection
  int64_t matrices = 0;
  for (const auto& p : model->named_parameters())
    if (p.value().sizes() == torch::IntArrayRef({23, 16})) ++matrices;
  EXPECT_EQ(matrices, 1);
  // the projection really uses it: changing the embedding row of token 5 moves its logit
  auto src = torch::randint(1, 23, {1, 4});
  auto tgt = torch::randint(1, 23, {1, 3});
  auto before = model(src, tgt).select(-1, 5).clone();
  {
    torch::NoGradGuard no_grad;
    // random, not constant: the final LayerNorm output has zero mean, so a constant
    // shift of the row would leave its logit unchanged
    model->embedding->weight[5].add_(torch::randn({16}));
  }
  EXPECT_GT(max_diff(before, model(src, tgt).select(-1, 5)), 1e-3);
  // and gradients from both uses accumulate in the one tensor
  model->zero_grad();
  model(src, tgt).sum().backward();
  EXPECT_GT(model->embedding->weight.grad().abs().sum().item<double>(), 0.0);
  // the input scale is sqrt(D)
  auto tokens = torch::tensor({{7}});
  EXPECT_LT(max_diff(model->embedding(tokens)[0][0], model->embedding->weight[7] * 4.0), 1e-6);
}

// Central finite differences in double precision against autograd.
TEST_F(Transformer, GradientsMatchFiniteDifferences) {
  for (const auto& position : all_position_types()) {
    SCOPED_TRACE(to_string(position.type()));
    Seq2Seq model(tiny_options(11)
                      .d_model(8)
                      .heads(2)
                      .d_ff(8)
                      .encoder_layers(1)
                      .decoder_layers(1)
                      .encoder_position(position)
                      .decoder_position(position)
                      .norm(NormPosition::pre));
    model->to(torch::kDouble);
    model->eval();
    // Kerple resets a parameter past its bound to the bound, where the loss has only a
    // one-sided derivative: start every parameter inside (a U(0, 1) draw may fall below 0.01).
    for (const auto& item : model->named_parameters()) {
      const auto& name = item.key();
      if (name.size() >= 2 && name[name.size() - 2] == 'r' && name.find("position.") != std::string::npos) {
        torch::NoGradGuard no_grad;
        item.value().clamp_(0.05, 1.5);
      }
    }
    auto src = torch::tensor({{3, 4, 5, 0}});
    auto tgt = torch::tensor({{2, 6, 7}});
    auto weights = torch::randn({1, 3, 11}, torch::kDouble);
    auto loss = [&] { return (model(src, tgt) * weights).sum(); };
    model->zero_grad();
    loss().backward();
    int checked = 0;
    for (auto& p : model->parameters()) {
      auto grad = p.grad().view(-1);
      for (int64_t i : {int64_t{0}, p.numel() / 2, p.numel() - 1}) {
        const double numeric = central_difference(p, i, loss);
        EXPECT_NEAR(grad[i].item<double>(), numeric, 1e-6 + 1e-5 * std::abs(numeric));
        ++checked;
      }
    }
    EXPECT_GT(checked, 60);
  }
}

// A sliding window with sinks: cached decoding (the cache keeps every key, the mask hides
// the old ones) equals recomputing the windowed prefix, and the window changes the output.
TEST_F(Transformer, WindowedCachedDecodingEqualsWindowedRecomputation) {
  for (auto type : position_types([](const PositionTraits& t) { return !t.causal_only && !t.multi_axis; })) {
    SCOPED_TRACE(to_string(type));
    auto position = PositionOptions().type(type);
    auto options = tiny_options().encoder_position(position).decoder_position(position);
    options.attention(AttentionOptions().window(3).sinks(1));
    ropelab::testing::expect_cached_decoding_matches_full(options, 1e-5);
    torch::manual_seed(0);
    LanguageModel windowed(options);
    torch::manual_seed(0);
    LanguageModel full(tiny_options().decoder_position(position));
    windowed->eval(), full->eval();
    auto tokens = torch::randint(1, options.vocab_size(), {2, 8});
    // the first 3 positions see the same keys either way; the last ones do not
    EXPECT_LT(max_diff(windowed(tokens).narrow(1, 0, 3), full(tokens).narrow(1, 0, 3)), 1e-6);
    EXPECT_GT(max_diff(windowed(tokens).narrow(1, 7, 1), full(tokens).narrow(1, 7, 1)), 1e-4);
  }
}

// Sinks at cache positions are StreamingLLM's cache (Xiao et al. 2024): with one layer, the
// output at token i equals running the model without a window on the tokens the cache keeps,
// the S sinks and the W most recent, numbered 0, 1, ... as the cache numbers them; at
// sequence positions it does not (rotary, biases of the distance, FIRE's normaliser, CoPE's
// counts over the kept keys). FIRE's threshold is small so that its normaliser grows, and
// its MLP wide enough that some of its units are live.
TEST_F(Transformer, SinksAtCachePositionsAreTheKeptTokensRecomputed) {
  std::vector<PositionOptions> types = {
      PositionOptions().type(PositionType::rotary),
      PositionOptions().type(PositionType::rotary).layout(RotaryLayout::interleaved).fraction(0.5).unrotated(0.5),
      PositionOptions()
          .type(PositionType::rotary)
          .scaling(RopeScalingOptions().type(RopeScalingType::yarn).factor(2).original_max(4)),
      PositionOptions().type(PositionType::xpos).scale_base(8),
      PositionOptions().type(PositionType::t5_bias).num_buckets(8).max_distance(16),
      PositionOptions().type(PositionType::alibi),
      PositionOptions().type(PositionType::kerple),
      PositionOptions().type(PositionType::kerple_power),
      PositionOptions().type(PositionType::fire).fire_hidden(32).fire_threshold(2),
      PositionOptions().type(PositionType::none).cope(true).cope_positions(6)};
  const int64_t T = 16, S = 2, W = 4;
  for (const auto& position : types) {
    SCOPED_TRACE(to_string(position.type()) + (position.cope() ? " + cope" : ""));
    auto options = tiny_options().decoder_position(position).decoder_layers(1).norm(NormPosition::pre);
    torch::manual_seed(0);
    LanguageModel plain(options);
    options.attention(AttentionOptions().window(W).sinks(S));
    torch::manual_seed(0);
    LanguageModel cached(options);
    options.attention(AttentionOptions().window(W).sinks(S).window_positions(WindowPositions::sequence));
    torch::manual_seed(0);
    LanguageModel sequence(options);
    plain->eval(), cached->eval(), sequence->eval();
    torch::NoGradGuard no_grad;
    auto tokens = torch::randint(1, options.vocab_size(), {2, T});
    const auto out = cached(tokens), out_sequence = sequence(tokens);
    double sequence_differs = 0;
    for (int64_t i = 0; i < T; ++i) {
      std::vector<int64_t> kept;
      for (int64_t j = 0; j <= i; ++j)
        if (j < S || j > i - W) kept.push_back(j);
      const auto recomputed = plain(tokens.index_select(1, torch::tensor(kept))).narrow(1, -1, 1);
      EXPECT_LT(max_diff(out.narrow(1, i, 1), recomputed), 1e-5) << "token " << i;
      sequence_differs = std::max(sequence_differs, max_diff(out_sequence.narrow(1, i, 1), recomputed));
    }
    if (!position.cope()) {  // CoPE counts the kept keys either way
      EXPECT_GT(sequence_differs, 1e-4);
    }
  }
}

// With a window, the caches keep the sinks and the window - 1 most recent keys between
// steps, however long decoding runs, and a logit bias follows the kept keys' positions:
// each step still equals the windowed teacher-forced pass.
TEST_F(Transformer, WindowedDecodingKeepsBoundedCaches) {
  for (auto type : {PositionType::alibi, PositionType::fire, PositionType::rotary}) {
    SCOPED_TRACE(to_string(type));
    // FIRE's threshold below the length, so that its normaliser reads the cache positions
    auto options = tiny_options().decoder_position(PositionOptions().type(type).fire_threshold(2));
    options.attention(AttentionOptions().window(4).sinks(2));
    LanguageModel lm(options);
    lm->eval();
    auto tokens = torch::randint(1, options.vocab_size(), {2, 20});
    auto full = lm(tokens);
    DecoderCache state;
    for (int64_t t = 0; t < 20; ++t) {
      EXPECT_LT(max_diff(lm(tokens.narrow(1, t, 1), &state), full.narrow(1, t, 1)), 1e-5) << "step " << t;
      const int64_t kept = std::min<int64_t>(t + 1, 2 + 4 - 1);
      for (const auto& cache : state.self) EXPECT_EQ(dynamic_cast<KeyValueCache&>(*cache).k.size(2), kept);
      if (type != PositionType::rotary) {
        EXPECT_EQ(state.key_positions.length(), kept);
      }
    }
  }
}

// Incremental decoding with caches gives the same logits as the full teacher-forced pass.
TEST_F(Transformer, CachedDecodingEqualsFullRecomputation) {
  for (const auto& position : all_position_types()) {
    SCOPED_TRACE(to_string(position.type()));
    ropelab::testing::expect_cached_decoding_matches_full(
        tiny_options().encoder_position(position).decoder_position(position), 1e-5);
  }
  // xPos and every RoPE scaling but dynamic NTK per call in the decoders
  for (const auto& position : causal_position_types()) {
    SCOPED_TRACE(to_string(position.type()) + "/" + to_string(position.scaling().type()));
    if (position.scaling().type() == RopeScalingType::dynamic_ntk &&
        position.scaling().dynamic() == DynamicLength::call)
      continue;  // its own decoding: tests/model/dynamic_ntk_decoding_test.cpp
    ropelab::testing::expect_cached_decoding_matches_full(tiny_options().decoder_position(position), 1e-5);
  }
  // pre-LN; rotary in cross-attention too (the queries of the last rows rotate at their positions)
  for (auto type : {PositionType::rotary, PositionType::alibi, PositionType::fire}) {
    SCOPED_TRACE(to_string(type) + " pre-LN");
    auto position = PositionOptions().type(type);
    ropelab::testing::expect_cached_decoding_matches_full(
        tiny_options().encoder_position(position).decoder_position(position).norm(NormPosition::pre), 1e-5);
  }
  auto cross = PositionOptions().type(PositionType::rotary).rotate_cross_attention(true);
  ropelab::testing::expect_cached_decoding_matches_full(tiny_options().encoder_position(cross).decoder_position(cross),
                                                        1e-5);
}

TEST_F(Transformer, BeamReorderKeepsCacheRowsConsistent) {
  Seq2Seq model(tiny_options());
  model->eval();
  auto src = torch::tensor({{5, 6, 7}, {9, 10, 11}});
  auto tgt = torch::randint(1, 23, {2, 3});
  auto memory = model->encode(src);
  DecoderCache state;
  model->decode(tgt.narrow(1, 0, 2), memory, &state);
  auto swap = torch::tensor({1, 0});
  state.reorder(swap);
  auto swapped_memory = memory.index_select(swap);
  auto step = model->decode(tgt.index_select(0, swap).narrow(1, 2, 1), swapped_memory, &state);
  auto full = model(src.index_select(0, swap), tgt.index_select(0, swap));
  EXPECT_LT(max_diff(step, full.narrow(1, 2, 1)), 1e-5);
}

TEST_F(Transformer, HeadsMustDivideDModel) {
  auto message = ropelab::testing::error_of([] { Seq2Seq(tiny_options().heads(3)); });
  EXPECT_NE(message.find("heads (3) must divide d_model (16)"), std::string::npos) << message;
}

TEST_F(Transformer, CudaMatchesCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const auto& position : all_position_types()) {
    SCOPED_TRACE(to_string(position.type()));
    Seq2Seq model(tiny_options().encoder_position(position).decoder_position(position));
    model->eval();
    auto src = torch::randint(1, 23, {2, 6});
    auto tgt = torch::randint(1, 23, {2, 5});
    auto cpu = model(src, tgt);
    model->to(torch::kCUDA);
    EXPECT_LT(max_diff(model(src.cuda(), tgt.cuda()).cpu(), cpu), 1e-4);
  }
}

TEST_F(Transformer, DropoutKeepsOneMinusPScalesAndMatchesItsGradient) {
  Dropout dropout(0.3);
  dropout->train();
  auto x = torch::ones({1000, 100}, torch::TensorOptions().requires_grad(true));
  auto y = dropout(x);
  const double kept = y.ne(0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.7, 0.005);  // 100k Bernoulli(0.7) draws: sd 0.0014
  EXPECT_NEAR(y.max().item<double>(), 1.0 / 0.7, 1e-6);
  // the gradient uses the same mask and scale as the forward pass
  auto g = torch::autograd::grad({(y * 2.0).sum()}, {x})[0];
  EXPECT_TRUE(torch::allclose(g, y.detach() * 2.0));
  // reproducible under torch::manual_seed, different otherwise
  torch::manual_seed(5);
  auto a = dropout(x);
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(a, dropout(x)));
  EXPECT_FALSE(torch::equal(a, dropout(x)));
  EXPECT_EQ(dropout->drops, 4);  // every training call above (bench train counts drops with it)
  dropout->eval();
  EXPECT_TRUE(torch::equal(dropout(x), x));
  EXPECT_EQ(dropout->drops, 4);
}
