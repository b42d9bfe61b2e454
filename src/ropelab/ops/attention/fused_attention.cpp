#include "ropelab/ops/attention/fused_attention.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ropelab/ops/attention/blas.h"
#include "ropelab/ops/attention/operands.h"

namespace ropelab {

namespace {

/// A (rows x cols) row-major matrix inside a strided tensor: element (r, c) at ptr[r * ld + c].
template <typename T>
struct View {
  T* ptr;
  int64_t ld;
};

/// (B, H, T, Dh) tensor -> the view of batch b, head h.
template <typename T>
View<T> head(const torch::Tensor& x, int64_t b, int64_t h) {
  return {x.data_ptr<T>() + b * x.stride(0) + h * x.stride(1), x.stride(2)};
}

struct Shape {
  int64_t B, H, Tq, Tk, Dh;
  KeyVisibility vis;
  const bool* pad;  // (B, Tk) or nullptr
  bool hidden(int64_t b, int64_t i, int64_t j) const {
    return (pad && pad[b * Tk + j]) || !vis.visible(i + Tk - Tq, j);
  }
};

/// The logit bias as the kernels read it: a relative table (H, Tq + Tk - 1), row i of
/// head h starting at column Tq - 1 - i, and/or a dense (1|B, H, Tq, Tk) tensor.
template <typename T>
struct Bias {
  const T* relative = nullptr;
  const T* dense = nullptr;
  bool dense_per_batch = false;  // (B, ...) rather than (1, ...)
  /// Adds the bias of (batch b, head h) to the row-major scores S (Tq x Tk).
  void add(T* s, const Shape& sh, int64_t b, int64_t h) const {
    const int64_t columns = sh.Tq + sh.Tk - 1;
    for (int64_t i = 0; i < sh.Tq; ++i) {
      T* row = s + i * sh.Tk;
      if (relative) {
        const T* r = relative + h * columns + (sh.Tq - 1 - i);
        for (int64_t j = 0; j < sh.Tk; ++j) row[j] += r[j];
      }
      if (dense) {
        const T* d = dense + ((dense_per_batch ? b : 0) * sh.H + h) * sh.Tq * sh.Tk + i * sh.Tk;
        for (int64_t j = 0; j < sh.Tk; ++j) row[j] += d[j];
      }
    }
  }
};

template <typename T>
Bias<T> bias_of(const torch::Tensor& dense, const torch::Tensor& relative, int64_t B) {
  Bias<T> bias;
  if (relative.numel()) bias.relative = relative.data_ptr<T>();
  if (dense.numel()) bias.dense = dense.data_ptr<T>(), bias.dense_per_batch = dense.size(0) == B && B > 1;
  return bias;
}

/// Row-wise masked softmax of S (Tq x Tk, row-major) in place. A row with every key
/// hidden becomes zeros: its query gets a zero output.
template <typename T>
void masked_softmax(T* s, const Shape& sh, int64_t b) {
  for (int64_t i = 0; i < sh.Tq; ++i) {
    T* row = s + i * sh.Tk;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < sh.Tk; ++j)
      if (!sh.hidden(b, i, j)) max = std::max(max, row[j]);
    if (max == -std::numeric_limits<T>::infinity()) {
      std::fill(row, row + sh.Tk, T(0));
      continue;
    }
    T sum = 0;
    for (int64_t j = 0; j < sh.Tk; ++j) {
      row[j] = sh.hidden(b, i, j) ? T(0) : std::exp(row[j] - max);
      sum += row[j];
    }
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < sh.Tk; ++j) row[j] *= inv;
  }
}

