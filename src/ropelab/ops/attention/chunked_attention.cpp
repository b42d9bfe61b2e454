#include "ropelab/ops/attention/chunked_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ropelab/ops/attention/operands.h"

namespace ropelab {

namespace {

/// The logit of a hidden key: float's lowest finite value (in double as well). A row that has
/// seen only hidden keys so far keeps it as its running maximum, and its probabilities are
/// zeroed explicitly; a finite value keeps exp(S - max) free of NaN.
constexpr double kHidden = std::numeric_limits<float>::lowest();

/// The entries of `table` (N, L), contiguous, that a (rows, cols) chunk reads along its
/// diagonals: out[n][r][c] = table[n][base + c - r + rows - 1]. A strided view of the
/// anti-diagonals, flipped: -> (N, rows, cols).
torch::Tensor diagonal_gather(const torch::Tensor& table, int64_t base, int64_t rows, int64_t cols) {
  TORCH_INTERNAL_ASSERT(table.is_contiguous() && base >= 0 && base + rows + cols - 1 <= table.size(1));
  return table.as_strided({table.size(0), rows, cols}, {table.stride(0), 1, 1}, table.storage_offset() + base)
      .flip({1});
}

/// diagonal_gather's adjoint: x (..., rows, cols) -> (..., rows + cols - 1), entry t the sum
/// of x[r][c] over c - r + rows - 1 = t. Row r' = rows - 1 - r padded to rows + cols and
/// read with rows + cols - 1 per line lands element (r', c) in column r' + c.
torch::Tensor diagonal_sums(const torch::Tensor& x) {
  const int64_t rows = x.size(-2), cols = x.size(-1), width = rows + cols;
  auto lead = x.sizes().slice(0, x.dim() - 2).vec();
  auto padded = torch::constant_pad_nd(x.flip({-2}), {0, rows});  // (..., rows, width)
  auto skewed = padded.flatten(-2).narrow(-1, 0, rows * (width - 1));
  lead.push_back(rows);
  lead.push_back(width - 1);
  return skewed.reshape(lead).sum(-2);
}

/// FIRE's MLP over x (rows, cols): -> (H, rows, cols); also the pre-activations (rows, cols, K).
std::pair<torch::Tensor, torch::Tensor> fire_mlp(const torch::Tensor& x, const torch::Tensor& w1,
                                                 const torch::Tensor& b1, const torch::Tensor& w2,
                                                 const torch::Tensor& b2) {
  auto pre = x.unsqueeze(-1) * w1 + b1;  // (rows, cols, K)
  return {torch::linear(torch::relu(pre), w2, b2).permute({2, 0, 1}), pre};
}

/// One call: shapes, masks and biases (empty tensors where absent), and the chunk loops.
struct Chunked {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dh = 0, cq = 0, ck = 0;
  KeyVisibility vis;
  double scale = 1;
  torch::Device device = torch::kCPU;
  torch::Tensor pad, dense, relative;           // (B, Tk) bool; (1|B, H, Tq, Tk); (H, Tq + Tk - 1)
  torch::Tensor psi, inv_norm, w1, b1, w2, b2;  // FIRE
  torch::Tensor forget;                         // (B, H, Tk) cumulative log forget gates

  int64_t offset() const { return Tk - Tq; }  // query i is aligned with key i + offset
  bool fire() const { return psi.numel() > 0; }

  /// Calls f(i0, rows) for each query chunk.
  template <typename F>
  void for_query_chunks(const F& f) const {
    for (int64_t i0 = 0; i0 < Tq; i0 += cq) f(i0, std::min(cq, Tq - i0));
  }
  /// Calls f(j0, cols) for each key chunk that queries [i0, i0 + rows) can see.
  template <typename F>
  void for_key_chunks(int64_t i0, int64_t rows, const F& f) const {
    KeyRange ranges[2];
    const int n = visible_key_ranges(vis, Tq, Tk, i0, i0 + rows, ranges);
    for (int r = 0; r < n; ++r)
      for (int64_t j0 = ranges[r].begin; j0 < ranges[r].end; j0 += ck) f(j0, std::min(ck, ranges[r].end - j0));
  }

