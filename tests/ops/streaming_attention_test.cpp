// Streaming attention, the CPU kernel and its chunked form in ATen operations, against a
// float64 golden run written from the definition (ATen ops on the whole score matrix) and
// against the materialized kernel: outputs and the gradients of q, k, v and of every
// position bias's parameters (the forget gate's among them), over masks (causal, padding, Tq != Tk, sliding windows
// with sinks, rows that see no key), tile and chunk sizes that do not divide the lengths, both CPU builds and float /
// double.
#include "ropelab/ops/attention/streaming_attention.h"

#include <cmath>

#include "kernel_builds.h"
#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/ops/attention/fused_attention.h"
#include "ropelab/position/encoders.h"

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

enum class BiasKind { none, table, alibi, kerple_log, kerple_power, t5, fire, fire_tiles, forget, dense };

const char* name_of(BiasKind kind) {
  switch (kind) {
    case BiasKind::none:
      return "none";
    case BiasKind::table:
      return "table";
    case BiasKind::alibi:
      return "alibi";
    case BiasKind::kerple_log:
      return "kerple";
    case BiasKind::kerple_power:
      return "kerple_power";
    case BiasKind::t5:
      return "t5";
    case BiasKind::fire:
      return "fire";
    case BiasKind::fire_tiles:
      return "fire per tile";
    case BiasKind::forget:
      return "forget gate";
    case BiasKind::dense:
      return "dense";
  }
  return "?";
}

struct Shape {
  int64_t B, H, Tq, Tk, Dh;
};

/// A bias of one kind for `shape`: the kernel's form (a relative table or a dense tensor),
/// the (1|B, H, Tq, Tk) tensor the golden run adds, and the tensors to differentiate.
struct BiasCase {
  torch::Tensor relative, dense, golden;
  FireTileBias fire;     // FIRE's factored form: the streaming kernel evaluates it per tile
  torch::Tensor forget;  // a forget gate's cumulative log values (B, H, Tk)
  std::vector<torch::Tensor> parameters;
  // what the golden run differentiates: the parameters, or a float64 twin's
  std::vector<torch::Tensor> golden_parameters;
  std::shared_ptr<PositionEncoderImpl> encoder, twin;  // keep the parameters alive
};

/// A float64 copy of `encoder` (the same parameter and buffer values), made with the same
/// options: the golden run takes its bias from the copy, so that the gradients of the bias's
/// parameters are summed over the logits in float64 too. Through the float encoder's own
/// graph they would be rounded as the kernels' are, and no error could be told apart.
std::shared_ptr<PositionEncoderImpl> float64_twin(PositionEncoderImpl& encoder, const PositionOptions& options,
                                                  const PositionGeometry& geometry) {
  auto twin = make_position_encoder(options, geometry);
  twin->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  auto parameters = encoder.named_parameters(), buffers = encoder.named_buffers();
  for (auto& p : twin->named_parameters()) p.value().copy_(parameters[p.key()]);
  for (auto& b : twin->named_buffers()) b.value().copy_(buffers[b.key()]);
  return twin;
}

/// relative (H, Tq + Tk - 1) -> (1, H, Tq, Tk): query i and key j read column j - i + Tq - 1.
torch::Tensor expand_relative(const torch::Tensor& relative, int64_t Tq, int64_t Tk) {
  auto column = torch::arange(Tk).unsqueeze(0) - torch::arange(Tq).unsqueeze(1) + (Tq - 1);
  return relative.index_select(1, column.flatten()).view({1, relative.size(0), Tq, Tk});
}

