#include "ropelab/ops/cross_entropy.h"

#include "ropelab/kernels/cpu_kernels.h"

#include <ATen/Parallel.h>

namespace ropelab {

namespace {

/// Label-smoothed cross-entropy fused over rows of logits (kernels/cpu_kernels.h): no stored
/// log-probabilities, one pass forward after the max, one pass backward.
class SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
 public:
  /// logits (N, V) contiguous, target (N) -> {smoothed loss per row, nll per row}
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double eps, int64_t pad) {
    const int64_t N = logits.size(0), V = logits.size(1);
    auto lse = torch::empty({N}, logits.options()), loss = torch::empty({N}, logits.options()),
         nll = torch::empty({N}, logits.options());
    auto tgt = target.contiguous();
    AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "smoothed_ce_forward", [&] {
      const auto e = static_cast<scalar_t>(eps);
      at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
        const auto args = std::make_tuple(logits.data_ptr<scalar_t>(), V, tgt.data_ptr<int64_t>(), pad, e, begin, end,
                                          lse.data_ptr<scalar_t>(), loss.data_ptr<scalar_t>(), nll.data_ptr<scalar_t>());
        if (cpu_has_avx2_fma()) std::apply([](auto... a) { avx2::ce_forward(a...); }, args);
        else std::apply([](auto... a) { baseline::ce_forward(a...); }, args);
      });
    });
    ctx->save_for_backward({logits, tgt, lse});
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["pad"] = pad;
    ctx->mark_non_differentiable({nll});
    return {loss, nll};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &target = saved[1], &lse = saved[2];
    const double eps = ctx->saved_data["eps"].toDouble();
    const int64_t pad = ctx->saved_data["pad"].toInt();
    const int64_t N = logits.size(0), V = logits.size(1);
    auto g = grads[0].defined() ? grads[0].contiguous() : torch::zeros({N}, logits.options());
    auto grad = torch::empty_like(logits);
    AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "smoothed_ce_backward", [&] {
      const auto e = static_cast<scalar_t>(eps);
      at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
        const auto args = std::make_tuple(logits.data_ptr<scalar_t>(), V, target.data_ptr<int64_t>(), pad, e,
                                          lse.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), begin, end,
                                          grad.data_ptr<scalar_t>());
        if (cpu_has_avx2_fma()) std::apply([](auto... a) { avx2::ce_backward(a...); }, args);
        else std::apply([](auto... a) { baseline::ce_backward(a...); }, args);
      });
    });
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> smoothed_loss_reference(const torch::Tensor& logits,
                                                                const torch::Tensor& target, double label_smoothing,
                                                                int64_t pad_id) {
  // float at least (half precision logits), double kept
  auto logp = torch::log_softmax(logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat), -1);
  auto keep = target.ne(pad_id);                                           // (B, T)
  auto nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1);           // (B, T)
  nll = nll.masked_fill(~keep, 0.0).sum();
  if (label_smoothing == 0.0) return {nll, nll.detach()};
  auto uniform = -logp.mean(-1).masked_fill(~keep, 0.0).sum();             // eps/V over all classes
  return {(1.0 - label_smoothing) * nll + label_smoothing * uniform, nll.detach()};
}

std::pair<torch::Tensor, torch::Tensor> smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target,
                                                      double label_smoothing, int64_t pad_id) {
  const auto type = logits.scalar_type();
  if (!logits.device().is_cpu() || (type != torch::kFloat && type != torch::kDouble))
    return smoothed_loss_reference(logits, target, label_smoothing, pad_id);
  const int64_t V = logits.size(-1);
  auto rows = SmoothedCrossEntropy::apply(logits.reshape({-1, V}).contiguous(), target.reshape({-1}), label_smoothing,
                                          pad_id);
  return {rows[0].sum(), rows[1].sum()};
}

}  // namespace ropelab
