#include "ropelab/ops/adam/adam.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <sstream>
#include <string>

#include "ropelab/ops/adam/adam_cpu.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab {

namespace {
template <typename Key>  // a template, so that only the branch of this LibTorch's key compiles
Key state_key(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // the pointer as LibTorch 1.x prints it into its key
    key << impl;
    return key.str();
  } else {
    return impl;
  }
}
}  // namespace

AdamStateKey adam_state_key(const at::Tensor& p) { return state_key<AdamStateKey>(p.unsafeGetTensorImpl()); }

namespace {

template <const AdamCpuKernels& kernels>
void update_cpu(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end, const AdamConstants& c) {
  kernels.update_float(p, g, m, v, begin, end, c);
}

// CPU only: adam_step sends other parameters to torch::optim::Adam.
constexpr DispatchTable<AdamFn> kAdam{"adam", &update_cpu<cpu_baseline::adam>, &update_cpu<cpu_avx2::adam>};

bool fp32_contiguous(const torch::Tensor& t) { return t.scalar_type() == torch::kFloat && t.is_contiguous(); }

/// Every parameter with a gradient, its gradient and its moments (once they exist, e.g.
/// loaded from a checkpoint) are contiguous fp32 CPU tensors, and no group uses amsgrad.
bool fusable(torch::optim::Adam& optimizer) {
  auto& states = optimizer.state();
  for (const auto& group : optimizer.param_groups()) {
    if (static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!p.device().is_cpu() || !fp32_contiguous(p) || !fp32_contiguous(p.grad())) return false;
      const auto it = states.find(adam_state_key(p));
      if (it == states.end()) continue;
      const auto& state = static_cast<const torch::optim::AdamParamState&>(*it->second);
      if (!fp32_contiguous(state.exp_avg()) || !fp32_contiguous(state.exp_avg_sq())) return false;
    }
  }
  return true;
}

}  // namespace

void adam_step(torch::optim::Adam& optimizer, double grad_scale) {
  torch::NoGradGuard no_grad;
  if (!fusable(optimizer)) {
    for (const auto& group : optimizer.param_groups())
      for (const auto& p : group.params())
        if (p.grad().defined()) p.grad().mul_(grad_scale);
    optimizer.step();
    return;
  }
  auto& states = optimizer.state();
  const auto update = kAdam.cpu();  // fusable: every parameter is on the CPU
  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      // the state torch::optim::Adam keeps, under its key, created as it creates it
      auto& slot = states[adam_state_key(p)];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*slot);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      const auto t = static_cast<double>(state.step());
      const AdamConstants c{static_cast<float>(beta1),
                            static_cast<float>(beta2),
                            static_cast<float>(options.lr() / (1.0 - std::pow(beta1, t))),
                            static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t))),
                            static_cast<float>(options.eps()),
                            static_cast<float>(options.weight_decay()),
                            static_cast<float>(grad_scale)};
      float* param = p.data_ptr<float>();
      const float* grad = p.grad().data_ptr<float>();
      float* m = state.exp_avg().data_ptr<float>();
      float* v = state.exp_avg_sq().data_ptr<float>();
      at::parallel_for(0, p.numel(), 32768,
                       [&](int64_t begin, int64_t end) { update(param, grad, m, v, begin, end, c); });
    }
  }
}

}  // namespace ropelab