BiasCase make_bias(BiasKind kind, const Shape& s, bool causal, torch::Dtype dtype) {
  BiasCase c;
  const PositionGeometry geometry{s.H * s.Dh, s.H, causal};
  const auto keys = Positions::range(0, s.Tk, 1, torch::kCPU),
             queries = Positions::range(s.Tk - s.Tq, s.Tq, 1, torch::kCPU);
  // an encoder in dtype, and the golden bias from its float64 twin's dense logit_bias
  auto encoder_of = [&](const PositionOptions& options) {
    c.encoder = make_position_encoder(options, geometry);
    c.encoder->to(dtype);
    for (auto& p : c.encoder->parameters()) c.parameters.push_back(p);
    c.twin = float64_twin(*c.encoder, options, geometry);
    c.golden_parameters = c.twin->parameters();
    c.golden = c.twin->logit_bias(queries, keys);
  };
  auto table_of = [&](PositionType type) {
    encoder_of(PositionOptions().type(type));
    c.relative = relative_bias_table(*c.encoder, s.Tq, s.Tk, torch::kCPU);
  };
  switch (kind) {
    case BiasKind::none:
      return c;
    case BiasKind::table:
      c.relative = torch::randn({s.H, s.Tq + s.Tk - 1}, torch::TensorOptions().dtype(dtype).requires_grad(true));
      c.parameters.push_back(c.relative);
      break;
    case BiasKind::alibi:
      table_of(PositionType::alibi);
      break;
    case BiasKind::kerple_log:
      table_of(PositionType::kerple);
      break;
    case BiasKind::kerple_power:
      table_of(PositionType::kerple_power);
      break;
    case BiasKind::t5:
      table_of(PositionType::t5_bias);
      break;
    case BiasKind::fire:
    case BiasKind::fire_tiles: {
      encoder_of(PositionOptions().type(PositionType::fire).fire_threshold(4.0));
      // the kernels take the encoder's dense bias, or (per tile) its factored form
      if (kind == BiasKind::fire_tiles)
        c.fire = c.encoder->factored_bias(s.Tq, s.Tk);
      else
        c.dense = c.encoder->logit_bias(queries, keys).contiguous();
      break;
    }
    case BiasKind::forget: {
      // log f_l of gates f = sigmoid(x); the golden bias of query i (key a) and key j is
      // written as the sum of log f_l over l in (j, a] (minus that over (a, j] when j > a)
      auto x = torch::randn({s.B, s.H, s.Tk}, torch::TensorOptions().dtype(dtype).requires_grad(true));
      c.parameters.push_back(x);
      c.forget = torch::log_sigmoid(x).cumsum(-1);
      const auto l = torch::arange(s.Tk).view({1, 1, s.Tk}), j = torch::arange(s.Tk).view({1, s.Tk, 1});
      const auto a = (torch::arange(s.Tq) + (s.Tk - s.Tq)).view({s.Tq, 1, 1});
      const auto between =
          ((j < l) & (l <= a)).to(torch::kDouble) - ((a < l) & (l <= j)).to(torch::kDouble);  // (Tq, Tk, Tk)
      c.golden = torch::einsum("bhl,ijl->bhij", {torch::log_sigmoid(x.to(torch::kDouble)), between});
      break;
    }
    case BiasKind::dense:
      c.dense = torch::randn({s.B, s.H, s.Tq, s.Tk}, torch::TensorOptions().dtype(dtype).requires_grad(true));
      c.parameters.push_back(c.dense);
      break;
  }
  if (!c.golden.defined()) c.golden = c.relative.defined() ? expand_relative(c.relative, s.Tq, s.Tk) : c.dense;
  if (!c.twin) c.golden_parameters = c.parameters;
  return c;
}

/// Whether query i sees key j, written from the definition (ops/attention/key_visibility.h).
torch::Tensor hidden_mask(const Shape& s, const torch::Tensor& pad, bool causal, int64_t window, int64_t sinks) {
  auto hidden = torch::zeros({s.B, 1, s.Tq, s.Tk}, torch::kBool);
  auto h = hidden.accessor<bool, 4>();
  const auto padded = pad.defined() ? pad.contiguous() : torch::zeros({s.B, s.Tk}, torch::kBool);
  const auto p = padded.accessor<bool, 2>();
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t i = 0; i < s.Tq; ++i)
      for (int64_t j = 0; j < s.Tk; ++j) {
        const int64_t a = i + s.Tk - s.Tq;
        bool hide = causal && j > a;
        if (window > 0 && j >= sinks && std::abs(a - j) >= window) hide = true;
        if (p[b][j]) hide = true;
        h[b][0][i][j] = hide;
      }
  return hidden;
}

/// softmax(q k^T / sqrt(Dh) + bias, hidden keys excluded) v in the inputs' dtype; a query
/// that sees no key gets zeros.
torch::Tensor golden(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& bias,
                     const torch::Tensor& hidden) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  if (bias.defined()) scores = scores + bias;
  auto probs = torch::softmax(scores.masked_fill(hidden, -1e30), -1);
  probs = probs.masked_fill(hidden.all(-1, true), 0.0);
  return torch::matmul(probs, v);
}

