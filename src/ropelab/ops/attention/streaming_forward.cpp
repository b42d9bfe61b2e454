// The streaming kernel's forward: query tiles x key tiles with an online softmax
// (streaming_attention.h).

#include <ATen/Parallel.h>

#include <cmath>
#include <optional>
#include <vector>

#include "ropelab/ops/attention/streaming_bias.h"
#include "ropelab/ops/attention/streaming_passes.h"

namespace ropelab::streaming {

namespace {

template <typename T>
void forward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const Bias<T>& bias,
                    const Problem& p, torch::Tensor& out, torch::Tensor& lse) {
  const auto f = loops<T>();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(p.Dh)));
  const int64_t heads = p.B * p.H, tiles = p.query_tiles();
  const int64_t workers = std::max<int64_t>(1, at::get_num_threads());
  // per worker: S (bq x bk), O (bq x Dh), m, l, alpha (bq)
  const int64_t scratch = p.bq * p.bk + p.bq * p.Dh + 3 * p.bq;
  std::vector<T> buffer(static_cast<size_t>(workers * scratch));
  blas::SingleThreaded one_blas_thread;
  run_tasks(heads * tiles, [&](int64_t task, int64_t worker) {
    // the last query tiles first: under a causal mask they see the most keys
    const int64_t tile = tiles - 1 - task / heads, bh = task % heads, b = bh / p.H, h = bh % p.H;
    const int64_t i0 = tile * p.bq, rows = std::min(p.bq, p.Tq - i0);
    T* s = buffer.data() + worker * scratch;
    T *o = s + p.bq * p.bk, *m = o + p.bq * p.Dh, *l = m + p.bq, *alpha = l + p.bq;
    std::fill(o, o + rows * p.Dh, T(0));
    std::fill(m, m + rows, static_cast<T>(kStreamingMasked));
    std::fill(l, l + rows, T(0));
    const auto Q = head<T>(q, b, h), K = head<T>(k, b, h), V = head<T>(v, b, h);
    for_key_tiles(p, i0, i0 + rows, [&](int64_t j0, int64_t cols) {
      scores(f, p, bias, Q, K, scale, b, h, i0, rows, j0, cols, s);
      f.online_softmax(s, rows, cols, p.bk, m, l, alpha);
      for (int64_t r = 0; r < rows; ++r)
        if (alpha[r] != T(1))
          for (int64_t d = 0; d < p.Dh; ++d) o[r * p.Dh + d] *= alpha[r];
      blas::gemm(false, false, rows, p.Dh, cols, T(1), s, p.bk, V.row(j0), V.ld, T(1), o, p.Dh);
    });
    const auto O = head_seq_major<T>(out, b, h);
    T* row_lse = lse.data_ptr<T>() + bh * p.Tq + i0;
    for (int64_t r = 0; r < rows; ++r) {
      T* dst = O.row(i0 + r);
      if (l[r] > T(0)) {
        const T inv = T(1) / l[r];
        for (int64_t d = 0; d < p.Dh; ++d) dst[d] = o[r * p.Dh + d] * inv;
        row_lse[r] = m[r] + std::log(l[r]);
      } else {  // no visible key: a zero output, and probabilities exp(S - huge) = 0 in backward
        std::fill(dst, dst + p.Dh, T(0));
        row_lse[r] = -static_cast<T>(kStreamingMasked);
      }
    }
  });
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                const AttentionExtras& x, const KernelOptions& options) {
  const auto p = problem_of(q, k, x.pad, options.visibility, options.tiles);
  auto out = torch::empty({p.B, p.Tq, p.H, p.Dh}, q.options());
  auto lse = torch::empty({p.B, p.H, p.Tq}, q.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_forward", [&] {
    std::optional<FirePieces<scalar_t>> fire;
    if (x.fire()) fire = fire_pieces<scalar_t>(x.psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2, p.Tq);
    forward_kernel<scalar_t>(q, k, v, bias_of<scalar_t>(x.dense, x.relative, x.forget, p.B, fire ? &*fire : nullptr), p,
                             out, lse);
  });
  return {out, lse};
}

}  // namespace ropelab::streaming
