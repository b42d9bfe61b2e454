// The softmax attention backend against a direct evaluation of its definition.
#include "ropelab/attention/backend.h"

#include "../test_util.h"
#include "ropelab/attention/contextual.h"
#include "ropelab/attention/softmax.h"
#include "ropelab/position/position_encoder.h"

using namespace ropelab;
using ropelab::testing::max_diff;

namespace {

class Attention : public ropelab::testing::Seeded {};

/// softmax(q k^T / sqrt(d) + bias) v, row by row, skipping hidden keys entirely.
torch::Tensor reference(const AttentionInputs& in) {
  auto q = in.q.to(torch::kDouble), k = in.k.to(torch::kDouble), v = in.v.to(torch::kDouble);
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2);
  auto out = torch::zeros_like(q);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i) {
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < Tk; ++j) {
          if (in.causal && j > i + Tk - Tq) continue;
          if (in.key_padding_mask.defined() && in.key_padding_mask[b][j].item<bool>()) continue;
          keys.push_back(j);
        }
        auto idx = torch::tensor(keys);
        auto scores = torch::matmul(k[b][h].index_select(0, idx), q[b][h][i]) / std::sqrt(double(q.size(3)));
        if (in.logit_bias.defined())
          scores =
              scores +
              in.logit_bias.to_dense(Tq, Tk).to(torch::kDouble).expand({B, H, Tq, Tk})[b][h][i].index_select(0, idx);
        out[b][h][i] = torch::matmul(torch::softmax(scores, 0), v[b][h].index_select(0, idx));
      }
  return out;
}

}  // namespace

TEST_F(Attention, SoftmaxMatchesDefinitionWithMasksAndBias) {
  SoftmaxAttention attention(AttentionOptions{});
  AttentionInputs in{
      torch::randn({2, 3, 5, 8}), torch::randn({2, 3, 7, 8}),
      torch::randn({2, 3, 7, 8}), torch::tensor({{0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0}}).to(torch::kBool),
      torch::randn({1, 3, 5, 7}), false};
  EXPECT_LT(max_diff(attention.forward(in), reference(in)), 1e-5);
  in.causal = true;  // Tk > Tq: query i sees keys up to i + 2
  in.key_padding_mask = torch::Tensor();
  EXPECT_LT(max_diff(attention.forward(in), reference(in)), 1e-5);
}

TEST_F(Attention, CausalMaskAlignsQueriesWithTheLastKeys) {
  auto mask = causal_mask(2, 4, torch::kCPU);
  auto expected = torch::tensor({{0, 0, 0, 1}, {0, 0, 0, 0}}).to(torch::kBool);
  EXPECT_TRUE(torch::equal(mask, expected));
}

TEST_F(Attention, FullyMaskedRowsStayFinite) {
  SoftmaxAttention attention(AttentionOptions{});
  AttentionInputs in{torch::randn({1, 1, 2, 4}),
                     torch::randn({1, 1, 2, 4}),
                     torch::randn({1, 1, 2, 4}),
                     torch::ones({1, 2}, torch::kBool),
                     {},
                     false};
  EXPECT_TRUE(torch::isfinite(attention.forward(in)).all().item<bool>());
}

TEST_F(Attention, DropoutOnlyInTraining) {
  SoftmaxAttention attention(AttentionOptions().dropout(0.5));
  AttentionInputs in{torch::randn({1, 2, 6, 4}), torch::randn({1, 2, 6, 4}), torch::randn({1, 2, 6, 4}), {}, {}, false};
  attention.eval();
  EXPECT_LT(max_diff(attention.forward(in), reference(in)), 1e-5);
  attention.train();
  EXPECT_GT(max_diff(attention.forward(in), reference(in)), 1e-3);
}

#include "ropelab/ops/attention/fused_attention.h"

