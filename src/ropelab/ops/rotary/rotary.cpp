// The rotary op: its dispatch table (the CPU loop's two builds and the CUDA kernel),
// autograd, the eager and TorchScript formulas, and TorchScript compilation with the
// `ropelab` operators in scope.
#include "ropelab/ops/rotary/rotary.h"

#include "ropelab/build_config.h"
#include "ropelab/ops/dispatch.h"
#include "ropelab/ops/rotary/rotary_cpu.h"
#if ROPELAB_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "ropelab/ops/rotary/rotary_cuda.h"
#endif
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <c10/util/Optional.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/script.h>

#include <type_traits>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<RotaryImpl, 3> kImplNames{
    {{RotaryImpl::eager, "eager"}, {RotaryImpl::script, "script"}, {RotaryImpl::fused, "fused"}}};

RotaryRows rows_of(const torch::Tensor& x, int64_t time_dim, const torch::Tensor& cos) {
  const int64_t d = time_dim < 0 ? time_dim + x.dim() : time_dim;
  TORCH_CHECK(d >= 0 && d < x.dim() - 1, "rotary: time_dim ", time_dim, " must name a dimension before the last of ",
              x.sizes());
  TORCH_CHECK(x.dim() <= 9, "rotary: at most 8 leading dimensions, got ", x.sizes());
  TORCH_CHECK(cos.dim() == 2 && cos.size(0) == x.size(d), "rotary: cos/sin must be (T, r/2) with T = ", x.size(d),
              ", got ", cos.sizes());
  TORCH_CHECK(2 * cos.size(1) <= x.size(-1), "rotary: 2 x ", cos.size(1), " rotated dims exceed the head dimension ",
              x.size(-1));
  RotaryRows r;
  r.count = x.numel() / x.size(-1);
  r.T = x.size(d);
  r.Dh = x.size(-1);
  r.half = cos.size(1);
  r.time_axis = d;
  r.axes = x.dim() - 1;
  for (int64_t i = 0; i < r.axes; ++i) r.sizes[i] = x.size(i), r.strides[i] = x.stride(i);
  r.contiguous = x.is_contiguous();
  for (int64_t i = d + 1; i < r.axes; ++i) r.inner *= x.size(i);
  return r;
}

/// Every entry of the rotary dispatch table: rotates each tensor of `xs` (same T) into a new
/// output, by the angles (sign +1) or by their inverse (sign -1, the backward pass).
using RotateAllFn = std::vector<torch::Tensor> (*)(const std::vector<torch::Tensor>& xs, const torch::Tensor& cos,
                                                   const torch::Tensor& sin, int64_t time_dim, bool interleaved,
                                                   float sign);

/// The CPU entry for one build (rotary_cpu.inc): the rows of all tensors in one parallel
/// region, so q and k share the pass and the threads; float, double and bfloat16 (computed
/// in float), any layout with a unit last stride (else a contiguous copy).
template <const RotaryCpuKernels& kernels>
std::vector<torch::Tensor> rotate_all_cpu(const std::vector<torch::Tensor>& xs, const torch::Tensor& cos,
                                          const torch::Tensor& sin, int64_t time_dim, bool interleaved, float sign) {
  std::vector<torch::Tensor> ins, outs;
  std::vector<RotaryRows> shapes;
  for (const auto& x : xs) {
    TORCH_CHECK(x.scalar_type() == xs[0].scalar_type(), "rotary: q and k must share a dtype");
    ins.push_back(x.stride(-1) == 1 ? x : x.contiguous());
    shapes.push_back(rows_of(ins.back(), time_dim, cos));
    outs.push_back(torch::empty(x.sizes(), x.options()));
  }
  int64_t total = 0;
  for (const auto& r : shapes) total += r.count;
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, xs[0].scalar_type(), "rotary_fused", [&] {
    using acc_t = at::opmath_type<scalar_t>;  // float for float and bfloat16, double for double
    using element_t = CpuElement<scalar_t>;
    const auto rows = loop_for<scalar_t>(kernels.rows_float, kernels.rows_double, kernels.rows_bfloat16);
    const auto acc = c10::CppTypeToScalarType<acc_t>::value;
    auto c = cos.to(acc).contiguous(), s = sin.to(acc).contiguous();
    // One range over the rows of all tensors.
    at::parallel_for(0, total, 1024, [&](int64_t begin, int64_t end) {
      int64_t offset = 0;
      for (size_t n = 0; n < ins.size(); ++n) {
        const int64_t lo = std::max(begin - offset, int64_t{0}), hi = std::min(end - offset, shapes[n].count);
        if (lo < hi)
          rows(shapes[n], reinterpret_cast<const element_t*>(ins[n].data_ptr<scalar_t>()),
               reinterpret_cast<element_t*>(outs[n].data_ptr<scalar_t>()), c.data_ptr<acc_t>(), s.data_ptr<acc_t>(),
               interleaved, static_cast<acc_t>(sign), lo, hi);
        offset += shapes[n].count;
      }
    });
  });
  return outs;
}

