#include "ropelab/ops/attention/streaming_attention.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
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

/// A half-open range of keys.
struct KeyRange {
  int64_t begin = 0, end = 0;
};

/// The problem's shapes and masks, and the key ranges each query tile visits.
struct Problem {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dh = 0, bq = 0, bk = 0;
  KeyVisibility vis;
  const bool* pad = nullptr;                  // (B, Tk) or nullptr
  std::vector<int64_t> padded_before;         // (B, Tk + 1): padded keys in [0, j), when pad
  int64_t offset() const { return Tk - Tq; }  // query i is aligned with key i + offset
  int64_t query_tiles() const { return (Tq + bq - 1) / bq; }

  /// At most two ranges of keys that queries [i0, i1) may see: the sinks, then the
  /// causal / window span. Keys outside them are hidden from every query of the tile.
  int ranges(int64_t i0, int64_t i1, KeyRange out[2]) const {
    const int64_t a0 = i0 + offset(), a1 = i1 - 1 + offset();
    int64_t lo = 0, hi = Tk;
    if (vis.causal) hi = std::min(hi, a1 + 1);
    if (vis.window > 0) {
      lo = std::max<int64_t>(0, a0 - vis.window + 1);
      if (!vis.causal) hi = std::min(hi, a1 + vis.window);
    }
    int n = 0;
    if (vis.window > 0 && vis.sinks > 0 && lo > 0) {
      const int64_t sink_end = std::min({vis.sinks, lo, vis.causal ? a1 + 1 : Tk});
      if (sink_end > 0) out[n++] = {0, sink_end};
    }
    if (lo < hi) out[n++] = {lo, hi};
    return n;
  }