// The fused CPU kernel against the ATen path: outputs and all three gradients, in double,
// with padding, causal masks (Tk > Tq as in cached decoding) and strided inputs.
TEST_F(Attention, FusedKernelMatchesAtenPathWithGradients) {
  SoftmaxAttention attention(AttentionOptions{});
  for (bool causal : {false, true}) {
    for (bool padded : {false, true}) {
      SCOPED_TRACE(std::string(causal ? "causal" : "full") + (padded ? " padded" : ""));
      // q, k, v as strided views of one (B, T, 3, H, Dh) projection, like MultiHeadAttention's
      auto qkv = torch::randn({2, 7, 3, 3, 8}, torch::TensorOptions().dtype(torch::kDouble).requires_grad(true));
      auto views = qkv.permute({2, 0, 3, 1, 4}).unbind(0);
      auto q = views[0].narrow(2, 2, 5);  // Tq = 5, Tk = 7
      auto k = views[1], v = views[2];
      ASSERT_TRUE(fused_attention_available(q, k, v));
      auto pad =
          padded ? torch::tensor({{0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0}}).to(torch::kBool) : torch::Tensor();
      AttentionInputs in{q, k, v, pad, {}, causal};
      auto weights = torch::randn({2, 3, 5, 8}, torch::kDouble);
      auto fused = fused_attention_cpu(q, k, v, pad, {}, {KeyVisibility{causal}});
      auto g_fused = torch::autograd::grad({(fused * weights).sum()}, {qkv})[0];
      auto reference = attention.reference_forward(in);
      auto g_ref = torch::autograd::grad({(reference * weights).sum()}, {qkv})[0];
      EXPECT_LT(max_diff(fused, reference), 1e-12);
      EXPECT_LT(max_diff(g_fused, g_ref), 1e-12);
    }
  }
}

// A position encoder's bias inside the fused kernel: a relative table (T5, ALiBi, Kerple)
// and a dense bias (FIRE), per batch or shared, against the ATen path with the gradients of
// q, k, v and the bias itself, in double; Tq < Tk as in cached decoding.
TEST_F(Attention, FusedKernelAddsLogitBiasesWithTheirGradients) {
  SoftmaxAttention attention(AttentionOptions{});
  const auto opts = torch::TensorOptions().dtype(torch::kDouble).requires_grad(true);
  for (const char* form : {"relative", "dense shared", "dense per batch", "dense strided", "both"}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(form) + (causal ? " causal" : ""));
      auto q = torch::randn({2, 3, 5, 8}, opts), k = torch::randn({2, 3, 7, 8}, opts),
           v = torch::randn({2, 3, 7, 8}, opts);
      const std::string f = form;
      auto relative = f == "relative" || f == "both" ? torch::randn({3, 5 + 7 - 1}, opts) : torch::Tensor();
      auto dense = f == "relative"        ? torch::Tensor()
                   : f == "dense strided" ? torch::randn({1, 5, 7, 3}, opts).movedim(-1, 1)  // a view, as FIRE's
                                          : torch::randn({f == "dense per batch" ? 2 : 1, 3, 5, 7}, opts);
      LogitBias bias(dense);
      bias.relative = relative;
      auto pad = torch::tensor({{0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0}}).to(torch::kBool);
      AttentionInputs in{q, k, v, pad, bias, causal};
      ASSERT_TRUE(fused_attention_available(q, k, v, ScoreBias{dense, relative}));
      std::vector<torch::Tensor> inputs{q, k, v};
      for (const auto& t : {dense, relative})
        if (t.defined()) inputs.push_back(t);
      auto weights = torch::randn({2, 3, 5, 8}, torch::kDouble);
      auto fused = fused_attention_cpu(q, k, v, pad, ScoreBias{dense, relative}, {KeyVisibility{causal}});
      auto reference = attention.reference_forward(in);
      EXPECT_LT(max_diff(fused, reference), 1e-12);
      auto g_fused = torch::autograd::grad({(fused * weights).sum()}, inputs);
      auto g_ref = torch::autograd::grad({(reference * weights).sum()}, inputs);
      for (size_t i = 0; i < inputs.size(); ++i) EXPECT_LT(max_diff(g_fused[i], g_ref[i]), 1e-12) << "input " << i;
      // the relative bias really moved the output
      if (relative.defined()) {
        EXPECT_GT(max_diff(fused, fused_attention_cpu(q, k, v, pad, ScoreBias{dense}, {KeyVisibility{causal}})), 1e-3);
      }
    }
  }
}

TEST_F(Attention, FusedKernelInFloatMatchesTheDefinition) {
  auto q = torch::randn({2, 4, 9, 16}), k = torch::randn({2, 4, 9, 16}), v = torch::randn({2, 4, 9, 16});
  AttentionInputs in{
      q, k, v, torch::tensor({{0, 0, 0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0, 0}}).to(torch::kBool), {}, true};
  EXPECT_LT(max_diff(fused_attention_cpu(q, k, v, in.key_padding_mask, {}, {KeyVisibility{true}}), reference(in)),
            1e-5);
}

