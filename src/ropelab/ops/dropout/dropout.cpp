#include "ropelab/ops/dropout/dropout.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <limits>

#include "ropelab/ops/dispatch.h"
#include "ropelab/ops/dropout/dropout_cpu.h"

namespace ropelab {

namespace {

/// The entries of the dispatch table: x with the mask of (seed, p), scaled by 1/(1-p);
/// forward and backward alike.
using ApplyMaskFn = torch::Tensor (*)(const torch::Tensor& x, double p, uint32_t seed);

template <const DropoutCpuKernels& kernels>
torch::Tensor apply_mask_cpu(const torch::Tensor& x, double p, uint32_t seed) {
  auto in = x.contiguous();
  auto out = torch::empty_like(in);
  const auto threshold = static_cast<uint32_t>(p * 4294967296.0);
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "ropelab_dropout", [&] {
    const auto elements = loop_for<scalar_t>(kernels.apply_float, kernels.apply_double);
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    at::parallel_for(0, in.numel(), 32768,
                     [&](int64_t begin, int64_t end) { elements(src, dst, begin, end, seed, threshold, scale); });
  });
  return out;
}

// CPU only: callers check dropout_fused_supports.
constexpr DispatchTable<ApplyMaskFn> kDropout{"dropout", &apply_mask_cpu<cpu_baseline::dropout>,
                                              &apply_mask_cpu<cpu_avx2::dropout>};

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return kDropout(x.device())(x, p, static_cast<uint32_t>(seed));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto seed = static_cast<uint32_t>(ctx->saved_data["seed"].toInt());
    return {kDropout(grads[0].device())(grads[0], ctx->saved_data["p"].toDouble(), seed), torch::Tensor(),
            torch::Tensor()};
  }
};

/// (a * b) mod 2^32 for int64 tensors holding values below 2^32, without int64 overflow.
torch::Tensor mul_u32(const torch::Tensor& a, int64_t b) {
  const int64_t mask = 0xffffffffLL;
  return ((a.bitwise_and(0xffff) * b) + ((a.bitwise_right_shift(16) * b).bitwise_and(0xffff) * 65536))
      .bitwise_and(mask);
}

}  // namespace

bool dropout_fused_supports(const torch::Tensor& x) {
  const auto type = x.scalar_type();
  return x.layout() == torch::kStrided && x.device().is_cpu() && (type == torch::kFloat || type == torch::kDouble);
}

uint32_t dropout_seed() {
  return static_cast<uint32_t>(
      torch::randint(std::numeric_limits<int32_t>::max(), {1}, torch::TensorOptions().dtype(torch::kLong))
          .item<int64_t>());
}

torch::Tensor dropout_fused(const torch::Tensor& x, double p, uint32_t seed) {
  TORCH_CHECK(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got ", p);
  return DropoutFunction::apply(x, p, static_cast<int64_t>(seed));
}

torch::Tensor dropout_fused(const torch::Tensor& x, double p) { return dropout_fused(x, p, dropout_seed()); }

torch::Tensor dropout_reference(const torch::Tensor& x, double p, uint32_t seed) {
  const int64_t mask = 0xffffffffLL;
  auto i = torch::arange(x.numel(), torch::TensorOptions().dtype(torch::kLong).device(x.device())).view(x.sizes());
  auto key = mul_u32(i.bitwise_and(mask), 0x9E3779B9LL)
                 .bitwise_xor(static_cast<int64_t>(seed))
                 .bitwise_xor(i.bitwise_right_shift(32).bitwise_and(mask));
  auto h = key.bitwise_xor(key.bitwise_right_shift(16));  // hash32, the lowbias32 hash
  h = mul_u32(h, 0x7feb352dLL);
  h = h.bitwise_xor(h.bitwise_right_shift(15));
  h = mul_u32(h, 0x846ca68bLL);
  h = h.bitwise_xor(h.bitwise_right_shift(16));
  auto keep = h.ge(static_cast<int64_t>(static_cast<uint32_t>(p * 4294967296.0)));
  const double scale = 1.0 / (1.0 - p);
  return torch::where(keep, x * scale, torch::zeros_like(x));
}

}  // namespace ropelab
