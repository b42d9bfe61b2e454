#include "ropelab/ops/attention/fused_attention.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <cmath>
#include <limits>
#include <vector>

namespace ropelab {

namespace {

// The Fortran BLAS entry points (column-major), from the BLAS LibTorch already loaded.
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using DgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*);

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
};

const Blas& blas() {
  static const Blas b = [] {
    Blas out;
    out.sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
    out.dgemm = reinterpret_cast<DgemmFn>(dlsym(RTLD_DEFAULT, "dgemm_"));
    return out;
  }();
  return b;
}

/// Column-major C (m x n, ldc) = alpha * op(A) op(B) + beta * C.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  const char ca = ta ? 'T' : 'N', cb = tb ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  blas().sgemm(&ca, &cb, &im, &in, &ik, &alpha, a, &ilda, b, &ildb, &beta, c, &ildc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  const char ca = ta ? 'T' : 'N', cb = tb ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  blas().dgemm(&ca, &cb, &im, &in, &ik, &alpha, a, &ilda, b, &ildb, &beta, c, &ildc);
}

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
  bool causal;
  const bool* pad;  // (B, Tk) or nullptr
  bool hidden(int64_t b, int64_t i, int64_t j) const { return (causal && j > i + Tk - Tq) || (pad && pad[b * Tk + j]); }
};

/// Row-wise masked softmax of S (Tq x Tk, row-major) in place. A row with every key
/// hidden becomes uniform, as the unfused path's finite fill value gives.
template <typename T>
void masked_softmax(T* s, const Shape& sh, int64_t b) {
  for (int64_t i = 0; i < sh.Tq; ++i) {
    T* row = s + i * sh.Tk;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < sh.Tk; ++j)
      if (!sh.hidden(b, i, j)) max = std::max(max, row[j]);
    if (max == -std::numeric_limits<T>::infinity()) {
      for (int64_t j = 0; j < sh.Tk; ++j) row[j] = T(1) / static_cast<T>(sh.Tk);
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
void forward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, torch::Tensor& probs,
                    torch::Tensor& out, const Shape& sh, T scale) {
  at::parallel_for(0, sh.B * sh.H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / sh.H, h = bh % sh.H;
      auto Q = head<T>(q, b, h), K = head<T>(k, b, h), V = head<T>(v, b, h);
      T* P = probs.data_ptr<T>() + bh * sh.Tq * sh.Tk;  // (Tq, Tk) row-major
      // Row-major X (r x c, ld) is column-major X^T (c x r, ld); so S^T = K Q^T.
      gemm(true, false, sh.Tk, sh.Tq, sh.Dh, scale, K.ptr, K.ld, Q.ptr, Q.ld, T(0), P, sh.Tk);
      masked_softmax(P, sh, b);
      // O^T = V^T P^T, written into out (B, Tq, H, Dh)
      T* O = out.data_ptr<T>() + b * out.stride(0) + h * out.stride(2);
      gemm(false, false, sh.Dh, sh.Tq, sh.Tk, T(1), V.ptr, V.ld, P, sh.Tk, T(0), O, out.stride(1));
    }
  });
}

template <typename T>
void backward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& probs,
                     const torch::Tensor& grad_out, torch::Tensor& dq, torch::Tensor& dk, torch::Tensor& dv,
                     const Shape& sh, T scale) {
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
      // dP = dO V^T  ->  dP^T = V dO^T
      gemm(true, false, sh.Tk, sh.Tq, sh.Dh, T(1), V.ptr, V.ld, dO, ldo, T(0), dp.data(), sh.Tk);
      // dV = P^T dO  ->  dV^T = dO^T P
      gemm(false, true, sh.Dh, sh.Tk, sh.Tq, T(1), dO, ldo, P, sh.Tk, T(0), dV, dv.stride(1));
      // softmax backward: dS = P * (dP - rowsum(dP * P)); hidden keys have P = 0
      for (int64_t i = 0; i < sh.Tq; ++i) {
        T* row = dp.data() + i * sh.Tk;
        const T* p = P + i * sh.Tk;
        T dot = 0;
        for (int64_t j = 0; j < sh.Tk; ++j) dot += row[j] * p[j];
        for (int64_t j = 0; j < sh.Tk; ++j) row[j] = p[j] * (row[j] - dot);
      }
      // dQ = scale dS K  ->  dQ^T = K^T dS^T
      gemm(false, false, sh.Dh, sh.Tq, sh.Tk, scale, K.ptr, K.ld, dp.data(), sh.Tk, T(0), dQ, dq.stride(1));
      // dK = scale dS^T Q  ->  dK^T = Q^T dS
      gemm(false, true, sh.Dh, sh.Tk, sh.Tq, scale, Q.ptr, Q.ld, dp.data(), sh.Tk, T(0), dK, dk.stride(1));
    }
  });
}

Shape shape_of(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& pad, bool causal) {
  return {q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), causal, pad.numel() ? pad.data_ptr<bool>() : nullptr};
}

class FusedAttention : public torch::autograd::Function<FusedAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& pad, bool causal) {
    const auto sh = shape_of(q, k, pad, causal);
    auto opts = q.options();
    auto probs = torch::empty({sh.B, sh.H, sh.Tq, sh.Tk}, opts);
    auto out = torch::empty({sh.B, sh.Tq, sh.H, sh.Dh}, opts);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_forward", [&] {
      forward_kernel<scalar_t>(q, k, v, probs, out, sh, static_cast<scalar_t>(1.0 / std::sqrt(double(sh.Dh))));
    });
    ctx->save_for_backward({q, k, v, probs, pad});
    ctx->saved_data["causal"] = causal;
    return out.permute({0, 2, 1, 3});  // (B, H, Tq, Dh) view
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3], &pad = saved[4];
    const auto sh = shape_of(q, k, pad, ctx->saved_data["causal"].toBool());
    auto grad_out = grads[0].permute({0, 2, 1, 3}).contiguous();  // (B, Tq, H, Dh)
    auto dq = torch::empty({sh.B, sh.Tq, sh.H, sh.Dh}, q.options());
    auto dk = torch::empty({sh.B, sh.Tk, sh.H, sh.Dh}, k.options());
    auto dv = torch::empty({sh.B, sh.Tk, sh.H, sh.Dh}, v.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_backward", [&] {
      backward_kernel<scalar_t>(q, k, v, probs, grad_out, dq, dk, dv, sh,
                                static_cast<scalar_t>(1.0 / std::sqrt(double(sh.Dh))));
    });
    return {dq.permute({0, 2, 1, 3}), dk.permute({0, 2, 1, 3}), dv.permute({0, 2, 1, 3}), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

bool fused_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const auto type = q.scalar_type();
  const bool blas_ok = type == torch::kFloat ? blas().sgemm != nullptr : type == torch::kDouble && blas().dgemm;
  return blas_ok && q.device().is_cpu() && k.scalar_type() == type && v.scalar_type() == type && q.stride(-1) == 1 &&
         k.stride(-1) == 1 && v.stride(-1) == 1;
}

torch::Tensor fused_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& key_padding_mask, bool causal) {
  // autograd Functions take no undefined tensors: "no mask" is an empty one
  auto pad = key_padding_mask.defined() ? key_padding_mask.to(torch::kBool).contiguous()
                                        : torch::empty({0}, torch::TensorOptions().dtype(torch::kBool));
  return FusedAttention::apply(q, k, v, pad, causal);
}

}  // namespace ropelab