  /// The signed distances j - a of a chunk's diagonals, lowest first (rows + cols - 1).
  int64_t lowest_distance(int64_t i0, int64_t rows, int64_t j0) const { return j0 - (i0 + rows - 1 + offset()); }

  /// psi[|j - a|] of the chunk (rows, cols).
  torch::Tensor fire_psi(int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    const int64_t lowest = lowest_distance(i0, rows, j0);
    auto distance = torch::arange(lowest, lowest + rows + cols - 1, psi.options().dtype(torch::kLong)).abs();
    return diagonal_gather(psi.index_select(0, distance).unsqueeze(0), 0, rows, cols).squeeze(0);
  }

  /// The chunk's logit bias, broadcastable to (B, H, rows, cols), or undefined.
  torch::Tensor bias(int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    torch::Tensor sum;
    auto add = [&](const torch::Tensor& t) { sum = sum.defined() ? sum + t : t; };
    if (relative.numel()) add(diagonal_gather(relative, j0 - i0 + Tq - rows, rows, cols));
    if (fire())
      add(fire_mlp(fire_psi(i0, rows, j0, cols) * inv_norm.narrow(0, i0, rows).unsqueeze(1), w1, b1, w2, b2).first);
    if (forget.numel())  // c[a] - c[j]
      add(forget.narrow(2, i0 + offset(), rows).unsqueeze(-1) - forget.narrow(2, j0, cols).unsqueeze(-2));
    if (dense.numel()) add(dense.narrow(2, i0, rows).narrow(3, j0, cols));
    return sum;
  }

  /// Where the chunk's keys are hidden, broadcastable to (B, 1, rows, cols), or undefined.
  torch::Tensor hidden(int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    torch::Tensor mask;
    if (!sees_whole_tile(vis, Tq, Tk, i0, i0 + rows, j0, j0 + cols))
      mask = hidden_keys(vis, Tq, Tk, i0, rows, j0, cols, device);
    if (pad.numel()) {
      auto padded = pad.narrow(1, j0, cols).view({B, 1, 1, cols});
      mask = mask.defined() ? mask | padded : padded;
    }
    return mask;
  }

