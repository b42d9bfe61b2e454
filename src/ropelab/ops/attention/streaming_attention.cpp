#include "ropelab/ops/attention/streaming_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <vector>

#include "ropelab/ops/attention/blas.h"
#include "ropelab/ops/attention/operands.h"
#include "ropelab/ops/attention/streaming_attention_cpu.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab {

namespace {

/// The tile loops of the CPU build that runs now, for T.
template <typename T>
struct Loops {
  OnlineSoftmaxFn<T> online_softmax;
  ProbabilitiesFn<T> probabilities;
  SoftmaxGradFn<T> softmax_grad;
  AddRowsFn<T> add_rows;
  AddBiasFn<T> add_bias;
};

const StreamingAttentionCpuKernels& kernels() {
  return cpu_kernel_level() == CpuKernels::avx2 ? cpu_avx2::streaming_attention : cpu_baseline::streaming_attention;
}

template <typename T>
Loops<T> loops();
template <>
Loops<float> loops<float>() {
  const auto& k = kernels();
  return {k.online_softmax_float, k.probabilities_float, k.softmax_grad_float, k.add_rows_float, k.add_bias_float};
}
template <>
Loops<double> loops<double>() {
  const auto& k = kernels();
  return {k.online_softmax_double, k.probabilities_double, k.softmax_grad_double, k.add_rows_double, k.add_bias_double};
}

/// The problem's shapes and masks, and the key ranges each query tile visits.
struct Problem {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dh = 0, bq = 0, bk = 0;
  KeyVisibility vis;
  const bool* pad = nullptr;                  // (B, Tk) or nullptr
  std::vector<int64_t> padded_before;         // (B, Tk + 1): padded keys in [0, j), when pad
  int64_t offset() const { return Tk - Tq; }  // query i is aligned with key i + offset
  int64_t query_tiles() const { return (Tq + bq - 1) / bq; }

  /// The keys that queries [i0, i1) may see (visible_key_ranges).
  int ranges(int64_t i0, int64_t i1, KeyRange out[2]) const { return visible_key_ranges(vis, Tq, Tk, i0, i1, out); }

  /// Whether every query of [i0, i1) sees every key of [j0, j1) of batch row b.
  bool all_visible(int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    if (pad && padded_before[b * (Tk + 1) + j1] != padded_before[b * (Tk + 1) + j0]) return false;
    return sees_whole_tile(vis, Tq, Tk, i0, i1, j0, j1);
  }

  /// Writes kStreamingMasked into the logits S (rows x cols, ld) of queries from i0 and
  /// keys from j0 that are hidden.
  template <typename T>
  void mask(T* s, int64_t ld, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    const bool* p = pad ? pad + b * Tk + j0 : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t a = i0 + r + offset();
      T* row = s + r * ld;
      for (int64_t c = 0; c < cols; ++c)
        if ((p && p[c]) || !vis.visible(a, j0 + c)) row[c] = static_cast<T>(kStreamingMasked);
    }
  }
};

Problem problem_of(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& pad, const KeyVisibility& vis,
                   const StreamingTiles& tiles) {
  Problem p;
  p.B = q.size(0), p.H = q.size(1), p.Tq = q.size(2), p.Tk = k.size(2), p.Dh = q.size(3);
  p.bq = tiles.queries, p.bk = tiles.keys, p.vis = vis;
  if (pad.numel()) {
    p.pad = pad.data_ptr<bool>();
    p.padded_before.assign(static_cast<size_t>(p.B * (p.Tk + 1)), 0);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t j = 0; j < p.Tk; ++j)
        p.padded_before[b * (p.Tk + 1) + j + 1] = p.padded_before[b * (p.Tk + 1) + j] + (p.pad[b * p.Tk + j] ? 1 : 0);
  }
  return p;
}

/// Row-major view of rows of one (batch, head) inside a strided (B, H, T, Dh) tensor.
template <typename T>
struct HeadView {
  T* ptr;
  int64_t ld;
  T* row(int64_t i) const { return ptr + i * ld; }
};
template <typename T>
HeadView<T> head(const torch::Tensor& x, int64_t b, int64_t h) {
  return {x.data_ptr<T>() + b * x.stride(0) + h * x.stride(1), x.stride(2)};
}
/// The same for a (B, T, H, Dh) tensor.
template <typename T>
HeadView<T> head_seq_major(const torch::Tensor& x, int64_t b, int64_t h) {
  return {x.data_ptr<T>() + b * x.stride(0) + h * x.stride(2), x.stride(1)};
}

