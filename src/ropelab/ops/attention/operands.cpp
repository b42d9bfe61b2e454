#include "ropelab/ops/attention/operands.h"

#include "ropelab/ops/attention/blas.h"

namespace ropelab {

bool cpu_attention_operands_ok(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& dense_bias, const torch::Tensor& relative_bias) {
  const auto type = q.scalar_type();
  const bool blas_ok = type == torch::kFloat ? blas::has_sgemm() : type == torch::kDouble && blas::has_dgemm();
  if (!blas_ok || q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || !q.device().is_cpu() || !k.device().is_cpu() ||
      !v.device().is_cpu() || k.scalar_type() != type || v.scalar_type() != type || q.stride(-1) != 1 ||
      k.stride(-1) != 1 || v.stride(-1) != 1)
    return false;
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2);
  const bool dense_ok =
      !dense_bias.defined() || (dense_bias.scalar_type() == type && dense_bias.device().is_cpu() &&
                                dense_bias.dim() == 4 && (dense_bias.size(0) == 1 || dense_bias.size(0) == B) &&
                                dense_bias.size(1) == H && dense_bias.size(2) == Tq && dense_bias.size(3) == Tk);
  const bool relative_ok =
      !relative_bias.defined() ||
      (relative_bias.scalar_type() == type && relative_bias.device().is_cpu() && relative_bias.dim() == 2 &&
       relative_bias.size(0) == H && relative_bias.size(1) == Tq + Tk - 1);
  return dense_ok && relative_ok;
}

}  // namespace ropelab