  /// The chunk's logits: scaled queries qs (B, H, rows, Dh) against keys [j0, j0 + cols),
  /// plus the bias, hidden keys set to kHidden. -> logits, and the hidden mask (or undefined).
  std::pair<torch::Tensor, torch::Tensor> logits(const torch::Tensor& qs, const torch::Tensor& k, int64_t i0,
                                                 int64_t j0, int64_t cols) const {
    const int64_t rows = qs.size(2);
    auto s = torch::matmul(qs, k.narrow(2, j0, cols).transpose(-2, -1));
    if (auto b = bias(i0, rows, j0, cols); b.defined()) s.add_(b);
    auto mask = hidden(i0, rows, j0, cols);
    if (mask.defined()) s.masked_fill_(mask, kHidden);
    return {s, mask};
  }
};

Chunked chunked_of(const torch::Tensor& q, const torch::Tensor& k, const KernelOptions& options,
                   const AttentionExtras& x) {
  Chunked c;
  c.B = q.size(0), c.H = q.size(1), c.Tq = q.size(2), c.Tk = k.size(2), c.Dh = q.size(3), c.vis = options.visibility;
  c.device = q.device();
  c.scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
  c.pad = x.pad, c.dense = x.dense, c.relative = x.relative;
  c.psi = x.psi, c.inv_norm = x.inv_norm, c.w1 = x.w1, c.b1 = x.b1, c.w2 = x.w2, c.b2 = x.b2;
  c.forget = x.forget;
  const auto& chunks = options.chunks;
  const int64_t width = std::max(c.B * c.H, c.fire() ? c.w1.numel() : 0);
  c.ck = std::max<int64_t>(1, std::min(chunks.keys, c.Tk));
  c.cq = std::max<int64_t>(1, chunk_queries(chunks, width, c.Tq, c.Tk));
  return c;
}

/// FIRE's gradients from G = dS summed over the batch (H, rows, cols) of one chunk, added
/// into d (psi, inv_norm, w1, b1, w2, b2).
void fire_backward(const Chunked& c, const torch::Tensor& g, int64_t i0, int64_t j0, std::vector<torch::Tensor>& d) {
  const int64_t rows = g.size(1), cols = g.size(2), H = c.H;
  const auto psi = c.fire_psi(i0, rows, j0, cols);  // (rows, cols)
  const auto inv = c.inv_norm.narrow(0, i0, rows).unsqueeze(1);
  const auto x = psi * inv;
  auto [bias, pre] = fire_mlp(x, c.w1, c.b1, c.w2, c.b2);
  (void)bias;
  const auto gt = g.permute({1, 2, 0});  // (rows, cols, H)
  const auto active = torch::relu(pre);
  d[4].add_(torch::matmul(gt.reshape({-1, H}).t(), active.reshape({rows * cols, -1})));  // w2 (H, K)
  d[5].add_(gt.sum(torch::IntArrayRef{0, 1}));                                           // b2
  const auto d_pre = torch::matmul(gt, c.w2) * (pre > 0);                                // (rows, cols, K)
  d[2].add_((d_pre * x.unsqueeze(-1)).sum(torch::IntArrayRef{0, 1}));                    // w1
  d[3].add_(d_pre.sum(torch::IntArrayRef{0, 1}));                                        // b1
  const auto dx = torch::matmul(d_pre, c.w1);                                            // (rows, cols)
  d[1].narrow(0, i0, rows).add_((dx * psi).sum(1));                                      // inv_norm
  // psi: sums per signed distance j - a along the diagonals, folded onto |j - a| in two
  // contiguous runs (no scatter, so no atomics)
  const auto per_distance = diagonal_sums(dx * inv);  // (rows + cols - 1)
  const int64_t lowest = c.lowest_distance(i0, rows, j0), highest = lowest + rows + cols - 2;
  if (highest >= 0) {
    const int64_t start = std::max<int64_t>(0, lowest);
    d[0].narrow(0, start, highest - start + 1).add_(per_distance.narrow(0, start - lowest, highest - start + 1));
  }
  if (lowest < 0) {
    const int64_t end = std::min<int64_t>(-1, highest), n = end - lowest + 1;
    d[0].narrow(0, -end, n).add_(per_distance.narrow(0, 0, n).flip({0}));
  }
}

class ChunkedAttention : public torch::autograd::Function<ChunkedAttention> {
 public:
  /// pad, dense, relative, FIRE's psi, inv_norm, w1, b1, w2, b2 and forget (AttentionExtras):
  /// empty when absent. -> the output (B, H, Tq, Dh) and each row's log-sum-exp (B, H, Tq),
  /// both differentiable.
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
      const torch::Tensor& pad, const torch::Tensor& dense, const torch::Tensor& relative, const torch::Tensor& psi,
      const torch::Tensor& inv_norm, const torch::Tensor& w1, const torch::Tensor& b1, const torch::Tensor& w2,
      const torch::Tensor& b2, const torch::Tensor& forget, const KernelOptions& options) {
    const auto c = chunked_of(q, k, options, {pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget});
    auto out = torch::empty({c.B, c.H, c.Tq, c.Dh}, q.options());
    auto lse = torch::empty({c.B, c.H, c.Tq, 1}, q.options());
    c.for_query_chunks([&](int64_t i0, int64_t rows) {
      const auto qs = q.narrow(2, i0, rows) * c.scale;
      auto m = torch::full({c.B, c.H, rows, 1}, kHidden, q.options());
      auto l = torch::zeros({c.B, c.H, rows, 1}, q.options());
      auto acc = torch::zeros({c.B, c.H, rows, c.Dh}, q.options());
      c.for_key_chunks(i0, rows, [&](int64_t j0, int64_t cols) {
        auto [s, hidden] = c.logits(qs, k, i0, j0, cols);
        auto m_new = torch::maximum(m, s.amax(-1, true));
        auto p = s.sub_(m_new).exp_();
        if (hidden.defined()) p.masked_fill_(hidden, 0);
        auto alpha = (m - m_new).exp_();
        l = l * alpha + p.sum(-1, true);
        acc = torch::matmul(p, v.narrow(2, j0, cols)).add_(acc * alpha);
        m = m_new;
      });
      const auto seen = l > 0;  // a row that sees no key: a zero output, lse = +huge (P = 0)
      out.narrow(2, i0, rows).copy_(acc / torch::where(seen, l, torch::ones_like(l)));
      lse.narrow(2, i0, rows).copy_(torch::where(seen, m + l.log(), torch::full_like(m, -kHidden)));
    });
    ctx->save_for_backward({q, k, v, out, lse, pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget});
    save_kernel_options(ctx, options);
    return {out, lse.squeeze(-1)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const auto c = chunked_of(q, k, saved_kernel_options(ctx), AttentionExtras::saved(saved, 5));
    const auto grad_out = grads[0].defined() ? grads[0] : torch::zeros_like(out);
    auto dq = torch::zeros({c.B, c.H, c.Tq, c.Dh}, q.options());
    auto dk = torch::zeros({c.B, c.H, c.Tk, c.Dh}, q.options());
    auto dv = torch::zeros({c.B, c.H, c.Tk, c.Dh}, q.options());
    torch::Tensor d_dense, d_relative;
    if (c.dense.numel() && ctx->needs_input_grad(kDenseInput))
      d_dense = torch::zeros({c.B, c.H, c.Tq, c.Tk}, q.options());
    if (c.relative.numel() && ctx->needs_input_grad(kRelativeInput)) d_relative = torch::zeros_like(c.relative);
    torch::Tensor d_forget;
    if (c.forget.numel() && ctx->needs_input_grad(kForgetInput)) d_forget = torch::zeros_like(c.forget);
    std::vector<torch::Tensor> d_fire;  // psi, inv_norm, w1, b1, w2, b2
    if (c.fire() && needs_fire_gradient(ctx))
      for (const auto* t : {&c.psi, &c.inv_norm, &c.w1, &c.b1, &c.w2, &c.b2}) d_fire.push_back(torch::zeros_like(*t));
    // d = rowsum(dO * O); a gradient g of the log-sum-exp adds P g to dS (d lse / d S = P),
    // which is dS = P (dP - (d - g))
    auto d = (grad_out * out).sum(-1, true);  // (B, H, Tq, 1)
    const bool lse_gradient = grads.size() > 1 && grads[1].defined();
    if (lse_gradient) d = d - grads[1].unsqueeze(-1);
    c.for_query_chunks([&](int64_t i0, int64_t rows) {
      const auto qs = q.narrow(2, i0, rows) * c.scale;
      const auto g_out = grad_out.narrow(2, i0, rows), row_lse = lse.narrow(2, i0, rows), row_d = d.narrow(2, i0, rows);
      auto dq_rows = dq.narrow(2, i0, rows);
      c.for_key_chunks(i0, rows, [&](int64_t j0, int64_t cols) {
        // P = exp(S - lse): hidden logits give 0, and so does every key of a row with lse = +huge
        auto p = c.logits(qs, k, i0, j0, cols).first.sub_(row_lse).exp_();
        const auto keys = k.narrow(2, j0, cols), values = v.narrow(2, j0, cols);
        dv.narrow(2, j0, cols).add_(torch::matmul(p.transpose(-2, -1), g_out));
        auto ds = p.mul_(torch::matmul(g_out, values.transpose(-2, -1)).sub_(row_d));  // dS = P (dP - d)
        if (d_dense.defined()) d_dense.narrow(2, i0, rows).narrow(3, j0, cols).copy_(ds);
        // minus the column sums; a row's own c[a] changes no probability (its row sum of dS is
        // 0), but it does change the log-sum-exp: with its gradient, plus the row sums at a
        if (d_forget.defined()) {
          d_forget.narrow(2, j0, cols).sub_(ds.sum(-2));
          if (lse_gradient) d_forget.narrow(2, i0 + c.offset(), rows).add_(ds.sum(-1));
        }
        if (d_relative.defined() || !d_fire.empty()) {
          const auto per_head = ds.sum(0);  // (H, rows, cols)
          if (d_relative.defined())
            d_relative.narrow(1, j0 - i0 + c.Tq - rows, rows + cols - 1).add_(diagonal_sums(per_head));
          if (!d_fire.empty()) fire_backward(c, per_head, i0, j0, d_fire);
        }
        dq_rows.add_(torch::matmul(ds, keys), c.scale);
        dk.narrow(2, j0, cols).add_(torch::matmul(ds.transpose(-2, -1), qs));  // qs is scaled already
      });
    });
    if (d_dense.defined() && c.dense.size(0) != c.B) d_dense = d_dense.sum(0, true);
    torch::autograd::variable_list result{dq, dk, dv, torch::Tensor(), d_dense, d_relative};
    for (size_t i = 0; i < 6; ++i) result.push_back(d_fire.empty() ? torch::Tensor() : d_fire[i]);
    result.push_back(d_forget);
    result.emplace_back();  // the options
    return result;
  }
};

}  // namespace

namespace {

bool half_precision(torch::ScalarType type) { return type == torch::kHalf || type == torch::kBFloat16; }

/// Every form of `bias` in float (a form already in float is itself).
ScoreBias bias_in_float(const ScoreBias& bias) {
  auto f = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat) : t; };
  ScoreBias out(f(bias.dense), f(bias.relative), bias.fire, f(bias.forget));
  for (auto* t : {&out.fire.psi, &out.fire.inv_norm, &out.fire.w1, &out.fire.b1, &out.fire.w2, &out.fire.b2})
    *t = f(*t);
  return out;
}

}  // namespace