/// FIRE's bias (FireTileBias) as linear pieces: mlp_h(x) = slope[h][s] x + intercept[h][s]
/// on piece s = the number of breakpoints <= x, and per query row the distance from which
/// x reaches each breakpoint, so that a row's keys fall into runs of one piece.
template <typename T>
struct FirePieces {
  int64_t m = 0;                    // breakpoints, ascending
  int64_t n = 0;                    // psi's length
  std::vector<T> slope, intercept;  // (H, m + 1)
  std::vector<int64_t> reach;       // (Tq, m): the first distance whose x is >= breakpoint k
  torch::Tensor active;             // (m + 1, K) double: 1 where unit k is active on piece s
  const T *psi = nullptr, *inv_norm = nullptr;

  /// Calls run(c0, c1, s, d0, step) for the runs of keys [j0, j0 + cols) that query i
  /// (aligned with key a) sees on one piece s: columns [c0, c1), the first at distance d0,
  /// the distance changing by `step` (-1 left of a, +1 right of it).
  template <typename Run>
  void runs(int64_t i, int64_t a, int64_t j0, int64_t cols, const Run& run) const {
    const int64_t* first = reach.data() + i * m;
    auto piece = [&](int64_t distance) { return std::upper_bound(first, first + m, distance) - first; };
    const int64_t end = j0 + cols, left_end = std::min(end, a + 1);
    int64_t j = j0;
    while (j < left_end) {  // j <= a: the distance a - j falls, and with it the piece
      const int64_t s = piece(a - j), stop = s > 0 ? std::min(left_end, a - first[s - 1] + 1) : left_end;
      run(j - j0, stop - j0, s, a - j, int64_t{-1});
      j = stop;
    }
    j = std::max(j, a + 1);
    while (j < end) {  // j > a: the distance j - a grows
      const int64_t s = piece(j - a), stop = s < m ? std::min(end, a + first[s]) : end;
      run(j - j0, stop - j0, s, j - a, int64_t{1});
      j = stop;
    }
  }
};

template <typename T>
FirePieces<T> fire_pieces(const torch::Tensor& psi, const torch::Tensor& inv_norm, const torch::Tensor& w1,
                          const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2, int64_t Tq) {
  FirePieces<T> f;
  const auto W1 = w1.to(torch::kDouble), B1 = b1.to(torch::kDouble);
  const int64_t K = W1.numel(), H = w2.size(0);
  const auto* pw = W1.data_ptr<double>();
  const auto* pb = B1.data_ptr<double>();
  std::vector<double> breaks;
  for (int64_t k = 0; k < K; ++k)
    if (pw[k] != 0) breaks.push_back(-pb[k] / pw[k]);
  std::sort(breaks.begin(), breaks.end());
  f.m = static_cast<int64_t>(breaks.size());
  // which units are active on each piece: at a point inside it
  torch::Tensor active = torch::zeros({f.m + 1, K}, torch::kDouble);
  auto act = active.accessor<double, 2>();
  for (int64_t s = 0; s <= f.m; ++s) {
    const double x = f.m == 0   ? 0.0
                     : s == 0   ? breaks[0] - 1.0
                     : s == f.m ? breaks[static_cast<size_t>(f.m - 1)] + 1.0
                                : 0.5 * (breaks[static_cast<size_t>(s - 1)] + breaks[static_cast<size_t>(s)]);
    for (int64_t k = 0; k < K; ++k) act[s][k] = pw[k] * x + pb[k] > 0 ? 1.0 : 0.0;
  }
  f.active = active;
  const torch::Tensor W2 = w2.to(torch::kDouble);
  const torch::Tensor slope = torch::matmul(W2 * W1.unsqueeze(0), active.t()).contiguous();  // (H, m + 1)
  const torch::Tensor intercept =
      (torch::matmul(W2 * B1.unsqueeze(0), active.t()) + b2.to(torch::kDouble).unsqueeze(1)).contiguous();
  f.slope.assign(slope.data_ptr<double>(), slope.data_ptr<double>() + H * (f.m + 1));
  f.intercept.assign(intercept.data_ptr<double>(), intercept.data_ptr<double>() + H * (f.m + 1));
  f.psi = psi.data_ptr<T>();
  f.inv_norm = inv_norm.data_ptr<T>();
  const int64_t n = f.n = psi.numel();
  f.reach.resize(static_cast<size_t>(Tq * f.m));
  at::parallel_for(0, Tq, 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t k = 0; k < f.m; ++k) {  // binary search: psi is non-decreasing
        int64_t lo = 0, hi = n;
        while (lo < hi) {
          const int64_t mid = (lo + hi) / 2;
          if (static_cast<double>(f.psi[mid]) * static_cast<double>(f.inv_norm[i]) >= breaks[static_cast<size_t>(k)])
            hi = mid;
          else
            lo = mid + 1;
        }
        f.reach[static_cast<size_t>(i * f.m + k)] = lo;
      }
  });
  return f;
}

