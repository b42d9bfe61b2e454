// The streaming kernel's backward: the probabilities recomputed tile by tile from the
// forward's log-sum-exp, dQ, dK, dV and the bias's gradients summed per task and reduced in a
// fixed order (streaming_attention.h).

#include <ATen/Parallel.h>

#include <cmath>
#include <optional>
#include <vector>

#include "ropelab/ops/attention/streaming_bias.h"
#include "ropelab/ops/attention/streaming_passes.h"

namespace ropelab::streaming {

namespace {

/// Where the backward leaves the gradients: dQ (B, Tq, H, Dh); per (group, b, h) partial
/// sums of dK and dV (Tk, Dh) and of the relative table's gradient (Tq + Tk - 1); the dense
/// bias's gradient (B, H, Tq, Tk).
template <typename T>
struct Grads {
  T *dq, *dk, *dv;
  T* relative = nullptr;
  T* dense = nullptr;
  /// FIRE: per task, the gradient of psi (by distance) and per piece the sums of dS and of
  /// dS x (m + 1, 2); per (b, h), the gradient of inv_norm (B, H, Tq).
  T* fire_psi = nullptr;
  double* fire_sums = nullptr;
  T* fire_inv = nullptr;
  /// The forget gate's cumulative log values: per task, partial column sums of dS (Tk),
  /// whose negation is the gradient. The query's term c[a], one value per row, changes no
  /// probability: its gradient, the row sum of dS = P (dP - d), is sum P dP - d = 0.
  T* forget = nullptr;
};

template <typename T>
void backward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& out,
                     const torch::Tensor& lse, const torch::Tensor& grad_out, const Bias<T>& bias, const Problem& p,
                     int64_t groups, const Grads<T>& g) {
  const auto f = loops<T>();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(p.Dh)));
  const int64_t heads = p.B * p.H, tiles = p.query_tiles(), columns = p.Tq + p.Tk - 1;
  const int64_t workers = std::max<int64_t>(1, at::get_num_threads());
  // per worker: S/P and dP/dS (bq x bk each), dQ (bq x Dh), d (bq)
  const int64_t scratch = 2 * p.bq * p.bk + p.bq * p.Dh + p.bq;
  std::vector<T> buffer(static_cast<size_t>(workers * scratch));
  blas::SingleThreaded one_blas_thread;
  run_tasks(heads * groups, [&](int64_t task, int64_t worker) {
    const int64_t group = task / heads, bh = task % heads, b = bh / p.H, h = bh % p.H;
    T* s = buffer.data() + worker * scratch;
    T *dp = s + p.bq * p.bk, *dq = dp + p.bq * p.bk, *d = dq + p.bq * p.Dh;
    T* dk = g.dk + task * p.Tk * p.Dh;  // task = group * heads + bh: the partial sums' order
    T* dv = g.dv + task * p.Tk * p.Dh;
    T* d_relative = g.relative ? g.relative + task * columns : nullptr;
    const auto Q = head<T>(q, b, h), K = head<T>(k, b, h), V = head<T>(v, b, h);
    const auto O = head_seq_major<T>(out, b, h), dO = head<T>(grad_out, b, h);
    const T* row_lse = lse.data_ptr<T>() + bh * p.Tq;
    for (int64_t tile = group; tile < tiles; tile += groups) {
      const int64_t i0 = tile * p.bq, rows = std::min(p.bq, p.Tq - i0);
      for (int64_t r = 0; r < rows; ++r) {  // d = rowsum(dO * O)
        const T *x = O.row(i0 + r), *y = dO.row(i0 + r);
        T sum = 0;
        for (int64_t e = 0; e < p.Dh; ++e) sum += x[e] * y[e];
        d[r] = sum;
      }
      std::fill(dq, dq + rows * p.Dh, T(0));
      for_key_tiles(p, i0, i0 + rows, [&](int64_t j0, int64_t cols) {
        scores(f, p, bias, Q, K, scale, b, h, i0, rows, j0, cols, s);
        f.probabilities(s, rows, cols, p.bk, row_lse + i0);
        // dV += P^T dO;  dP = dO V^T;  dS = P (dP - d)
        blas::gemm(true, false, cols, p.Dh, rows, T(1), s, p.bk, dO.row(i0), dO.ld, T(1), dv + j0 * p.Dh, p.Dh);
        blas::gemm(false, true, rows, cols, p.Dh, T(1), dO.row(i0), dO.ld, V.row(j0), V.ld, T(0), dp, p.bk);
        f.softmax_grad(s, dp, rows, cols, p.bk, d);
        if (d_relative) f.add_rows(d_relative + (j0 - i0 + p.Tq - 1), -1, dp, rows, cols, p.bk);
        if (g.dense) f.add_rows(g.dense + (bh * p.Tq + i0) * p.Tk + j0, p.Tk, dp, rows, cols, p.bk);
        if (g.fire_psi)
          fire_backward(*bias.fire, p.offset(), h, dp, p.bk, i0, rows, j0, cols, g.fire_psi + task * bias.fire->n,
                        g.fire_sums + task * 2 * (bias.fire->m + 1), g.fire_inv + bh * p.Tq);
        if (g.forget) f.add_rows(g.forget + task * p.Tk + j0, 0, dp, rows, cols, p.bk);  // column sums
        // dQ += scale dS K;  dK += scale dS^T Q
        blas::gemm(false, false, rows, p.Dh, cols, scale, dp, p.bk, K.row(j0), K.ld, T(1), dq, p.Dh);
        blas::gemm(true, false, cols, p.Dh, rows, scale, dp, p.bk, Q.row(i0), Q.ld, T(1), dk + j0 * p.Dh, p.Dh);
      });
      T* dst = g.dq + (b * p.Tq + i0) * p.H * p.Dh + h * p.Dh;  // (B, Tq, H, Dh)
      for (int64_t r = 0; r < rows; ++r) std::copy(dq + r * p.Dh, dq + (r + 1) * p.Dh, dst + r * p.H * p.Dh);
    }
  });
}