bool chunked_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const ScoreBias& bias) {
  const auto type = q.scalar_type();
  const bool half = half_precision(type);
  return (type == torch::kFloat || type == torch::kDouble || half) && attention_operands_fit(q, k, v, bias, half) &&
         k.size(0) == q.size(0) && k.size(1) == q.size(1) && k.size(3) == q.size(3) && v.sizes() == k.sizes();
}

int64_t chunk_queries(const AttentionChunks& chunks, int64_t batch_heads, int64_t tq, int64_t tk) {
  if (chunks.queries > 0) return std::min(chunks.queries, tq);
  const int64_t keys = std::max<int64_t>(1, std::min(chunks.keys, tk));
  int64_t rows = std::max<int64_t>(1, chunks.budget / (std::max<int64_t>(1, batch_heads) * keys));
  if (rows >= 64) rows -= rows % 64;
  return std::min(rows, tq);
}

torch::Tensor hidden_keys(const KeyVisibility& visibility, int64_t tq, int64_t tk, int64_t i0, int64_t rows, int64_t j0,
                          int64_t cols, const torch::Device& device) {
  auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto key = torch::arange(j0, j0 + cols, options).unsqueeze(0);                // (1, cols)
  auto query = torch::arange(i0, i0 + rows, options).unsqueeze(1) + (tk - tq);  // (rows, 1): aligned key
  auto distance = query - key;                                                  // (rows, cols)
  auto hidden = torch::zeros({rows, cols}, options.dtype(torch::kBool));
  if (visibility.window > 0) {
    hidden = (visibility.causal ? distance : distance.abs()) >= visibility.window;  // outside the window
    if (visibility.sinks > 0) hidden = hidden & (key >= visibility.sinks);
  }
  if (visibility.causal) hidden = hidden | (distance < 0);
  return hidden;
}