/// The logit bias as the tile loops read it.
template <typename T>
struct Bias {
  const T* relative = nullptr;  // (H, Tq + Tk - 1)
  const T* dense = nullptr;     // (1|B, H, Tq, Tk)
  bool dense_per_batch = false;
  const FirePieces<T>* fire = nullptr;
  const T* forget = nullptr;  // (B, H, Tk): cumulative log forget gates
  /// Adds the bias of (b, h) to the tile of queries [i0, i0 + rows) and keys [j0, j0 + cols).
  void add(const Loops<T>& f, T* s, int64_t ld, const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t rows,
           int64_t j0, int64_t cols) const {
    if (relative)  // query i0 + r, key j0 + c: column j0 + c - i0 - r + Tq - 1
      f.add_bias(s, rows, cols, ld, relative + h * (p.Tq + p.Tk - 1) + (j0 - i0 + p.Tq - 1), -1);
    if (dense)
      f.add_bias(s, rows, cols, ld, dense + (((dense_per_batch ? b : 0) * p.H + h) * p.Tq + i0) * p.Tk + j0, p.Tk);
    if (fire)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        T* row = s + r * ld;
        const T inv = fire->inv_norm[i];
        const T* slope = fire->slope.data() + h * (fire->m + 1);
        const T* intercept = fire->intercept.data() + h * (fire->m + 1);
        fire->runs(i, i + p.offset(), j0, cols, [&](int64_t c0, int64_t c1, int64_t piece, int64_t d0, int64_t step) {
          const T alpha = slope[piece] * inv, beta = intercept[piece];
          const T* psi = fire->psi + d0;  // column c0 + c: distance d0 + step c
          T* out = row + c0;
          if (step < 0)
            for (int64_t c = 0; c < c1 - c0; ++c) out[c] += alpha * psi[-c] + beta;
          else
            for (int64_t c = 0; c < c1 - c0; ++c) out[c] += alpha * psi[c] + beta;
        });
      }
    if (forget) {  // c[a] - c[j]: the sum of log f over (j, a]
      const T* c_head = forget + (b * p.H + h) * p.Tk;
      const T* c_keys = c_head + j0;
      for (int64_t r = 0; r < rows; ++r) {
        const T c_query = c_head[i0 + r + p.offset()];
        T* row = s + r * ld;
        for (int64_t c = 0; c < cols; ++c) row[c] += c_query - c_keys[c];
      }
    }
  }
};

template <typename T>
Bias<T> bias_of(const torch::Tensor& dense, const torch::Tensor& relative, const torch::Tensor& forget, int64_t B,
                const FirePieces<T>* fire = nullptr) {
  Bias<T> bias;
  if (forget.numel()) bias.forget = forget.data_ptr<T>();
  if (relative.numel()) bias.relative = relative.data_ptr<T>();
  if (dense.numel()) bias.dense = dense.data_ptr<T>(), bias.dense_per_batch = dense.size(0) == B && B > 1;
  bias.fire = fire;
  return bias;
}