  /// Whether every query of [i0, i1) sees every key of [j0, j1) of batch row b.
  bool all_visible(int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    if (pad && padded_before[b * (Tk + 1) + j1] != padded_before[b * (Tk + 1) + j0]) return false;
    const int64_t a0 = i0 + offset(), a1 = i1 - 1 + offset();  // the first and last row's key
    if (vis.causal && j1 - 1 > a0) return false;
    if (vis.window > 0 && j1 > vis.sinks) {
      const int64_t first = std::max(j0, vis.sinks);  // the keys that only the window shows
      if (first < a1 - vis.window + 1) return false;
      if (!vis.causal && j1 - 1 > a0 + vis.window - 1) return false;
    }
    return true;
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

/// The logit bias as the tile loops read it.
template <typename T>
struct Bias {
  const T* relative = nullptr;  // (H, Tq + Tk - 1)
  const T* dense = nullptr;     // (1|B, H, Tq, Tk)
  bool dense_per_batch = false;
  /// Adds the bias of (b, h) to the tile of queries [i0, i0 + rows) and keys [j0, j0 + cols).
  void add(const Loops<T>& f, T* s, int64_t ld, const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t rows,
           int64_t j0, int64_t cols) const {
    if (relative)  // query i0 + r, key j0 + c: column j0 + c - i0 - r + Tq - 1
      f.add_bias(s, rows, cols, ld, relative + h * (p.Tq + p.Tk - 1) + (j0 - i0 + p.Tq - 1), -1);
    if (dense)
      f.add_bias(s, rows, cols, ld, dense + (((dense_per_batch ? b : 0) * p.H + h) * p.Tq + i0) * p.Tk + j0, p.Tk);
  }
};

template <typename T>
Bias<T> bias_of(const torch::Tensor& dense, const torch::Tensor& relative, int64_t B) {
  Bias<T> bias;
  if (relative.numel()) bias.relative = relative.data_ptr<T>();
  if (dense.numel()) bias.dense = dense.data_ptr<T>(), bias.dense_per_batch = dense.size(0) == B && B > 1;
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

class StreamingAttention : public torch::autograd::Function<StreamingAttention> {
 public:
  /// pad, dense and relative: empty when absent (autograd Functions take no undefined tensors).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& pad, const torch::Tensor& dense,
                               const torch::Tensor& relative, bool causal, int64_t window, int64_t sinks,
                               int64_t tile_queries, int64_t tile_keys) {
    const KeyVisibility vis{causal, window, sinks};
    const auto p = problem_of(q, k, pad, vis, {tile_queries, tile_keys});
    auto out = torch::empty({p.B, p.Tq, p.H, p.Dh}, q.options());
    auto lse = torch::empty({p.B, p.H, p.Tq}, q.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_forward", [&] {
      forward_kernel<scalar_t>(q, k, v, bias_of<scalar_t>(dense, relative, p.B), p, out, lse);
    });
    ctx->save_for_backward({q, k, v, pad, dense, relative, out, lse});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["window"] = window;
    ctx->saved_data["sinks"] = sinks;
    ctx->saved_data["tile_queries"] = tile_queries;
    ctx->saved_data["tile_keys"] = tile_keys;
    return out.permute({0, 2, 1, 3});  // (B, H, Tq, Dh) view
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &pad = saved[3], &dense = saved[4], &relative = saved[5],
               &out = saved[6], &lse = saved[7];
    const KeyVisibility vis{ctx->saved_data["causal"].toBool(), ctx->saved_data["window"].toInt(),
                            ctx->saved_data["sinks"].toInt()};
    const StreamingTiles tiles{ctx->saved_data["tile_queries"].toInt(), ctx->saved_data["tile_keys"].toInt()};
    const auto p = problem_of(q, k, pad, vis, tiles);
    auto grad_out = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();  // (B, H, Tq, Dh)
    const int64_t groups = backward_groups(p), columns = p.Tq + p.Tk - 1;
    auto dq = torch::zeros({p.B, p.Tq, p.H, p.Dh}, q.options());
    auto dk = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
    auto dv = torch::zeros({groups, p.B, p.H, p.Tk, p.Dh}, q.options());
    torch::Tensor d_relative, d_dense;
    // needs_input_grad counts tensor inputs: q, k, v, pad, dense (4), relative (5)
    if (relative.numel() && ctx->needs_input_grad(5))
      d_relative = torch::zeros({groups, p.B, p.H, columns}, q.options());
    if (dense.numel() && ctx->needs_input_grad(4)) d_dense = torch::zeros({p.B, p.H, p.Tq, p.Tk}, q.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "streaming_attention_backward", [&] {
      Grads<scalar_t> g{dq.data_ptr<scalar_t>(), dk.data_ptr<scalar_t>(), dv.data_ptr<scalar_t>()};
      if (d_relative.defined()) g.relative = d_relative.data_ptr<scalar_t>();
      if (d_dense.defined()) g.dense = d_dense.data_ptr<scalar_t>();
      backward_kernel<scalar_t>(q, k, v, out, lse, grad_out, bias_of<scalar_t>(dense, relative, p.B), p, groups, g);
    });
    // partial sums added in a fixed order: the result does not depend on the thread timing
    auto reduce = [&](const torch::Tensor& x) { return groups == 1 ? x[0] : x.sum(0); };
    if (d_relative.defined()) d_relative = d_relative.sum(torch::IntArrayRef{0, 1});
    if (d_dense.defined() && dense.size(0) != p.B) d_dense = d_dense.sum(0, true);
    return {dq.permute({0, 2, 1, 3}), reduce(dk),      reduce(dv),      torch::Tensor(), d_dense,        d_relative,
            torch::Tensor(),          torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool streaming_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& dense_bias, const torch::Tensor& relative_bias) {
  return cpu_attention_operands_ok(q, k, v, dense_bias, relative_bias);
}

torch::Tensor streaming_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& key_padding_mask, const KeyVisibility& visibility,
                                      const torch::Tensor& dense_bias, const torch::Tensor& relative_bias,
                                      const StreamingTiles& tiles) {
  TORCH_CHECK(streaming_attention_available(q, k, v, dense_bias, relative_bias),
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
  auto empty = [&](torch::ScalarType type) { return torch::empty({0}, torch::TensorOptions().dtype(type)); };
  auto pad = key_padding_mask.defined() ? key_padding_mask.to(torch::kBool).contiguous() : empty(torch::kBool);
  auto dense = dense_bias.defined() ? dense_bias.contiguous() : empty(q.scalar_type());
  auto relative = relative_bias.defined() ? relative_bias.contiguous() : empty(q.scalar_type());
  return StreamingAttention::apply(q, k, v, pad, dense, relative, visibility.causal, visibility.window,
                                   visibility.sinks, tiles.queries, tiles.keys);
}

}  // namespace ropelab