struct Case {
  Shape shape;
  bool causal;
  int64_t window, sinks;
  bool padded;
  StreamingTiles tiles;
};

std::string describe(const Case& c, BiasKind kind) {
  const auto& s = c.shape;
  return std::string(name_of(kind)) + " B=" + std::to_string(s.B) + " H=" + std::to_string(s.H) +
         " Tq=" + std::to_string(s.Tq) + " Tk=" + std::to_string(s.Tk) + (c.causal ? " causal" : " full") +
         " window=" + std::to_string(c.window) + " sinks=" + std::to_string(c.sinks) + (c.padded ? " padded" : "") +
         " tiles=" + std::to_string(c.tiles.queries) + "x" + std::to_string(c.tiles.keys);
}

class StreamingAttentionKernel : public ropelab::testing::KernelTest {
 protected:
  /// Runs one case: streaming and materialized in dtype(), golden in double, outputs and
  /// gradients of q, k, v and the bias's parameters compared.
  void check(const Case& c, BiasKind kind) {
    SCOPED_TRACE(describe(c, kind));
    const auto& s = c.shape;
    const auto opts = options().requires_grad(true);
    auto q = torch::randn({s.B, s.H, s.Tq, s.Dh}, opts), k = torch::randn({s.B, s.H, s.Tk, s.Dh}, opts),
         v = torch::randn({s.B, s.H, s.Tk, s.Dh}, opts);
    torch::Tensor pad;
    if (c.padded) {  // batch row 0: the last two keys and key 1; the others none
      pad = torch::zeros({s.B, s.Tk}, torch::kBool);
      pad[0].narrow(0, s.Tk - std::min<int64_t>(2, s.Tk), std::min<int64_t>(2, s.Tk)).fill_(true);
      if (s.Tk > 3) pad[0][1] = true;
    }
    auto bias = make_bias(kind, s, c.causal, dtype());
    auto w = torch::randn({s.B, s.H, s.Tq, s.Dh}, options());
    std::vector<torch::Tensor> inputs{q, k, v}, golden_inputs{q, k, v};
    for (const auto& p : bias.parameters) inputs.push_back(p);
    for (const auto& p : bias.golden_parameters) golden_inputs.push_back(p);
    ASSERT_EQ(inputs.size(), golden_inputs.size());

    const KeyVisibility vis{c.causal, c.window, c.sinks};
    const ScoreBias score{bias.dense, bias.relative, bias.fire, bias.forget};
    ASSERT_TRUE(streaming_attention_available(q, k, v, score));
    ASSERT_TRUE(chunked_attention_available(q, k, v, score));
    auto streaming = streaming_attention_cpu(q, k, v, pad, score, {vis, c.tiles});
    // the chunked form: in the case's tile sizes, or (default tiles) with the query chunk
    // taken from a small budget, so that every case has several chunks each way
    const bool default_tiles = c.tiles.queries == StreamingTiles{}.queries && c.tiles.keys == StreamingTiles{}.keys;
    const AttentionChunks chunks =
        default_tiles ? AttentionChunks{0, 128, 4096} : AttentionChunks{c.tiles.queries, c.tiles.keys, 1 << 24};
    auto chunked = chunked_attention(q, k, v, pad, score, {vis, {}, chunks});
    // the materialized kernel takes FIRE and the forget gate as one dense bias (ScoreBias::to_dense)
    auto materialized = fused_attention_cpu(q, k, v, pad, score, {vis});
    auto gold = golden(q.to(torch::kDouble), k.to(torch::kDouble), v.to(torch::kDouble),
                       bias.golden.defined() ? bias.golden.to(torch::kDouble) : torch::Tensor(),
                       hidden_mask(s, pad, c.causal, c.window, c.sinks));
    auto grads = [&](const torch::Tensor& out, const std::vector<torch::Tensor>& of = {}) {
      return torch::autograd::grad({(out * w.to(out.scalar_type())).sum()}, of.empty() ? inputs : of, {},
                                   /*retain_graph=*/true, false, /*allow_unused=*/true);
    };
    const auto g_stream = grads(streaming), g_chunk = grads(chunked), g_mat = grads(materialized),
               g_gold = grads(gold, golden_inputs);
    expect_close(streaming, materialized, gold, "output");
    expect_close(chunked, materialized, gold, "chunked output");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!g_gold[i].defined()) continue;  // a parameter the bias does not use here
      ASSERT_TRUE(g_stream[i].defined()) << "input " << i;
      ASSERT_TRUE(g_chunk[i].defined()) << "chunked, input " << i;
      // a bias parameter's gradient sums over up to every logit; q's, k's and v's over a row or column
      const int64_t summed = i < 3 ? 0 : s.B * s.H * s.Tq * s.Tk;
      expect_close(g_stream[i], g_mat[i], g_gold[i], "gradient of input " + std::to_string(i), summed);
      expect_close(g_chunk[i], g_mat[i], g_gold[i], "chunked gradient of input " + std::to_string(i), summed);
    }
  }

  /// fp64: the kernel equals the golden run to rounding. fp32: its mean error against the
  /// golden run is at most 4x the materialized kernel's, plus a floor of float rounding.
  /// `summed` > 0: each value is a sum over that many logits, which the kernels accumulate in
  /// their own order (tile by tile) and ATen's materialized backward pairwise, so the floor is
  /// the bound of a sequential float sum, summed * 2^-24 relative (the double runs hold these
  /// gradients to 1e-10).
  void expect_close(const torch::Tensor& streaming, const torch::Tensor& materialized, const torch::Tensor& gold,
                    const std::string& what, int64_t summed = 0) {
    ASSERT_TRUE(torch::isfinite(streaming).all().item<bool>()) << what;
    if (dtype() == torch::kDouble) {
      EXPECT_LT(max_diff(streaming, gold), 1e-10) << what;
      return;
    }
    const auto g = gold.to(torch::kDouble);
    const double mine = (streaming.to(torch::kDouble) - g).abs().mean().item<double>();
    const double reference = (materialized.to(torch::kDouble) - g).abs().mean().item<double>();
    const double floor = std::max(2e-6, static_cast<double>(summed) * std::ldexp(1.0, -24)) *
                         std::max(1.0, g.abs().max().item<double>());
    EXPECT_LE(mine, 4 * reference + floor) << what << ": streaming " << mine << ", materialized " << reference;
    EXPECT_LT(max_diff(streaming, g), 1e-3) << what;
  }
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // several tiles each way, lengths no tile divides, Tq < Tk as in cached decoding
      {{2, 3, 13, 13, 8}, false, 0, 0, true, {4, 8}},
      {{2, 3, 13, 13, 8}, true, 0, 0, true, {4, 8}},
      {{2, 2, 11, 19, 8}, true, 0, 0, false, {4, 8}},
      {{2, 2, 11, 19, 8}, false, 0, 0, true, {3, 5}},
      // sliding windows, with and without sinks, causal and not
      {{1, 2, 37, 37, 8}, true, 5, 0, false, {4, 8}},
      {{1, 2, 37, 37, 8}, true, 6, 2, true, {4, 8}},
      {{2, 2, 23, 30, 8}, false, 4, 3, false, {5, 4}},
      // one query (a decoding step), one token, rows that see no key (Tq > Tk, causal)
      {{2, 2, 1, 17, 8}, true, 0, 0, true, {4, 8}},
      {{1, 1, 1, 1, 8}, true, 0, 0, false, {4, 8}},
      {{1, 2, 9, 4, 8}, true, 0, 0, false, {4, 8}},
      // the default tiles, B x H below the thread count (the backward splits query tiles)
      {{1, 1, 300, 300, 16}, true, 0, 0, false, {}},
      {{1, 2, 130, 260, 16}, false, 0, 0, true, {}},
  };
  return all;
}

}  // namespace