std::pair<torch::Tensor, torch::Tensor> chunked_attention_lse(const torch::Tensor& q, const torch::Tensor& k,
                                                              const torch::Tensor& v,
                                                              const torch::Tensor& key_padding_mask,
                                                              const ScoreBias& bias, const KernelOptions& options) {
  check_kernel_call("chunked_attention", chunked_attention_available(q, k, v, bias),
                    "floating q, k, v (B, H, T, Dh) on one device and biases of their type (or float for fp16 and "
                    "bf16), device and shape",
                    q, k, key_padding_mask, options);
  if (half_precision(q.scalar_type())) {  // each chunk in float, as flash attention accumulates
    auto [out, lse] = chunked_attention_lse(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat),
                                            key_padding_mask, bias_in_float(bias), options);
    return {out.to(q.scalar_type()), lse};
  }
  const auto x = AttentionExtras::of(q, key_padding_mask, bias);
  auto outputs = ChunkedAttention::apply(q, k, v, x.pad, x.dense, x.relative, x.psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2,
                                         x.forget, options);
  return {outputs[0], outputs[1]};
}

torch::Tensor chunked_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& key_padding_mask, const ScoreBias& bias,
                                const KernelOptions& options) {
  return chunked_attention_lse(q, k, v, key_padding_mask, bias, options).first;
}

}  // namespace ropelab