/// Query-tile groups per (batch, head) in the backward: enough tasks for every thread.
int64_t backward_groups(const Problem& p) {
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads()), heads = p.B * p.H;
  return std::max<int64_t>(1, std::min<int64_t>(p.query_tiles(), (threads + heads - 1) / heads));
}

}  // namespace

torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                                        const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& out,
                                        const torch::Tensor& lse, const torch::Tensor& grad_out,
                                        const AttentionExtras& x, const KernelOptions& options) {
  const auto &dense = x.dense, &relative = x.relative, &psi = x.psi, &forget = x.forget;
  const auto p = problem_of(q, k, x.pad, options.visibility, options.tiles);
  const int64_t groups = backward_groups(p), columns = p.Tq + p.Tk - 1;
  auto dq = torch::zeros({p.B, p.Tq, p.H, p.Dh}, q.options());
  auto dk = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
  auto dv = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
  torch::Tensor d_relative, d_dense;
  if (relative.numel() && ctx->needs_input_grad(kRelativeInput))
    d_relative = torch::zeros({groups, p.B, p.H, columns}, q.options());
  if (dense.numel() && ctx->needs_input_grad(kDenseInput)) d_dense = torch::zeros({p.B, p.H, p.Tq, p.Tk}, q.options());
  const bool fire_grads = x.fire() && needs_fire_gradient(ctx);
  torch::Tensor d_psi, d_inv, sums, active, d_forget;
  if (forget.numel() && ctx->needs_input_grad(kForgetInput))
    d_forget = torch::zeros({groups, p.B, p.H, p.Tk}, q.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_backward", [&] {
    std::optional<FirePieces<scalar_t>> fire;
    if (x.fire()) fire = fire_pieces<scalar_t>(psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2, p.Tq);
    Grads<scalar_t> g{dq.data_ptr<scalar_t>(), dk.data_ptr<scalar_t>(), dv.data_ptr<scalar_t>()};
    if (d_relative.defined()) g.relative = d_relative.data_ptr<scalar_t>();
    if (d_dense.defined()) g.dense = d_dense.data_ptr<scalar_t>();
    if (d_forget.defined()) g.forget = d_forget.data_ptr<scalar_t>();
    if (fire_grads) {
      d_psi = torch::zeros({groups, p.B, p.H, psi.numel()}, q.options());
      d_inv = torch::zeros({p.B, p.H, p.Tq}, q.options());
      sums = torch::zeros({groups, p.B, p.H, fire->m + 1, 2}, torch::kDouble);
      active = fire->active;
      g.fire_psi = d_psi.data_ptr<scalar_t>();
      g.fire_inv = d_inv.data_ptr<scalar_t>();
      g.fire_sums = sums.data_ptr<double>();
    }
    backward_kernel<scalar_t>(q, k, v, out, lse, grad_out,
                              bias_of<scalar_t>(dense, relative, forget, p.B, fire ? &*fire : nullptr), p, groups, g);
  });
  // FIRE's parameters from the sums per piece: on piece s the active units' pre-activations
  // w1 x + b1 are linear, so sum dS relu(.) = w1 sum(dS x) + b1 sum(dS) over the piece
  torch::Tensor d_w1, d_b1, d_w2, d_b2;
  if (fire_grads) {
    const auto per_piece = sums.sum(torch::IntArrayRef{0, 1});      // (H, m + 1, 2)
    const auto g0 = torch::matmul(per_piece.select(2, 0), active);  // (H, K): sum of dS where k is active
    const auto g1 = torch::matmul(per_piece.select(2, 1), active);  // (H, K): sum of dS x there
    const auto W1 = x.w1.to(torch::kDouble), B1 = x.b1.to(torch::kDouble), W2 = x.w2.to(torch::kDouble);
    d_w2 = (g1 * W1.unsqueeze(0) + g0 * B1.unsqueeze(0)).to(x.w2.scalar_type());
    d_b2 = per_piece.select(2, 0).sum(1).to(x.b2.scalar_type());
    d_w1 = (g1 * W2).sum(0).to(x.w1.scalar_type());
    d_b1 = (g0 * W2).sum(0).to(x.b1.scalar_type());
    d_psi = d_psi.sum(torch::IntArrayRef{0, 1, 2});
    d_inv = d_inv.sum(torch::IntArrayRef{0, 1});
  }
  // partial sums added in a fixed order: the result does not depend on the thread timing
  auto reduce = [&](const torch::Tensor& t) { return groups == 1 ? t[0] : t.sum(0); };
  if (d_relative.defined()) d_relative = d_relative.sum(torch::IntArrayRef{0, 1});
  if (d_dense.defined() && dense.size(0) != p.B) d_dense = d_dense.sum(0, true);
  if (d_forget.defined()) d_forget = reduce(d_forget).neg_();  // c[a] - c[j]: minus the column sums
  return {dq.permute({0, 2, 1, 3}),
          reduce(dk),
          reduce(dv),
          torch::Tensor(),
          d_dense,
          d_relative,
          d_psi,
          d_inv,
          d_w1,
          d_b1,
          d_w2,
          d_b2,
          d_forget};
}

}  // namespace ropelab::streaming