/// Runs task(index, worker) for index in [0, tasks) on every thread, each taking the next
/// index when it is done with one; `worker` numbers the threads, for their scratch space.
template <typename Task>
void run_tasks(int64_t tasks, const Task& task) {
  std::atomic<int64_t> next{0};
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), tasks));
  at::parallel_for(0, workers, 1, [&](int64_t begin, int64_t end) {
    for (int64_t worker = begin; worker < end; ++worker)
      for (int64_t t = next++; t < tasks; t = next++) task(t, worker);
  });
}

/// Calls f(j0, cols) for each key tile that queries [i0, i1) visit.
template <typename F>
void for_key_tiles(const Problem& p, int64_t i0, int64_t i1, const F& f) {
  KeyRange ranges[2];
  const int n = p.ranges(i0, i1, ranges);
  for (int r = 0; r < n; ++r)
    for (int64_t j0 = ranges[r].begin; j0 < ranges[r].end; j0 += p.bk) f(j0, std::min(p.bk, ranges[r].end - j0));
}

/// S (rows x cols) = scale Q K^T + bias, hidden logits masked.
template <typename T>
void scores(const Loops<T>& f, const Problem& p, const Bias<T>& bias, const HeadView<T>& Q, const HeadView<T>& K,
            T scale, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* s) {
  blas::gemm(false, true, rows, cols, p.Dh, scale, Q.row(i0), Q.ld, K.row(j0), K.ld, T(0), s, p.bk);
  bias.add(f, s, p.bk, p, b, h, i0, rows, j0, cols);
  if (!p.all_visible(b, i0, i0 + rows, j0, j0 + cols)) p.mask(s, p.bk, b, i0, rows, j0, cols);
}

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

/// FIRE's gradients from dS (rows x cols, ld) of queries from i0 and keys from j0.
template <typename T>
void fire_backward(const FirePieces<T>& fire, const Problem& p, int64_t h, const T* ds, int64_t ld, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols, T* d_psi, double* sums, T* d_inv) {
  const T* slope = fire.slope.data() + h * (fire.m + 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const T inv = fire.inv_norm[i];
    const T* g = ds + r * ld;
    T row = 0;  // sum of dS slope psi: the gradient of inv_norm[i]
    fire.runs(i, i + p.offset(), j0, cols, [&](int64_t c0, int64_t c1, int64_t piece, int64_t d0, int64_t step) {
      T g_sum = 0, gx_sum = 0, gslope_psi = 0;
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t distance = d0 + step * (c - c0);
        const T psi = fire.psi[distance], v = g[c] * slope[piece];
        d_psi[distance] += v * inv;
        gslope_psi += v * psi;
        g_sum += g[c];
        gx_sum += g[c] * psi;
      }
      row += gslope_psi;
      sums[2 * piece] += static_cast<double>(g_sum);
      sums[2 * piece + 1] += static_cast<double>(gx_sum) * static_cast<double>(inv);
    });
    d_inv[i] += row;
  }
}

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
          fire_backward(*bias.fire, p, h, dp, p.bk, i0, rows, j0, cols, g.fire_psi + task * bias.fire->n,
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

/// The forward pass: -> the output (B, Tq, H, Dh), contiguous, and each row's log-sum-exp
/// (B, H, Tq).
std::pair<torch::Tensor, torch::Tensor> streaming_forward(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& pad,
    const torch::Tensor& dense, const torch::Tensor& relative, const torch::Tensor& psi, const torch::Tensor& inv_norm,
    const torch::Tensor& w1, const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
    const torch::Tensor& forget, const KeyVisibility& vis, const StreamingTiles& tiles) {
  const auto p = problem_of(q, k, pad, vis, tiles);
  auto out = torch::empty({p.B, p.Tq, p.H, p.Dh}, q.options());
  auto lse = torch::empty({p.B, p.H, p.Tq}, q.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_forward", [&] {
    std::optional<FirePieces<scalar_t>> fire;
    if (psi.numel()) fire = fire_pieces<scalar_t>(psi, inv_norm, w1, b1, w2, b2, p.Tq);
    forward_kernel<scalar_t>(q, k, v, bias_of<scalar_t>(dense, relative, forget, p.B, fire ? &*fire : nullptr), p, out,
                             lse);
  });
  return {out, lse};
}

