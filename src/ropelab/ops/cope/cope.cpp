#include "ropelab/ops/cope/cope.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <limits>

#include "ropelab/ops/cope/cope_cpu.h"
#include "ropelab/ops/dispatch.h"

namespace ropelab {

namespace {

/// The entries of the dispatch table: the tensors contiguous, hidden (1 or B, 1, n, Tk) bool.
struct CopeImpl {
  void (*forward)(const torch::Tensor& scores, const torch::Tensor& at_columns, const torch::Tensor& hidden,
                  torch::Tensor& positions, torch::Tensor& probs);
  void (*backward)(const torch::Tensor& scores, const torch::Tensor& at_columns, const torch::Tensor& hidden,
                   const torch::Tensor& positions, const torch::Tensor& probs, const torch::Tensor& grad_probs,
                   torch::Tensor& grad_scores, torch::Tensor& grad_columns);
};

/// The rows' shapes and the hidden mask's pointers; the caller adds the value tensors.
template <typename scalar_t>
CopeRows<scalar_t> rows_of(const torch::Tensor& scores, const torch::Tensor& at_columns, const torch::Tensor& hidden) {
  CopeRows<scalar_t> a;
  a.queries = scores.size(2);
  a.keys = scores.size(3);
  a.rows_per_batch = scores.size(1) * a.queries;
  a.columns = at_columns.size(3);
  a.hidden_batch_stride = hidden.size(0) == 1 ? 0 : a.queries * a.keys;
  a.hidden = reinterpret_cast<const uint8_t*>(hidden.data_ptr<bool>());
  a.scores = scores.data_ptr<scalar_t>();
  a.at_columns = at_columns.data_ptr<scalar_t>();
  return a;
}

constexpr int64_t kGrainRows = 8;

template <const CopeCpuKernels& kernels>
void forward_cpu(const torch::Tensor& scores, const torch::Tensor& at_columns, const torch::Tensor& hidden,
                 torch::Tensor& positions, torch::Tensor& probs) {
  AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "cope_forward", [&] {
    auto a = rows_of<scalar_t>(scores, at_columns, hidden);
    a.positions = positions.data_ptr<scalar_t>();
    a.probs = probs.data_ptr<scalar_t>();
    const auto loop = loop_for<scalar_t>(kernels.forward_float, kernels.forward_double);
    at::parallel_for(0, scores.numel() / a.keys, kGrainRows, [&](int64_t begin, int64_t end) { loop(a, begin, end); });
  });
}

template <const CopeCpuKernels& kernels>
void backward_cpu(const torch::Tensor& scores, const torch::Tensor& at_columns, const torch::Tensor& hidden,
                  const torch::Tensor& positions, const torch::Tensor& probs, const torch::Tensor& grad_probs,
                  torch::Tensor& grad_scores, torch::Tensor& grad_columns) {
  AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "cope_backward", [&] {
    auto a = rows_of<scalar_t>(scores, at_columns, hidden);
    a.positions = positions.data_ptr<scalar_t>();
    a.probs = probs.data_ptr<scalar_t>();
    a.grad_probs = grad_probs.data_ptr<scalar_t>();
    a.grad_scores = grad_scores.data_ptr<scalar_t>();
    a.grad_columns = grad_columns.data_ptr<scalar_t>();
    const auto loop = loop_for<scalar_t>(kernels.backward_float, kernels.backward_double);
    at::parallel_for(0, scores.numel() / a.keys, kGrainRows, [&](int64_t begin, int64_t end) { loop(a, begin, end); });
  });
}

// CPU only: cope_probabilities sends other devices to cope_probabilities_reference.
constexpr DispatchTable<CopeImpl> kCope{"cope_probabilities",
                                        {&forward_cpu<cpu_baseline::cope>, &backward_cpu<cpu_baseline::cope>},
                                        {&forward_cpu<cpu_avx2::cope>, &backward_cpu<cpu_avx2::cope>}};