TEST_P(StreamingAttentionKernel, MatchesTheGoldenRunWithoutBias) {
  for (const auto& c : cases()) check(c, BiasKind::none);
}

TEST_P(StreamingAttentionKernel, MatchesTheGoldenRunWithEveryBias) {
  for (auto kind : {BiasKind::table, BiasKind::alibi, BiasKind::kerple_log, BiasKind::kerple_power, BiasKind::t5,
                    BiasKind::fire, BiasKind::fire_tiles, BiasKind::forget, BiasKind::dense})
    for (const auto& c : cases())
      // the large cases run without bias; a forget gate needs every query aligned with a key
      if (c.shape.Tq * c.shape.Tk <= 2000 && (kind != BiasKind::forget || c.shape.Tq <= c.shape.Tk)) check(c, kind);
}

// The forget gate's cumulative values grow without bound along a sequence (about -0.7 per
// token at initialisation): the kernels add c[a] - c[j], whose float rounding is that of the
// difference, not of c[j] next to logits of order 1. Offsets of -1e4 and -1e5 change the output by
// float rounding of the difference alone.
TEST_P(StreamingAttentionKernel, ForgetGateStaysExactFarAlongTheSequence) {
  if (dtype() != torch::kFloat) GTEST_SKIP() << "a property of float rounding";
  const int64_t B = 1, H = 2, T = 50, Dh = 8;
  auto q = torch::randn({B, H, T, Dh}, options()), k = torch::randn({B, H, T, Dh}, options()),
       v = torch::randn({B, H, T, Dh}, options());
  const auto steps = torch::log_sigmoid(torch::randn({B, H, T}, options()) + 3);  // slow decay
  for (double offset : {-1e4, -1e5}) {
    const auto forget = (steps.cumsum(-1).to(torch::kDouble) + offset).to(torch::kFloat);  // what the kernels get
    const auto c = forget.to(torch::kDouble);
    const auto gold = golden(q.to(torch::kDouble), k.to(torch::kDouble), v.to(torch::kDouble),
                             c.unsqueeze(-1) - c.unsqueeze(-2), hidden_mask({B, H, T, T, Dh}, {}, true, 0, 0));
    const KeyVisibility causal{true};
    ScoreBias bias;
    bias.forget = forget;
    EXPECT_LT(max_diff(streaming_attention_cpu(q, k, v, {}, bias, {causal, {8, 16}}), gold), 1e-5) << offset;
    EXPECT_LT(max_diff(chunked_attention(q, k, v, {}, bias, {causal, {}, {8, 16, 1 << 20}}), gold), 1e-5) << offset;
  }
}

