#include "ropelab/ops/cross_entropy/cross_entropy.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include "ropelab/ops/cross_entropy/cross_entropy_cpu.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab {

namespace {

/// The entries of the dispatch table. Forward: logits (N, V) and target (N), contiguous,
/// into lse, loss and nll (N). Backward: the gradient of loss, g (N), into grad (N, V).
struct SmoothedCeImpl {
  void (*forward)(const torch::Tensor& logits, const torch::Tensor& target, double eps, int64_t pad, torch::Tensor& lse,
                  torch::Tensor& loss, torch::Tensor& nll);
  void (*backward)(const torch::Tensor& logits, const torch::Tensor& target, double eps, int64_t pad,
                   const torch::Tensor& lse, const torch::Tensor& g, torch::Tensor& grad);
};

template <const CrossEntropyCpuKernels& kernels>
void forward_cpu(const torch::Tensor& logits, const torch::Tensor& target, double eps, int64_t pad, torch::Tensor& lse,
                 torch::Tensor& loss, torch::Tensor& nll) {
  const int64_t N = logits.size(0), V = logits.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, logits.scalar_type(), "smoothed_ce_forward", [&] {
    using acc_t = at::opmath_type<scalar_t>;  // float for float and bfloat16
    const auto rows = loop_for<scalar_t>(kernels.forward_float, kernels.forward_double, kernels.forward_bfloat16);
    const auto* x = reinterpret_cast<const CpuElement<scalar_t>*>(logits.data_ptr<scalar_t>());
    const auto e = static_cast<acc_t>(eps);
    at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
      rows(x, V, target.data_ptr<int64_t>(), pad, e, begin, end, lse.data_ptr<acc_t>(), loss.data_ptr<acc_t>(),
           nll.data_ptr<acc_t>());
    });
  });
}

template <const CrossEntropyCpuKernels& kernels>
void backward_cpu(const torch::Tensor& logits, const torch::Tensor& target, double eps, int64_t pad,
                  const torch::Tensor& lse, const torch::Tensor& g, torch::Tensor& grad) {
  const int64_t N = logits.size(0), V = logits.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, logits.scalar_type(), "smoothed_ce_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const auto rows = loop_for<scalar_t>(kernels.backward_float, kernels.backward_double, kernels.backward_bfloat16);
    const auto* x = reinterpret_cast<const CpuElement<scalar_t>*>(logits.data_ptr<scalar_t>());
    auto* out = reinterpret_cast<CpuElement<scalar_t>*>(grad.data_ptr<scalar_t>());
    const auto e = static_cast<acc_t>(eps);
    at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
      rows(x, V, target.data_ptr<int64_t>(), pad, e, lse.data_ptr<acc_t>(), g.data_ptr<acc_t>(), begin, end, out);
    });
  });
}

// CPU only: smoothed_loss sends other devices to smoothed_loss_reference.
constexpr DispatchTable<SmoothedCeImpl> kSmoothedCe{
    "smoothed_loss",
    {&forward_cpu<cpu_baseline::cross_entropy>, &backward_cpu<cpu_baseline::cross_entropy>},
    {&forward_cpu<cpu_avx2::cross_entropy>, &backward_cpu<cpu_avx2::cross_entropy>}};

/// Label-smoothed cross-entropy fused over rows of logits: no stored log-probabilities.
/// bfloat16 logits are read as they are and computed in fp32: the per-row losses are fp32,
/// the logits' gradient bfloat16.
class SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
 public:
  /// logits (N, V) contiguous, target (N) -> {smoothed loss per row, nll per row}
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double eps, int64_t pad) {
    const int64_t N = logits.size(0);
    const auto stats = logits.options().dtype(at::toOpMathType(logits.scalar_type()));
    auto lse = torch::empty({N}, stats), loss = torch::empty({N}, stats), nll = torch::empty({N}, stats);
    auto tgt = target.contiguous();
    kSmoothedCe(logits.device()).forward(logits, tgt, eps, pad, lse, loss, nll);
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
    const int64_t N = logits.size(0);
    auto g = grads[0].defined() ? grads[0].to(lse.scalar_type()).contiguous() : torch::zeros({N}, lse.options());
    auto grad = torch::empty_like(logits);
    kSmoothedCe(logits.device()).backward(logits, target, eps, pad, lse, g, grad);
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> smoothed_loss_reference(const torch::Tensor& logits,
                                                                const torch::Tensor& target, double label_smoothing,
                                                                int64_t pad_id) {
  // float at least (half precision logits), double kept
  auto logp = torch::log_softmax(logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat), -1);
  auto keep = target.ne(pad_id);                                  // (B, T)
  auto nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1);  // (B, T)
  nll = nll.masked_fill(~keep, 0.0).sum();
  if (label_smoothing == 0.0) return {nll, nll.detach()};
  auto uniform = -logp.mean(-1).masked_fill(~keep, 0.0).sum();  // eps/V over all classes
  return {(1.0 - label_smoothing) * nll + label_smoothing * uniform, nll.detach()};
}

std::pair<torch::Tensor, torch::Tensor> smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target,
                                                      double label_smoothing, int64_t pad_id) {
  const auto type = logits.scalar_type();
  // the loss is computed in fp32 for bf16 logits (mixed precision), in the fused kernel on the CPU
  if (!logits.device().is_cpu() || (type != torch::kFloat && type != torch::kDouble && type != torch::kBFloat16))
    return smoothed_loss_reference(logits, target, label_smoothing, pad_id);
  const int64_t V = logits.size(-1);
  auto rows =
      SmoothedCrossEntropy::apply(logits.reshape({-1, V}).contiguous(), target.reshape({-1}), label_smoothing, pad_id);
  return {rows[0].sum(), rows[1].sum()};
}

}  // namespace ropelab
