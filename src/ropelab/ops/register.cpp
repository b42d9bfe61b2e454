// TorchScript registration of the fused rotary operators: the namespace `ropelab` in
// torch.ops, loadable from PyTorch Python with torch.ops.load_library("build/libropelab_ops.so")
// and callable from TorchScript compiled at run time.
#include <torch/library.h>

#include "ropelab/ops/rotary/rotary.h"

namespace {

torch::Tensor rotary_op(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t time_dim,
                        bool interleaved) {
  return ropelab::rotary_fused(x, cos, sin, time_dim, interleaved);
}

std::tuple<torch::Tensor, torch::Tensor> rotary_qk_op(const torch::Tensor& q, const torch::Tensor& k,
                                                      const torch::Tensor& cos, const torch::Tensor& sin,
                                                      int64_t time_dim, bool interleaved) {
  auto [rq, rk] = ropelab::rotary_fused_qk(q, k, cos, sin, time_dim, interleaved);
  return {rq, rk};
}

}  // namespace

TORCH_LIBRARY(ropelab, m) {
  m.def("rotary(Tensor x, Tensor cos, Tensor sin, int time_dim=-2, bool interleaved=False) -> Tensor", &rotary_op);
  m.def(
      "rotary_qk(Tensor q, Tensor k, Tensor cos, Tensor sin, int time_dim=-2, bool interleaved=False) -> "
      "(Tensor, Tensor)",
      &rotary_qk_op);
}