class StreamingAttention : public torch::autograd::Function<StreamingAttention> {
 public:
  /// pad, dense, relative, FIRE's psi, inv_norm, w1, b1, w2, b2 and forget: empty when
  /// absent (autograd Functions take no undefined tensors).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& pad, const torch::Tensor& dense,
                               const torch::Tensor& relative, const torch::Tensor& psi, const torch::Tensor& inv_norm,
                               const torch::Tensor& w1, const torch::Tensor& b1, const torch::Tensor& w2,
                               const torch::Tensor& b2, const torch::Tensor& forget, bool causal, int64_t window,
                               int64_t sinks, int64_t tile_queries, int64_t tile_keys) {
    const KeyVisibility vis{causal, window, sinks};
    auto [out, lse] = streaming_forward(q, k, v, pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget, vis,
                                        {tile_queries, tile_keys});
    ctx->save_for_backward({q, k, v, pad, dense, relative, out, lse, psi, inv_norm, w1, b1, w2, b2, forget});
    save_visibility(ctx, vis);
    ctx->saved_data["tile_queries"] = tile_queries;
    ctx->saved_data["tile_keys"] = tile_keys;
    return out.permute({0, 2, 1, 3});  // (B, H, Tq, Dh) view
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &pad = saved[3], &dense = saved[4], &relative = saved[5],
               &out = saved[6], &lse = saved[7], &psi = saved[8], &inv_norm = saved[9], &w1 = saved[10],
               &b1 = saved[11], &w2 = saved[12], &b2 = saved[13], &forget = saved[14];
    const KeyVisibility vis = saved_visibility(ctx);
    const StreamingTiles tiles{ctx->saved_data["tile_queries"].toInt(), ctx->saved_data["tile_keys"].toInt()};
    const auto p = problem_of(q, k, pad, vis, tiles);
    auto grad_out = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();  // (B, H, Tq, Dh)
    const int64_t groups = backward_groups(p), columns = p.Tq + p.Tk - 1;
    auto dq = torch::zeros({p.B, p.Tq, p.H, p.Dh}, q.options());
    auto dk = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
    auto dv = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
    torch::Tensor d_relative, d_dense;
    if (relative.numel() && ctx->needs_input_grad(kRelativeInput))
      d_relative = torch::zeros({groups, p.B, p.H, columns}, q.options());
    if (dense.numel() && ctx->needs_input_grad(kDenseInput))
      d_dense = torch::zeros({p.B, p.H, p.Tq, p.Tk}, q.options());
    const bool fire_grads = psi.numel() > 0 && needs_fire_gradient(ctx);
    torch::Tensor d_psi, d_inv, sums, active, d_forget;
    if (forget.numel() && ctx->needs_input_grad(kForgetInput))
      d_forget = torch::zeros({groups, p.B, p.H, p.Tk}, q.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_backward", [&] {
      std::optional<FirePieces<scalar_t>> fire;
      if (psi.numel()) fire = fire_pieces<scalar_t>(psi, inv_norm, w1, b1, w2, b2, p.Tq);
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
      const auto W1 = w1.to(torch::kDouble), B1 = b1.to(torch::kDouble), W2 = w2.to(torch::kDouble);
      d_w2 = (g1 * W1.unsqueeze(0) + g0 * B1.unsqueeze(0)).to(w2.scalar_type());
      d_b2 = per_piece.select(2, 0).sum(1).to(b2.scalar_type());
      d_w1 = (g1 * W2).sum(0).to(w1.scalar_type());
      d_b1 = (g0 * W2).sum(0).to(b1.scalar_type());
      d_psi = d_psi.sum(torch::IntArrayRef{0, 1, 2});
      d_inv = d_inv.sum(torch::IntArrayRef{0, 1});
    }
    // partial sums added in a fixed order: the result does not depend on the thread timing
    auto reduce = [&](const torch::Tensor& x) { return groups == 1 ? x[0] : x.sum(0); };
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
            d_forget,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

bool streaming_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                                   const FireTileBias& fire, const torch::Tensor& forget) {
  return cpu_attention_operands_ok(q, k, v, dense_bias, relative_bias, fire, forget);
}