// Keys outside a query's window change nothing in its output.
TEST_P(StreamingAttentionKernel, KeysBeyondTheWindowChangeNothing) {
  const int64_t T = 40, W = 7, S = 2;
  auto q = torch::randn({1, 2, T, 8}, options()), k = torch::randn({1, 2, T, 8}, options()),
       v = torch::randn({1, 2, T, 8}, options());
  const KeyVisibility vis{true, W, S};
  auto before = streaming_attention_cpu(q, k, v, {}, {}, {vis, {8, 8}});
  // keys [S, 20) are outside the windows of queries 20 + W - 1 = 26 and later
  auto k2 = k.clone(), v2 = v.clone();
  k2.narrow(2, S, 20 - S).normal_();
  v2.narrow(2, S, 20 - S).normal_();
  auto after = streaming_attention_cpu(q, k2, v2, {}, {}, {vis, {8, 8}});
  EXPECT_EQ(max_diff(before.narrow(2, 26, T - 26), after.narrow(2, 26, T - 26)), 0.0);
  EXPECT_GT(max_diff(before.narrow(2, 0, 26), after.narrow(2, 0, 26)), 1e-3);  // earlier queries do see them
  // the sinks stay visible: changing key 0 changes the last query
  auto k3 = k.clone();
  k3.narrow(2, 0, 1).normal_();
  EXPECT_GT(max_diff(before.narrow(2, T - 1, 1),
                     streaming_attention_cpu(q, k3, v, {}, {}, {vis, {8, 8}}).narrow(2, T - 1, 1)),
            1e-4);
}

INSTANTIATE_TEST_SUITE_P(Ops, StreamingAttentionKernel,
                         ::testing::ValuesIn(ropelab::testing::kernel_cases({torch::kFloat, torch::kDouble})),
                         ropelab::testing::kernel_case_name);