// model.attention.kernel picks the path; every path applies the window and the sinks alike.
TEST_F(Attention, KernelSettingPicksThePathAndEveryPathWindowsAlike) {
  auto q = torch::randn({2, 2, 9, 8}), k = torch::randn({2, 2, 12, 8}), v = torch::randn({2, 2, 12, 8});
  auto pad = torch::zeros({2, 12}, torch::kBool);
  pad[1][11] = true;
  AttentionInputs in{q, k, v, pad, {}, true, 4, 2};
  using Path = SoftmaxAttention::Path;
  const std::vector<std::pair<AttentionKernel, Path>> kernels = {{AttentionKernel::automatic, Path::streaming},
                                                                 {AttentionKernel::streaming, Path::streaming},
                                                                 {AttentionKernel::chunked, Path::chunked},
                                                                 {AttentionKernel::materialized, Path::materialized}};
  SoftmaxAttention aten(AttentionOptions{});
  const auto expected = aten.reference_forward(in);
  // the window hides something: without it the output differs
  AttentionInputs unwindowed = in;
  unwindowed.window = unwindowed.sinks = 0;
  EXPECT_GT(max_diff(aten.reference_forward(unwindowed), expected), 1e-3);
  for (const auto& [kernel, path] : kernels) {
    SCOPED_TRACE(to_string(kernel));
    SoftmaxAttention attention(AttentionOptions().kernel(kernel));
    EXPECT_EQ(attention.path(in), path);
    EXPECT_LT(max_diff(attention.forward(in), expected), 1e-5);
  }
  SoftmaxAttention dropping(AttentionOptions().dropout(0.1).kernel(AttentionKernel::streaming));
  dropping.train();
  EXPECT_EQ(dropping.path(in), Path::aten);  // attention dropout in training
  dropping.eval();
  EXPECT_EQ(dropping.path(in), Path::streaming);
  // bf16 operands: no CPU kernel takes them, the chunked form and ATen ops compute them in
  // float (the scores and the softmax) and give bf16, both within its rounding of the float
  // computation on the same values
  AttentionInputs in_float = in;
  in.q = in.q.to(torch::kBFloat16), in.k = in.k.to(torch::kBFloat16), in.v = in.v.to(torch::kBFloat16);
  in_float.q = in.q.to(torch::kFloat), in_float.k = in.k.to(torch::kFloat), in_float.v = in.v.to(torch::kFloat);
  const auto expected_bf16 = aten.reference_forward(in_float);
  for (const auto& [kernel, path] :
       {std::pair{AttentionKernel::automatic, Path::aten}, {AttentionKernel::chunked, Path::chunked}}) {
    SoftmaxAttention attention(AttentionOptions().kernel(kernel));
    EXPECT_EQ(attention.path(in), path);
    const auto out = attention.forward(in);
    EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
    EXPECT_LT(max_diff(out.to(torch::kFloat), expected_bf16), 1e-2) << to_string(kernel);
  }
}

/// Sinks at cache positions by their definition, row by row in double: query i (aligned with
/// key a) sees its window's keys a - W < j <= a with q_i and the other forms' bias, and each
/// sink j < S beyond its window (j <= a - W) with the sink query q'_i and the sinks' bias; the
/// forget gate's c[a] - c[j] on both. Padded keys are skipped.
torch::Tensor cache_sinks_reference(const AttentionInputs& in) {
  auto q = in.q.to(torch::kDouble), k = in.k.to(torch::kDouble), v = in.v.to(torch::kDouble);
  auto q2 = in.sink_queries.to(torch::kDouble);
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2), S = in.sinks, W = in.window;
  auto bias =
      in.logit_bias.relative.defined()
          ? LogitBias::relative_table(in.logit_bias.relative).to_dense(Tq, Tk).to(torch::kDouble).expand({B, H, Tq, Tk})
          : torch::zeros({B, H, Tq, Tk}, torch::kDouble);
  auto sink_bias = in.logit_bias.sinks.to(torch::kDouble).expand({B, H, Tq, S});
  const auto& c = in.logit_bias.forget;
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i) {
        const int64_t a = i + Tk - Tq;
        std::vector<torch::Tensor> scores, values;
        for (int64_t j = 0; j <= a; ++j) {
          if (in.key_padding_mask[b][j].item<bool>()) continue;
          torch::Tensor s;
          if (j > a - W)
            s = (q[b][h][i] * k[b][h][j]).sum() / std::sqrt(double(q.size(3))) + bias[b][h][i][j];
          else if (j < S)
            s = (q2[b][h][i] * k[b][h][j]).sum() / std::sqrt(double(q.size(3))) + sink_bias[b][h][i][j];
          else
            continue;
          if (c.defined()) s = s + (c[b][h][a] - c[b][h][j]).to(torch::kDouble);
          scores.push_back(s);
          values.push_back(v[b][h][j]);
        }
        rows.push_back(torch::matmul(torch::softmax(torch::stack(scores), 0), torch::stack(values)));
      }
  return torch::stack(rows).view({B, H, Tq, -1});
}