template <typename T>
void forward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const Bias<T>& bias,
                    torch::Tensor& probs, torch::Tensor& out, const Shape& sh, T scale) {
  blas::SingleThreaded one_blas_thread;  // each task's products on its own thread
  at::parallel_for(0, sh.B * sh.H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / sh.H, h = bh % sh.H;
      auto Q = head<T>(q, b, h), K = head<T>(k, b, h), V = head<T>(v, b, h);
      T* P = probs.data_ptr<T>() + bh * sh.Tq * sh.Tk;  // (Tq, Tk) row-major
      // S = scale Q K^T
      blas::gemm(false, true, sh.Tq, sh.Tk, sh.Dh, scale, Q.ptr, Q.ld, K.ptr, K.ld, T(0), P, sh.Tk);
      bias.add(P, sh, b, h);  // computed here per (head, row), never as a (B, H, Tq, Tk) tensor
      masked_softmax(P, sh, b);
      // O = P V, written into out (B, Tq, H, Dh)
      T* O = out.data_ptr<T>() + b * out.stride(0) + h * out.stride(2);
      blas::gemm(false, false, sh.Tq, sh.Dh, sh.Tk, T(1), P, sh.Tk, V.ptr, V.ld, T(0), O, out.stride(1));
    }
  });
}

/// Where the backward kernel leaves the logit gradient dS of each (batch, head) for the
/// biases: summed per relative column into (B*H, Tq + Tk - 1), or copied into (B, H, Tq, Tk).
template <typename T>
struct BiasGrad {
  T* relative = nullptr;
  T* dense = nullptr;
};

template <typename T>
void backward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& probs,
                     const torch::Tensor& grad_out, torch::Tensor& dq, torch::Tensor& dk, torch::Tensor& dv,
                     const BiasGrad<T>& dbias, const Shape& sh, T scale) {
  blas::SingleThreaded one_blas_thread;
  at::parallel_for(0, sh.B * sh.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> dp(static_cast<size_t>(sh.Tq * sh.Tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / sh.H, h = bh % sh.H;
      auto Q = head<T>(q, b, h), K = head<T>(k, b, h), V = head<T>(v, b, h);
      const T* P = probs.data_ptr<T>() + bh * sh.Tq * sh.Tk;
      const T* dO = grad_out.data_ptr<T>() + b * grad_out.stride(0) + h * grad_out.stride(2);
      const int64_t ldo = grad_out.stride(1);
      T* dQ = dq.data_ptr<T>() + b * dq.stride(0) + h * dq.stride(2);
      T* dK = dk.data_ptr<T>() + b * dk.stride(0) + h * dk.stride(2);
      T* dV = dv.data_ptr<T>() + b * dv.stride(0) + h * dv.stride(2);
      // dP = dO V^T
      blas::gemm(false, true, sh.Tq, sh.Tk, sh.Dh, T(1), dO, ldo, V.ptr, V.ld, T(0), dp.data(), sh.Tk);
      // dV = P^T dO
      blas::gemm(true, false, sh.Tk, sh.Dh, sh.Tq, T(1), P, sh.Tk, dO, ldo, T(0), dV, dv.stride(1));
      // softmax backward: dS = P * (dP - rowsum(dP * P)); hidden keys have P = 0
      for (int64_t i = 0; i < sh.Tq; ++i) {
        T* row = dp.data() + i * sh.Tk;
        const T* p = P + i * sh.Tk;
        T dot = 0;
        for (int64_t j = 0; j < sh.Tk; ++j) dot += row[j] * p[j];
        for (int64_t j = 0; j < sh.Tk; ++j) row[j] = p[j] * (row[j] - dot);
        if (dbias.relative) {  // each column of the table collects its diagonal of dS
          T* r = dbias.relative + bh * (sh.Tq + sh.Tk - 1) + (sh.Tq - 1 - i);
          for (int64_t j = 0; j < sh.Tk; ++j) r[j] += row[j];
        }
      }
      if (dbias.dense) std::copy(dp.begin(), dp.end(), dbias.dense + bh * sh.Tq * sh.Tk);
      // dQ = scale dS K
      blas::gemm(false, false, sh.Tq, sh.Dh, sh.Tk, scale, dp.data(), sh.Tk, K.ptr, K.ld, T(0), dQ, dq.stride(1));
      // dK = scale dS^T Q
      blas::gemm(true, false, sh.Tk, sh.Dh, sh.Tq, scale, dp.data(), sh.Tk, Q.ptr, Q.ld, T(0), dK, dk.stride(1));
    }
  });
}

Shape shape_of(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& pad, const KeyVisibility& vis) {
  return {q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), vis, pad.numel() ? pad.data_ptr<bool>() : nullptr};
}

