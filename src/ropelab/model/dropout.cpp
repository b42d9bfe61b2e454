#include "ropelab/model/dropout.h"

#include "ropelab/ops/dropout/dropout.h"

namespace ropelab {

DropoutImpl::DropoutImpl(double p_) : p(p_) {
  TORCH_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p == 0.0) return x;
  ++drops;
  if (dropout_fused_supports(x)) return dropout_fused(x, p);
  return torch::dropout(x, p, true);
}

}  // namespace ropelab