// Sinks at cache positions (WindowPositions::cache): every kernel path gives the definition
// above, with the sink queries, the sinks' own bias, a relative table, the forget gate and
// padding (down to a query that sees a sink alone), queries fewer than keys; so do the
// gradients (the chunked form's log-sum-exp gradient) of every input.
TEST_F(Attention, SinksAtCachePositionsOnEveryPath) {
  const int64_t B = 2, H = 2, Tq = 14, Tk = 17, S = 2, W = 4;
  auto q = torch::randn({B, H, Tq, 8}, torch::kDouble), k = torch::randn({B, H, Tk, 8}, torch::kDouble);
  auto v = torch::randn({B, H, Tk, 8}, torch::kDouble), q2 = torch::randn({B, H, Tq, 8}, torch::kDouble);
  auto pad = torch::zeros({B, Tk}, torch::kBool);
  pad[1][1] = true;                     // a padded sink
  pad[1].narrow(0, 13, 4).fill_(true);  // the last query sees no window key, a sink only
  auto bias = LogitBias::relative_table(torch::randn({H, Tq + Tk - 1}, torch::kDouble));
  bias.sinks = torch::randn({1, H, Tq, S}, torch::kDouble);
  bias.forget = torch::randn({B, H, Tk}, torch::kDouble).mul(0.3).cumsum(-1);
  for (auto* t : {&q, &k, &v, &q2, &bias.relative, &bias.sinks, &bias.forget}) t->requires_grad_(true);
  AttentionInputs in{q, k, v, pad, bias, true, W, S};
  in.window_positions = WindowPositions::cache;
  in.sink_queries = q2;
  ASSERT_TRUE(in.sinks_at_cache_positions());
  const auto expected = cache_sinks_reference(in);
  const auto weights = torch::randn_like(expected);
  const std::vector<torch::Tensor> inputs{q, k, v, q2, bias.relative, bias.sinks, bias.forget};
  const auto expected_grads = torch::autograd::grad({(expected * weights).sum()}, inputs);
  // the sinks' positions matter: at sequence positions the output differs
  AttentionInputs sequence = in;
  sequence.window_positions = WindowPositions::sequence;
  EXPECT_GT(max_diff(SoftmaxAttention(AttentionOptions{}).forward(sequence), expected), 1e-2);
  for (auto kernel : {AttentionKernel::automatic, AttentionKernel::chunked, AttentionKernel::materialized}) {
    SCOPED_TRACE(to_string(kernel));
    SoftmaxAttention attention(AttentionOptions().kernel(kernel));
    {
      torch::NoGradGuard no_grad;  // the streaming kernel's forward
      EXPECT_LT(max_diff(attention.forward(in), expected), 1e-10);
    }
    const auto out = attention.forward(in);
    EXPECT_LT(max_diff(out, expected), 1e-10);
    const auto grads = torch::autograd::grad({(out * weights).sum()}, inputs);
    for (size_t i = 0; i < grads.size(); ++i) EXPECT_LT(max_diff(grads[i], expected_grads[i]), 1e-9) << "input " << i;
  }
  SoftmaxAttention dropping(AttentionOptions().dropout(0.5));  // ATen ops in training; eval as the kernels
  dropping.eval();
  EXPECT_LT(max_diff(dropping.forward(in), expected), 1e-10);
  dropping.train();
  torch::manual_seed(3);
  const auto dropped = dropping.forward(in);
  EXPECT_GT(max_diff(dropped, expected), 1e-2);
}