// Finite differences in double: the backward's directional derivative in q, k, v and a
// relative table equals (f(x + e d) - f(x - e d)) / 2e, with a causal window and padding.
TEST(StreamingAttention, GradientsMatchFiniteDifferences) {
  torch::manual_seed(0);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto q = torch::randn({2, 2, 9, 4}, opts), k = torch::randn({2, 2, 11, 4}, opts),
       v = torch::randn({2, 2, 11, 4}, opts), table = torch::randn({2, 9 + 11 - 1}, opts);
  auto pad = torch::zeros({2, 11}, torch::kBool);
  pad[1][10] = true;
  const KeyVisibility vis{true, 5, 1};
  auto w = torch::randn({2, 2, 9, 4}, opts);
  auto f = [&](const std::vector<torch::Tensor>& x) {
    ScoreBias bias;
    bias.relative = x[3];
    return (streaming_attention_cpu(x[0], x[1], x[2], pad, bias, {vis, {4, 3}}) * w).sum();
  };
  std::vector<torch::Tensor> x{q, k, v, table};
  std::vector<torch::Tensor> leaves;
  for (auto& t : x) leaves.push_back(t.clone().requires_grad_(true));
  auto grads = torch::autograd::grad({f(leaves)}, leaves);
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<torch::Tensor> d, plus, minus;
    for (auto& t : x) d.push_back(torch::randn_like(t));
    const double e = 1e-6;
    for (size_t i = 0; i < x.size(); ++i) plus.push_back(x[i] + e * d[i]), minus.push_back(x[i] - e * d[i]);
    const double numeric = (f(plus) - f(minus)).item<double>() / (2 * e);
    double analytic = 0;
    for (size_t i = 0; i < x.size(); ++i) analytic += (grads[i] * d[i]).sum().item<double>();
    EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)));
  }
}

// A query that sees no key (every key padded) gets zeros, and finite gradients.
TEST(StreamingAttention, RowsWithoutVisibleKeysGiveZero) {
  torch::manual_seed(0);
  auto q = torch::randn({2, 1, 5, 8}).requires_grad_(true), k = torch::randn({2, 1, 5, 8}),
       v = torch::randn({2, 1, 5, 8});
  auto pad = torch::zeros({2, 5}, torch::kBool);
  pad[0].fill_(true);
  auto out = streaming_attention_cpu(q, k, v, pad, {}, {KeyVisibility{true}, {2, 2}});
  EXPECT_EQ(out[0].abs().max().item<double>(), 0.0);
  EXPECT_GT(out[1].abs().max().item<double>(), 0.0);
  auto g = torch::autograd::grad({out.sum()}, {q})[0];
  EXPECT_TRUE(torch::isfinite(g).all().item<bool>());
  EXPECT_EQ(g[0].abs().max().item<double>(), 0.0);
}

TEST(StreamingAttention, RejectsWhatItCannotRun) {
  auto q = torch::randn({1, 1, 4, 8});
  EXPECT_FALSE(streaming_attention_available(q.to(torch::kBFloat16), q.to(torch::kBFloat16), q.to(torch::kBFloat16)));
  auto relative = [](torch::Tensor t) { return ScoreBias{{}, std::move(t)}; };
  auto forget = [](torch::Tensor t) { return ScoreBias{{}, {}, {}, std::move(t)}; };
  EXPECT_FALSE(streaming_attention_available(q, q, q, relative(torch::randn({1, 6}))));  // needs Tq + Tk - 1 = 7
  EXPECT_TRUE(streaming_attention_available(q, q, q, forget(torch::randn({1, 1, 4}))));
  EXPECT_FALSE(streaming_attention_available(q, q, q, forget(torch::randn({1, 1, 5}))));  // one value per key
  EXPECT_FALSE(streaming_attention_available(q, q.narrow(2, 0, 3), q.narrow(2, 0, 3),
                                             forget(torch::randn({1, 1, 3}))));  // a query without a key
  EXPECT_NE(ropelab::testing::error_of([&] {
              streaming_attention_cpu(q, q, q, {}, {}, {KeyVisibility{}, {0, 4}});
            }).find("tile sizes must be positive, got 0 x 4"),
            std::string::npos);
}