#if ROPELAB_WITH_CUDA
/// The CUDA entry: the kernel (rotary_cuda.cu) on contiguous copies, one launch per tensor
/// on the current stream of the tensors' GPU; float and double, and fp16 and bf16 with float
/// tables and arithmetic.
std::vector<torch::Tensor> rotate_all_cuda(const std::vector<torch::Tensor>& xs, const torch::Tensor& cos,
                                           const torch::Tensor& sin, int64_t time_dim, bool interleaved, float sign) {
  // The launch uses the current device's context: kRotary.run (rotate_all, the only caller)
  // has made the tensors' GPU current.
  const auto type = xs[0].scalar_type();
  const bool bits16 = type == torch::kHalf || type == torch::kBFloat16;
  // the tables once for every tensor: in the inputs' type, or float for the 16-bit types
  const auto c = cos.to(xs[0].device(), bits16 ? torch::kFloat : type).contiguous(),
             s = sin.to(xs[0].device(), bits16 ? torch::kFloat : type).contiguous();
  std::vector<torch::Tensor> outs;
  for (const auto& x0 : xs) {
    TORCH_CHECK(x0.scalar_type() == type, "rotary: q and k must share a dtype");
    auto x = x0.contiguous();
    const auto r = rows_of(x, time_dim, cos);
    auto out = torch::empty_like(x);
    void* stream = c10::cuda::getCurrentCUDAStream(x.device().index()).stream();
    // one launch with tables of type Table (the format of a 16-bit input after the arguments)
    auto launch = [&](const auto* in, auto* to, auto sign_of_table, auto... format) {
      using Table = decltype(sign_of_table);
      const RotaryCudaArgs<std::remove_const_t<std::remove_pointer_t<decltype(in)>>, Table> args{
          in,   to,     c.data_ptr<Table>(), s.data_ptr<Table>(), r.count, r.inner, r.T,
          r.Dh, r.half, interleaved,         sign_of_table};
      const int error = rotary_cuda(args, format..., stream);
      TORCH_CHECK(error == 0, "rotary: CUDA kernel launch failed with cudaError ", error);
    };
    if (bits16)
      launch(reinterpret_cast<const uint16_t*>(x.data_ptr()), reinterpret_cast<uint16_t*>(out.data_ptr()), sign,
             type == torch::kHalf ? Rotary16::fp16 : Rotary16::bf16);
    else
      AT_DISPATCH_FLOATING_TYPES(type, "rotary_cuda", [&] {
        launch(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), static_cast<scalar_t>(sign));
      });
    outs.push_back(out);
  }
  return outs;
}
#endif

constexpr DispatchTable<RotateAllFn> kRotary {
  "rotary", &rotate_all_cpu<cpu_baseline::rotary>, &rotate_all_cpu<cpu_avx2::rotary>,
#if ROPELAB_WITH_CUDA
      &rotate_all_cuda
#else
      std::nullopt
#endif
};

/// Rotates every tensor of `xs` with the implementation for their device.
std::vector<torch::Tensor> rotate_all(const std::vector<torch::Tensor>& xs, const torch::Tensor& cos,
                                      const torch::Tensor& sin, int64_t time_dim, bool interleaved, float sign) {
  const auto device = xs[0].device();
  TORCH_CHECK(kRotary.runs_on(device.type()), "rotary: the fused kernel runs on CPU",
              ROPELAB_WITH_CUDA ? " or CUDA tensors"
                                : " tensors (this ropelab was built without CUDA: the Torch it "
                                  "found has none)",
              "; use rotary_impl eager or script on ", device);
  for (const auto& x : xs)
    TORCH_CHECK(x.device() == device, "rotary: q and k must be on one device, got ", device, " and ", x.device());
  // The tables may stay on the CPU (each kernel copies them where it needs them).
  for (const auto* table : {&cos, &sin})
    TORCH_CHECK(table->device() == device || table->device().is_cpu(), "rotary: cos/sin are on ", table->device(),
                " but the rotated tensors on ", device, "; keep the tables on the CPU or on ", device);
  return kRotary.run(device, xs, cos, sin, time_dim, interleaved, sign);
}

class RotaryFunction : public torch::autograd::Function<RotaryFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                                                const torch::Tensor& k, const torch::Tensor& cos,
                                                const torch::Tensor& sin, int64_t time_dim, bool interleaved) {
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["time_dim"] = time_dim;
    ctx->saved_data["interleaved"] = interleaved;
    ctx->saved_data["has_k"] = k.numel() > 0;
    if (k.numel() == 0) return {rotate_all({q}, cos, sin, time_dim, interleaved, 1.0f)[0], k};
    return rotate_all({q, k}, cos, sin, time_dim, interleaved, 1.0f);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto time_dim = ctx->saved_data["time_dim"].toInt();
    const auto interleaved = ctx->saved_data["interleaved"].toBool();
    // The rotation is orthogonal: its transpose, the inverse rotation, carries the gradient.
    std::vector<torch::Tensor> out;
    if (ctx->saved_data["has_k"].toBool()) {
      auto gq = grads[0].defined() ? grads[0] : torch::zeros_like(grads[1]);
      auto gk = grads[1].defined() ? grads[1] : torch::zeros_like(grads[0]);
      out = rotate_all({gq, gk}, saved[0], saved[1], time_dim, interleaved, -1.0f);
    } else {
      out = {rotate_all({grads[0]}, saved[0], saved[1], time_dim, interleaved, -1.0f)[0], torch::Tensor()};
    }
    return {out[0], out[1], torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

/// cos/sin (T, r/2) shaped to broadcast against x's layout at time_dim: (T, 1, ..., r/2).
torch::Tensor broadcast_table(const torch::Tensor& table, const torch::Tensor& x, int64_t time_dim) {
  const int64_t d = time_dim < 0 ? time_dim + x.dim() : time_dim;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim() - d), 1);
  shape.front() = table.size(0);
  shape.back() = table.size(1);
  return table.to(x.scalar_type()).view(shape);
}

}  // namespace