// Off the CPU (meta tensors stand for a GPU's: shapes without data) the streaming setting
// takes the chunked form; auto takes it once one call's scores exceed one chunk, and ATen
// ops below that; materialized and attention dropout in training take ATen ops.
TEST_F(Attention, OffTheCpuStreamingIsTheChunkedForm) {
  using Path = SoftmaxAttention::Path;
  const auto meta = torch::TensorOptions().device(torch::kMeta);
  auto inputs = [&](int64_t T) {
    auto x = torch::empty({1, 4, T, 8}, meta);
    auto bias = LogitBias::relative_table(torch::empty({4, 2 * T - 1}, meta));
    return AttentionInputs{x, x, x, torch::empty({1, T}, meta.dtype(torch::kBool)), bias, true, 64, 4};
  };
  const auto small = inputs(2048), large = inputs(2049);  // 4 x 2048^2 = 2^24 scores: one chunk
  auto path = [](AttentionKernel kernel, const AttentionInputs& in) {
    return SoftmaxAttention(AttentionOptions().kernel(kernel)).path(in);
  };
  EXPECT_EQ(path(AttentionKernel::automatic, small), Path::aten);
  EXPECT_EQ(path(AttentionKernel::automatic, large), Path::chunked);
  EXPECT_EQ(path(AttentionKernel::streaming, small), Path::chunked);
  EXPECT_EQ(path(AttentionKernel::chunked, small), Path::chunked);
  EXPECT_EQ(path(AttentionKernel::materialized, large), Path::aten);
  SoftmaxAttention dropping(AttentionOptions().dropout(0.1).kernel(AttentionKernel::streaming));
  dropping.train();
  EXPECT_EQ(dropping.path(large), Path::aten);
}

// Under mixed precision the projections give bf16 q, k, v; attention upcasts them
// (attend_in_fp32), so they reach the streaming kernel, whose products of bf16 values are
// exact in fp32, with scores, softmax statistics and sums in fp32. FIRE's factored bias goes
// to every path: per tile in the streaming kernel, dense in the others, with the same result.
TEST_F(Attention, Bfloat16InputsAndFactoredFireReachTheStreamingKernel) {
  using Path = SoftmaxAttention::Path;
  auto fire = make_position_encoder(PositionOptions().type(PositionType::fire).fire_threshold(6.0),
                                    PositionGeometry{16, 2, true});
  const auto bias = LogitBias::factored(fire->factored_bias(9, 12));
  auto q = torch::randn({2, 2, 9, 8}).to(torch::kBFloat16), k = torch::randn({2, 2, 12, 8}).to(torch::kBFloat16),
       v = torch::randn({2, 2, 12, 8}).to(torch::kBFloat16);
  AttentionInputs in{q, k, v, {}, bias, true};
  const auto expected = reference(in);  // in double, from the bf16 values
  for (auto kernel : {AttentionKernel::automatic, AttentionKernel::materialized}) {
    SoftmaxAttention attention(AttentionOptions().kernel(kernel));
    const auto out = attend_in_fp32(in, [&](const AttentionInputs& x) {
      EXPECT_EQ(attention.path(x), kernel == AttentionKernel::automatic ? Path::streaming : Path::materialized);
      return attention.forward(x);
    });
    EXPECT_EQ(out.scalar_type(), torch::kFloat);
    EXPECT_LT(max_diff(out, expected), 1e-5) << to_string(kernel);
  }
  SoftmaxAttention aten(AttentionOptions{});
  EXPECT_LT(max_diff(attend_in_fp32(in, [&](const AttentionInputs& x) { return aten.reference_forward(x); }), expected),
            1e-5);
}

// A forget gate's cumulative sums reach every path, each query aligned with its own key
// (Tq < Tk, as in cached decoding): the bias of query i (key a = i + Tk - Tq) and key j is
// the sum of log f_l over l in (j, a], summed term by term here.
TEST_F(Attention, ForgetGateReachesEveryPathAligned) {
  using Path = SoftmaxAttention::Path;
  const int64_t B = 2, H = 2, Tq = 5, Tk = 8;
  const auto log_f = torch::log_sigmoid(torch::randn({B, H, Tk}));
  auto explicit_bias = torch::zeros({B, H, Tq, Tk});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = 0; j <= i + Tk - Tq; ++j)
          for (int64_t l = j + 1; l <= i + Tk - Tq; ++l) explicit_bias[b][h][i][j] += log_f[b][h][l];
  auto q = torch::randn({B, H, Tq, 8}), k = torch::randn({B, H, Tk, 8}), v = torch::randn({B, H, Tk, 8});
  const auto expected = reference(AttentionInputs{q, k, v, {}, explicit_bias, true});
  LogitBias gate;
  gate.forget = log_f.cumsum(-1);
  const AttentionInputs in{q, k, v, {}, gate, true};
  for (const auto& [kernel, path] :
       std::vector<std::pair<AttentionKernel, Path>>{{AttentionKernel::automatic, Path::streaming},
                                                     {AttentionKernel::chunked, Path::chunked},
                                                     {AttentionKernel::materialized, Path::materialized}}) {
    SoftmaxAttention attention(AttentionOptions().kernel(kernel));
    EXPECT_EQ(attention.path(in), path);
    EXPECT_LT(max_diff(attention.forward(in), expected), 1e-5) << to_string(kernel);
  }
  EXPECT_LT(max_diff(SoftmaxAttention(AttentionOptions{}).reference_forward(in), expected), 1e-5);
}

