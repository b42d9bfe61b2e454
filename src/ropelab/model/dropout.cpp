#include "ropelab/model/dropout.h"

#include "ropelab/kernels/cpu_kernels.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <limits>

namespace ropelab {

namespace {

/// Applies the mask of (seed, p) to x, scaled by 1/(1-p): forward and backward alike.
torch::Tensor apply_mask(const torch::Tensor& x, double p, uint32_t seed) {
  auto in = x.contiguous();
  auto out = torch::empty_like(in);
  const auto threshold = static_cast<uint32_t>(p * 4294967296.0);
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "ropelab_dropout", [&] {
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    at::parallel_for(0, in.numel(), 32768, [&](int64_t begin, int64_t end) {
      if (cpu_has_avx2_fma()) avx2::dropout(src, dst, begin, end, seed, threshold, scale);
      else baseline::dropout(src, dst, begin, end, seed, threshold, scale);
    });
  });
  return out;
}

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p) {
    // The seed comes from LibTorch's default generator: torch::manual_seed governs it.
    const auto seed = static_cast<uint32_t>(
        torch::randint(std::numeric_limits<int32_t>::max(), {1}, torch::TensorOptions().dtype(torch::kLong))
            .item<int64_t>());
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    return apply_mask(x, p, seed);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto seed = static_cast<uint32_t>(ctx->saved_data["seed"].toInt());
    return {apply_mask(grads[0], ctx->saved_data["p"].toDouble(), seed), torch::Tensor()};
  }
};

}  // namespace

DropoutImpl::DropoutImpl(double p_) : p(p_) {
  TORCH_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p == 0.0) return x;
  const auto type = x.scalar_type();
  if (x.device().is_cpu() && (type == torch::kFloat || type == torch::kDouble)) return DropoutFunction::apply(x, p);
  return torch::dropout(x, p, true);
}

}  // namespace ropelab