TEST(ChunkedAttention, RejectsWhatItCannotRun) {
  auto q = torch::randn({2, 1, 4, 8});
  const auto integer = q.to(torch::kInt);
  EXPECT_TRUE(chunked_attention_available(q, q, q));
  EXPECT_FALSE(chunked_attention_available(integer, integer, integer));
  const auto half = q.to(torch::kBFloat16);  // computed in float; a bias in float or in bf16, not double
  EXPECT_TRUE(chunked_attention_available(half, half, half, ScoreBias{{}, torch::randn({1, 7})}));
  EXPECT_FALSE(chunked_attention_available(half, half, half, ScoreBias{{}, torch::randn({1, 7}, torch::kDouble)}));
  EXPECT_FALSE(chunked_attention_available(q, q, q, ScoreBias{{}, torch::randn({1, 7}, torch::kBFloat16)}));
  EXPECT_FALSE(chunked_attention_available(q, q, q, ScoreBias{{}, torch::randn({1, 6})}));  // needs Tq + Tk - 1 = 7
  EXPECT_FALSE(chunked_attention_available(q, q[0].unsqueeze(0), q[0].unsqueeze(0)));       // k of another batch
  EXPECT_FALSE(chunked_attention_available(q, q, q.to(torch::kDouble)));
  EXPECT_NE(ropelab::testing::error_of([&] {
              chunked_attention(q, q, q, {}, {}, {KeyVisibility{}, {}, {4, 0}});
            }).find("chunk sizes must be positive, got 4 x 0"),
            std::string::npos);
  EXPECT_NE(ropelab::testing::error_of([&] {
              chunked_attention(integer, integer, integer, {});
            }).find("chunked_attention: needs floating q, k, v"),
            std::string::npos);
}

// fp16 and bf16 are computed in float, chunk by chunk: against the double run of the same
// rounded inputs, causal with a window, sinks and padding, a relative table in float (as the
// position encoders give it) and the gradients of q, k, v and the table.
TEST(ChunkedAttention, HalfPrecisionIsComputedInFloat) {
  torch::manual_seed(0);
  const int64_t B = 2, H = 2, Tq = 13, Tk = 19, Dh = 8;
  auto pad = torch::zeros({B, Tk}, torch::kBool);
  pad[1][Tk - 1] = true;
  const KernelOptions options{KeyVisibility{true, 9, 2}, {}, {5, 7, 1 << 24}};
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    auto rounded = [&](std::vector<int64_t> shape) { return torch::randn(shape).to(dtype).to(torch::kDouble); };
    const auto q = rounded({B, H, Tq, Dh}), k = rounded({B, H, Tk, Dh}), v = rounded({B, H, Tk, Dh});
    const auto table = torch::randn({H, Tq + Tk - 1}, torch::kDouble), w = torch::randn({B, H, Tq, Dh}, torch::kDouble);
    auto run = [&](torch::Dtype type, torch::Dtype table_type) {
      std::vector<torch::Tensor> leaves;
      for (const auto& t : {q, k, v}) leaves.push_back(t.to(type).requires_grad_(true));
      leaves.push_back(table.to(table_type).requires_grad_(true));
      const auto out = chunked_attention(leaves[0], leaves[1], leaves[2], pad, ScoreBias{{}, leaves[3]}, options);
      EXPECT_EQ(out.scalar_type(), type);
      std::vector<torch::Tensor> result{out.detach().to(torch::kDouble)};
      for (const auto& g : torch::autograd::grad({(out.to(torch::kDouble) * w).sum()}, leaves))
        result.push_back(g.to(torch::kDouble));
      return result;
    };
    const auto expected = run(torch::kDouble, torch::kDouble), got = run(dtype, torch::kFloat);
    for (size_t i = 0; i < got.size(); ++i)  // the output and the input gradients rounded once to the type
      EXPECT_LT(max_diff(got[i], expected[i]), 1e-2 * std::max(1.0, expected[i].abs().max().item<double>()))
          << (i == 0 ? "output" : "gradient " + std::to_string(i - 1));
  }
}

// The query chunk: as given, or the most rows whose scores over B x H x keys fit the budget
// (a multiple of 64 from 64 on), never more than Tq.
TEST(ChunkedAttention, QueryChunkFollowsTheBudget) {
  EXPECT_EQ(chunk_queries({16, 1024, 1 << 24}, 12, 4096, 4096), 16);
  EXPECT_EQ(chunk_queries({16, 1024, 1 << 24}, 12, 10, 4096), 10);
  EXPECT_EQ(chunk_queries({0, 1024, 1 << 24}, 12, 131072, 131072), 1344);  // 16777216 / 12288 = 1365.3
  EXPECT_EQ(chunk_queries({0, 1024, 1 << 24}, 12, 1000, 131072), 1000);
  EXPECT_EQ(chunk_queries({0, 1024, 1 << 24}, 12, 131072, 100), 13952);  // keys: at most Tk = 100
  EXPECT_EQ(chunk_queries({0, 128, 4096}, 2, 300, 300), 16);
  EXPECT_EQ(chunk_queries({0, 1024, 1000}, 12, 300, 300), 1);
}