torch::Tensor fire_tile_bias_dense(const FireTileBias& fire, int64_t tq, int64_t tk) {
  auto options = torch::TensorOptions().dtype(torch::kLong).device(fire.psi.device());
  auto rows = [&](int64_t start, int64_t n) {  // query rows [start, start + n) -> (H, n, Tk)
    auto aligned = torch::arange(start, start + n, options).unsqueeze(1) + (tk - tq);  // (n, 1)
    auto distance = (torch::arange(tk, options).unsqueeze(0) - aligned).abs();         // (n, Tk)
    auto x =
        fire.psi.index_select(0, distance.flatten()).view({n, tk}) * fire.inv_norm.narrow(0, start, n).unsqueeze(1);
    auto hidden = torch::relu(x.unsqueeze(-1) * fire.w1.reshape({-1}) + fire.b1);  // (n, Tk, K)
    return torch::linear(hidden, fire.w2, fire.b2).permute({2, 0, 1});
  };
  // with gradient the MLP's activations are kept whatever the blocking; without, blocks of
  // rows keep the (rows, Tk, K) activations small
  if (torch::GradMode::is_enabled()) return rows(0, tq).unsqueeze(0);
  auto bias = torch::empty({fire.w2.size(0), tq, tk}, fire.psi.options());
  constexpr int64_t block = 128;
  for (int64_t start = 0; start < tq; start += block) {
    const int64_t n = std::min(block, tq - start);
    bias.narrow(1, start, n).copy_(rows(start, n));
  }
  return bias.unsqueeze(0);  // (1, H, Tq, Tk)
}

namespace {
/// The checks of every entry point; -> the optional operands as the kernel takes them.
AttentionExtras checked_extras(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& key_padding_mask, const KeyVisibility& visibility,
                               const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                               const StreamingTiles& tiles, const FireTileBias& fire, const torch::Tensor& forget) {
  TORCH_CHECK(streaming_attention_available(q, k, v, dense_bias, relative_bias, fire, forget),
              "streaming_attention_cpu: needs CPU float or double q, k, v (B, H, T, Dh) with unit last strides ",
              "and biases of their type and shape; got q ", q.sizes(), " ", q.scalar_type(), " on ", q.device());
  TORCH_CHECK(tiles.queries > 0 && tiles.keys > 0, "streaming_attention_cpu: tile sizes must be positive, got ",
              tiles.queries, " x ", tiles.keys);
  TORCH_CHECK(visibility.window >= 0 && visibility.sinks >= 0,
              "streaming_attention_cpu: window and sinks must be >= 0, got ", visibility.window, " and ",
              visibility.sinks);
  TORCH_CHECK(!key_padding_mask.defined() || (key_padding_mask.dim() == 2 && key_padding_mask.size(0) == q.size(0) &&
                                              key_padding_mask.size(1) == k.size(2)),
              "streaming_attention_cpu: key_padding_mask must be (B, Tk) = (", q.size(0), ", ", k.size(2), "), got ",
              key_padding_mask.sizes());
  return AttentionExtras::of(q, key_padding_mask, dense_bias, relative_bias, fire, forget);
}
}  // namespace

torch::Tensor streaming_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& key_padding_mask, const KeyVisibility& visibility,
                                      const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                                      const StreamingTiles& tiles, const FireTileBias& fire,
                                      const torch::Tensor& forget) {
  const auto x = checked_extras(q, k, v, key_padding_mask, visibility, dense_bias, relative_bias, tiles, fire, forget);
  return StreamingAttention::apply(q, k, v, x.pad, x.dense, x.relative, x.psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2,
                                   x.forget, visibility.causal, visibility.window, visibility.sinks, tiles.queries,
                                   tiles.keys);
}

std::pair<torch::Tensor, torch::Tensor> streaming_attention_cpu_lse(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& key_padding_mask,
    const KeyVisibility& visibility, const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
    const StreamingTiles& tiles, const FireTileBias& fire, const torch::Tensor& forget) {
  const auto x = checked_extras(q, k, v, key_padding_mask, visibility, dense_bias, relative_bias, tiles, fire, forget);
  auto [out, lse] = streaming_forward(q, k, v, x.pad, x.dense, x.relative, x.psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2,
                                      x.forget, visibility, tiles);
  return {out.permute({0, 2, 1, 3}), lse};
}

}  // namespace ropelab
