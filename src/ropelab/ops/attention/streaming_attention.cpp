#include "ropelab/ops/attention/streaming_attention.h"

#include "ropelab/ops/attention/operands.h"
#include "ropelab/ops/attention/streaming_passes.h"

namespace ropelab {

namespace {

class StreamingAttention : public torch::autograd::Function<StreamingAttention> {
 public:
  /// pad, dense, relative, FIRE's psi, inv_norm, w1, b1, w2, b2 and forget (AttentionExtras):
  /// empty when absent (autograd Functions take no undefined tensors).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& pad, const torch::Tensor& dense,
                               const torch::Tensor& relative, const torch::Tensor& psi, const torch::Tensor& inv_norm,
                               const torch::Tensor& w1, const torch::Tensor& b1, const torch::Tensor& w2,
                               const torch::Tensor& b2, const torch::Tensor& forget, const KernelOptions& options) {
    const AttentionExtras x{pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget};
    auto [out, lse] = streaming::forward(q, k, v, x, options);
    ctx->save_for_backward({q, k, v, out, lse, pad, dense, relative, psi, inv_norm, w1, b1, w2, b2, forget});
    save_kernel_options(ctx, options);
    return out.permute({0, 2, 1, 3});  // (B, H, Tq, Dh) view
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto grad_out = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();  // (B, H, Tq, Dh)
    auto result = streaming::backward(ctx, saved[0], saved[1], saved[2], saved[3], saved[4], grad_out,
                                      AttentionExtras::saved(saved, 5), saved_kernel_options(ctx));
    result.emplace_back();  // the options
    return result;
  }
};

/// The checks of every entry point; -> the optional operands as the kernel takes them.
AttentionExtras checked_extras(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& key_padding_mask, const ScoreBias& bias,
                               const KernelOptions& options) {
  check_kernel_call("streaming_attention_cpu", streaming_attention_available(q, k, v, bias), kCpuKernelNeeds, q, k,
                    key_padding_mask, options);
  return AttentionExtras::of(q, key_padding_mask, bias);
}

}  // namespace

bool streaming_attention_available(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const ScoreBias& bias) {
  return cpu_attention_operands_ok(q, k, v, bias);
}

torch::Tensor streaming_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& key_padding_mask, const ScoreBias& bias,
                                      const KernelOptions& options) {
  const auto x = checked_extras(q, k, v, key_padding_mask, bias, options);
  return StreamingAttention::apply(q, k, v, x.pad, x.dense, x.relative, x.psi, x.inv_norm, x.w1, x.b1, x.w2, x.b2,
                                   x.forget, options);
}

std::pair<torch::Tensor, torch::Tensor> streaming_attention_cpu_lse(const torch::Tensor& q, const torch::Tensor& k,
                                                                    const torch::Tensor& v,
                                                                    const torch::Tensor& key_padding_mask,
                                                                    const ScoreBias& bias,
                                                                    const KernelOptions& options) {
  const auto x = checked_extras(q, k, v, key_padding_mask, bias, options);
  auto [out, lse] = streaming::forward(q, k, v, x, options);
  return {out.permute({0, 2, 1, 3}), lse};
}

}  // namespace ropelab