class FusedAttention : public torch::autograd::Function<FusedAttention> {
 public:
  /// dense and relative: the biases, empty when absent (autograd Functions take no
  /// undefined tensors).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& pad, const torch::Tensor& dense,
                               const torch::Tensor& relative, const KernelOptions& options) {
    const auto sh = shape_of(q, k, pad, options.visibility);
    auto opts = q.options();
    auto probs = torch::empty({sh.B, sh.H, sh.Tq, sh.Tk}, opts);
    auto out = torch::empty({sh.B, sh.Tq, sh.H, sh.Dh}, opts);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_forward", [&] {
      forward_kernel<scalar_t>(q, k, v, bias_of<scalar_t>(dense, relative, sh.B), probs, out, sh,
                               static_cast<scalar_t>(1.0 / std::sqrt(double(sh.Dh))));
    });
    ctx->save_for_backward({q, k, v, probs, pad});
    save_kernel_options(ctx, options);
    ctx->saved_data["dense_sizes"] = dense.sizes();
    ctx->saved_data["relative_columns"] = relative.numel() ? relative.size(1) : int64_t(0);
    return out.permute({0, 2, 1, 3});  // (B, H, Tq, Dh) view
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3], &pad = saved[4];
    const auto sh = shape_of(q, k, pad, saved_kernel_options(ctx).visibility);
    auto grad_out = grads[0].permute({0, 2, 1, 3}).contiguous();  // (B, Tq, H, Dh)
    auto dq = torch::empty({sh.B, sh.Tq, sh.H, sh.Dh}, q.options());
    auto dk = torch::empty({sh.B, sh.Tk, sh.H, sh.Dh}, k.options());
    auto dv = torch::empty({sh.B, sh.Tk, sh.H, sh.Dh}, v.options());
    const auto dense_sizes = ctx->saved_data["dense_sizes"].toIntVector();
    const int64_t columns = ctx->saved_data["relative_columns"].toInt();
    torch::Tensor d_relative, d_dense;  // per (batch, head), reduced over the batch below
    if (columns && ctx->needs_input_grad(kRelativeInput))
      d_relative = torch::zeros({sh.B * sh.H, columns}, q.options());
    if (!dense_sizes.empty() && dense_sizes[0] > 0 && ctx->needs_input_grad(kDenseInput))
      d_dense = torch::empty({sh.B, sh.H, sh.Tq, sh.Tk}, q.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_backward", [&] {
      BiasGrad<scalar_t> dbias;
      if (d_relative.defined()) dbias.relative = d_relative.data_ptr<scalar_t>();
      if (d_dense.defined()) dbias.dense = d_dense.data_ptr<scalar_t>();
      backward_kernel<scalar_t>(q, k, v, probs, grad_out, dq, dk, dv, dbias, sh,
                                static_cast<scalar_t>(1.0 / std::sqrt(double(sh.Dh))));
    });
    if (d_relative.defined()) d_relative = d_relative.view({sh.B, sh.H, columns}).sum(0);
    if (d_dense.defined() && dense_sizes[0] != sh.B) d_dense = d_dense.sum(0, true);
    return {dq.permute({0, 2, 1, 3}),
            dk.permute({0, 2, 1, 3}),
            dv.permute({0, 2, 1, 3}),
            torch::Tensor(),
            d_dense,
            d_relative,
            torch::Tensor()};
  }
};

}  // namespace

bool fused_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const ScoreBias& bias) {
  return cpu_attention_operands_ok(q, k, v, bias);
}

torch::Tensor fused_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& key_padding_mask, const ScoreBias& bias,
                                  const KernelOptions& options) {
  check_kernel_call("fused_attention_cpu", fused_attention_available(q, k, v, bias), kCpuKernelNeeds, q, k,
                    key_padding_mask, options);
  // FIRE's factored form and a forget gate enter as one dense bias with the other forms
  ScoreBias added;
  if (bias.beyond_dense_and_relative())
    added.dense = bias.to_dense(q.size(-2), k.size(-2));
  else
    added.dense = bias.dense, added.relative = bias.relative;
  const auto x = AttentionExtras::of(q, key_padding_mask, added);
  return FusedAttention::apply(q, k, v, x.pad, x.dense, x.relative, options);
}

}  // namespace ropelab
