#pragma once
// The streaming attention kernel's working parts shared by its forward and backward
// (streaming_forward.cpp, streaming_backward.cpp): the tile loops of the CPU build that runs,
// the problem's shapes and masks, views of one head, and the task scheduling. Internal to
// ops/attention.

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "ropelab/ops/attention/blas.h"
#include "ropelab/ops/attention/kernel_options.h"
#include "ropelab/ops/attention/streaming_attention_cpu.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab::streaming {

/// The tile loops of the CPU build that runs now, for T.
template <typename T>
struct Loops {
  OnlineSoftmaxFn<T> online_softmax;
  ProbabilitiesFn<T> probabilities;
  SoftmaxGradFn<T> softmax_grad;
  AddRowsFn<T> add_rows;
  AddBiasFn<T> add_bias;
};

inline const StreamingAttentionCpuKernels& kernels() {
  return cpu_kernel_level() == CpuKernels::avx2 ? cpu_avx2::streaming_attention : cpu_baseline::streaming_attention;
}

template <typename T>
Loops<T> loops();
template <>
inline Loops<float> loops<float>() {
  const auto& k = kernels();
  return {k.online_softmax_float, k.probabilities_float, k.softmax_grad_float, k.add_rows_float, k.add_bias_float};
}
template <>
inline Loops<double> loops<double>() {
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

inline Problem problem_of(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& pad,
                          const KeyVisibility& vis, const StreamingTiles& tiles) {
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

}  // namespace ropelab::streaming