std::string to_string(RotaryImpl impl) { return enum_name(impl, kImplNames); }
RotaryImpl parse_rotary_impl(const std::string& name) { return parse_enum(name, kImplNames, "rotary impl"); }

bool rotary_fused_supports(const torch::Tensor& x) {
  if (x.layout() != torch::kStrided || !kRotary.runs_on(x.device().type())) return false;
  const auto type = x.scalar_type();
  if (type == torch::kFloat || type == torch::kDouble) return true;
  return x.device().is_cpu() ? type == torch::kBFloat16 : type == torch::kBFloat16 || type == torch::kHalf;
}

torch::Tensor rotary_fused(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t time_dim,
                           bool interleaved) {
  auto none = torch::empty({0}, x.options());
  return RotaryFunction::apply(x, none, cos, sin, time_dim, interleaved)[0];
}

std::pair<torch::Tensor, torch::Tensor> rotary_fused_qk(const torch::Tensor& q, const torch::Tensor& k,
                                                        const torch::Tensor& cos, const torch::Tensor& sin,
                                                        int64_t time_dim, bool interleaved) {
  TORCH_CHECK(q.scalar_type() == k.scalar_type(), "rotary_qk: q and k must share a dtype, got ", q.scalar_type(),
              " and ", k.scalar_type());
  auto out = RotaryFunction::apply(q, k, cos, sin, time_dim, interleaved);
  return {out[0], out[1]};
}

torch::Tensor rotary_eager_broadcast(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     bool interleaved) {
  const int64_t half = cos.size(-1), r = 2 * half;
  auto rot = r == x.size(-1) ? x : x.narrow(-1, 0, r);
  torch::Tensor out;
  if (interleaved) {
    auto pairs = rot.unflatten(-1, {half, 2});  // (..., r/2, 2)
    auto x1 = pairs.select(-1, 0), x2 = pairs.select(-1, 1);
    out = torch::stack({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).flatten(-2);
  } else {
    auto x1 = rot.narrow(-1, 0, half), x2 = rot.narrow(-1, half, half);
    out = torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
  }
  return r == x.size(-1) ? out : torch::cat({out, x.narrow(-1, r, x.size(-1) - r)}, -1);
}

torch::Tensor rotary_eager(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t time_dim,
                           bool interleaved) {
  return rotary_eager_broadcast(x, broadcast_table(cos, x, time_dim), broadcast_table(sin, x, time_dim), interleaved);
}

torch::Tensor rotary_script(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                            int64_t time_dim, bool interleaved) {
  // Compiled once per process; LibTorch fuses the elementwise graph where its fuser
  // exists (CUDA; CPU only with LLVM, which Debian's build lacks).
  static const auto unit = torch::jit::compile(R"JIT(
def rotate_half(x: Tensor, cos: Tensor, sin: Tensor, r: int):
    h = r // 2
    x1 = x[..., :h]
    x2 = x[..., h:r]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., r:]], -1)

def rotate_interleaved(x: Tensor, cos: Tensor, sin: Tensor, r: int):
    pairs = x[..., :r].unflatten(-1, [r // 2, 2])
    x1 = pairs[..., 0]
    x2 = pairs[..., 1]
    out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).flatten(-2)
    return torch.cat([out, x[..., r:]], -1)
)JIT");
  auto c = broadcast_table(cos, x, time_dim), s = broadcast_table(sin, x, time_dim);
  return unit->run_method(interleaved ? "rotate_interleaved" : "rotate_half", x, c, s, 2 * cos.size(1)).toTensor();
}

namespace {
/// TorchScript names: `ropelab` is the operator namespace, everything else as LibTorch has it.
struct OpsResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction& m,
                                                         const torch::jit::SourceRange& loc) override {
    if (name == "ropelab") return std::make_shared<torch::jit::BuiltinModule>("ropelab");
    return torch::jit::nativeResolver()->resolveValue(name, m, loc);
  }
  c10::TypePtr resolveType(const std::string& name, const torch::jit::SourceRange& loc) override {
    return torch::jit::nativeResolver()->resolveType(name, loc);
  }
};
}  // namespace

std::shared_ptr<torch::jit::CompilationUnit> compile_script(const std::string& source) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  unit->define(c10::nullopt, source, std::make_shared<OpsResolver>(), nullptr);
  return unit;
}

}  // namespace ropelab