class CopeProbabilities : public torch::autograd::Function<CopeProbabilities> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               const torch::Tensor& at_columns, const torch::Tensor& hidden) {
    auto s = scores.contiguous(), c = at_columns.contiguous();
    auto positions = torch::empty_like(s), probs = torch::empty_like(s);
    if (s.numel() > 0) kCope(s.device()).forward(s, c, hidden, positions, probs);
    ctx->save_for_backward({s, c, hidden, positions, probs});
    return probs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &s = saved[0], &c = saved[1], &hidden = saved[2], &positions = saved[3], &probs = saved[4];
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    const auto g = grads[0].to(s.scalar_type()).contiguous();
    auto grad_scores = torch::empty_like(s);
    if (s.numel() == 0) return {grad_scores, torch::zeros_like(c), torch::Tensor()};  // no keys: no gradient
    auto grad_columns = torch::empty_like(c);
    kCope(s.device()).backward(s, c, hidden, positions, probs, g, grad_scores, grad_columns);
    return {grad_scores, grad_columns, torch::Tensor()};
  }
};

/// hidden as (1 or B, 1, n, Tk) bool, contiguous; an error names a shape it cannot take.
torch::Tensor hidden_rows(const torch::Tensor& hidden, const torch::Tensor& scores) {
  const int64_t B = scores.size(0), n = scores.size(2), tk = scores.size(3);
  TORCH_CHECK(hidden.dim() <= 4, "cope_probabilities: hidden must broadcast to (B, 1, n, Tk) = (", B, ", 1, ", n, ", ",
              tk, "), got ", hidden.sizes());
  auto h = hidden.to(torch::kBool);
  while (h.dim() < 4) h = h.unsqueeze(0);
  TORCH_CHECK((h.size(0) == 1 || h.size(0) == B) && h.size(1) == 1 && (h.size(2) == 1 || h.size(2) == n) &&
                  (h.size(3) == 1 || h.size(3) == tk),
              "cope_probabilities: hidden must broadcast to (B, 1, n, Tk) = (", B, ", 1, ", n, ", ", tk, "), got ",
              hidden.sizes());
  return h.expand({h.size(0), 1, n, tk}).contiguous();
}

}  // namespace

torch::Tensor cope_probabilities_reference(const torch::Tensor& scores, const torch::Tensor& at_columns,
                                           const torch::Tensor& hidden) {
  const int64_t P = at_columns.size(-1);
  const auto h = hidden.to(torch::kBool);
  const auto gates = torch::sigmoid(scores).masked_fill(h, 0.0);
  const auto positions = gates.flip(-1).cumsum(-1).flip(-1).clamp_max(static_cast<double>(P - 1));
  const auto floor = positions.floor();
  const auto weight = positions - floor;  // differentiable in the gates
  const auto bias = at_columns.gather(-1, positions.ceil().to(torch::kLong)) * weight +
                    at_columns.gather(-1, floor.to(torch::kLong)) * (1 - weight);
  auto probs = torch::softmax((scores + bias).masked_fill(h, std::numeric_limits<float>::lowest()), -1);
  return probs.masked_fill(h.all(-1, true), 0.0);  // a query that sees no key: zeros
}

torch::Tensor cope_probabilities(const torch::Tensor& scores, const torch::Tensor& at_columns,
                                 const torch::Tensor& hidden) {
  TORCH_CHECK(scores.dim() == 4 && at_columns.dim() == 4 && at_columns.size(-1) >= 1 &&
                  at_columns.sizes().slice(0, 3) == scores.sizes().slice(0, 3),
              "cope_probabilities: needs scores (B, H, n, Tk) and at_columns (B, H, n, P) of the same rows, got ",
              scores.sizes(), " and ", at_columns.sizes());
  const auto type = scores.scalar_type();
  if (!scores.device().is_cpu() || (type != torch::kFloat && type != torch::kDouble) ||
      at_columns.scalar_type() != type || !at_columns.device().is_cpu())
    return cope_probabilities_reference(scores, at_columns, hidden);
  return CopeProbabilities::apply(scores, at_columns, hidden_rows(hidden, scores));
}

}  // namespace ropelab