// CoPE's attention in blocks of query rows (one row each, with padding, a window and sinks,
// Tq < Tk) equals one block of every row: the rows are independent.
TEST_F(Attention, ContextualAttentionBlocksOfRowsAgree) {
  auto pad = torch::zeros({2, 12}, torch::kBool);
  pad[1][3] = true;
  AttentionInputs in{
      torch::randn({2, 2, 9, 8}), torch::randn({2, 2, 12, 8}), torch::randn({2, 2, 12, 8}), pad, {}, true, 5, 1};
  in.contextual = torch::randn({8, 4});
  const auto whole = contextual_attention(in, 0.0, false);
  EXPECT_LT(max_diff(contextual_attention(in, 0.0, false, 1), whole), 1e-6);
  EXPECT_EQ(SoftmaxAttention(AttentionOptions{}).path(in), SoftmaxAttention::Path::contextual);
  EXPECT_LT(max_diff(SoftmaxAttention(AttentionOptions{}).forward(in), whole), 1e-6);
  in.contextual = torch::zeros({8, 4});  // no position: plain softmax attention
  EXPECT_LT(
      max_diff(contextual_attention(in, 0.0, false, 1), SoftmaxAttention(AttentionOptions{}).reference_forward(in)),
      1e-5);
}

// The softmax backend's choice of computation, as a rule of the call's facts.
TEST(SoftmaxPath, FollowsTheKernelSetting) {
  using K = AttentionKernel;
  using P = SoftmaxPath;
  const SoftmaxCall cpu;  // every kernel fits
  EXPECT_EQ(softmax_path(K::automatic, cpu), P::streaming);
  EXPECT_EQ(softmax_path(K::streaming, cpu), P::streaming);
  EXPECT_EQ(softmax_path(K::materialized, cpu), P::materialized);
  EXPECT_EQ(softmax_path(K::chunked, cpu), P::chunked);
  SoftmaxCall other = cpu;
  other.dropout = true;
  EXPECT_EQ(softmax_path(K::streaming, other), P::aten);
  other.contextual = true;
  EXPECT_EQ(softmax_path(K::streaming, other), P::contextual);
  SoftmaxCall no_streaming = cpu;  // e.g. a bias the streaming kernel cannot take
  no_streaming.streaming_fits = false;
  EXPECT_EQ(softmax_path(K::automatic, no_streaming), P::materialized);
  EXPECT_EQ(softmax_path(K::streaming, no_streaming), P::aten);
  SoftmaxCall gpu;
  gpu.on_cpu = gpu.streaming_fits = gpu.materialized_fits = false;
  gpu.scores = AttentionChunks{}.budget;
  EXPECT_EQ(softmax_path(K::automatic, gpu), P::aten);
  gpu.scores += 1;
  EXPECT_EQ(softmax_path(K::automatic, gpu), P::chunked);
  EXPECT_EQ(softmax_path(K::streaming, gpu), P::chunked);
  EXPECT_EQ(softmax_path(K::materialized, gpu), P::aten);
  gpu.chunked_fits = false;
  EXPECT_EQ(softmax_path(K::chunked, gpu), P::aten);
  // PyTorch's own kernel (LibTorch 2.0 and later) for `auto` off the CPU, dropout included
  SoftmaxCall plain = gpu;
  plain.sdpa_fits = true;
  EXPECT_EQ(softmax_path(K::automatic, plain), P::sdpa);
  plain.dropout = true;
  EXPECT_EQ(softmax_path(K::automatic, plain), P::sdpa);
  for (auto kernel : {K::streaming, K::chunked, K::materialized}) EXPECT_EQ(softmax_path(kernel, plain), P::aten);
  plain.contextual = true;
  EXPECT_EQ(softmax_path(K::automatic, plain), P::contextual);
  SoftmaxCall cpu_plain = cpu;  // the CPU keeps its kernels
  cpu_plain.sdpa_fits = true;
  EXPECT_EQ(softmax_path(K::automatic, cpu_plain), P::streaming);
}
