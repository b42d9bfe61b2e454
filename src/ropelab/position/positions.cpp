#include "ropelab/position/positions.h"

namespace ropelab {

Positions::Positions(torch::Tensor values, int64_t axes) : values_(std::move(values)), axes_(axes) {
  TORCH_CHECK(axes_ >= 1, "Positions: axes must be >= 1, got ", axes_);
  if (!values_.defined()) return;
  memo_ = std::make_shared<std::vector<Derived>>();
  const int64_t shared_dim = axes_ == 1 ? 1 : 2;
  TORCH_CHECK(values_.dim() == shared_dim || values_.dim() == shared_dim + 1, "Positions: expected ",
              axes_ == 1 ? "(T) or (B, T)" : "(T, N) or (B, T, N)", " for ", axes_, " axes, got shape ",
              values_.sizes());
  TORCH_CHECK(axes_ == 1 || values_.size(-1) == axes_, "Positions: expected ", axes_,
              " coordinates in the last dimension, got shape ", values_.sizes());
}

Positions Positions::range(int64_t offset, int64_t length, int64_t axes, const torch::Device& device) {
  auto t = torch::arange(offset, offset + length, torch::TensorOptions().dtype(torch::kLong).device(device));
  return {axes == 1 ? t : t.unsqueeze(-1).expand({-1, axes}), axes};
}

Positions Positions::index_select(const torch::Tensor& index) const {
  return batched() ? Positions(values_.index_select(0, index), axes_) : *this;
}

Positions Positions::index_time(const torch::Tensor& index) const {
  return Positions(values_.index_select(batched() ? 1 : 0, index), axes_);
}

Positions Positions::last(int64_t n) const {
  const int64_t t = length();
  TORCH_CHECK(n >= 0 && n <= t, "Positions: the last ", n, " of ", t, " positions");
  Positions out(values_.narrow(batched() ? 1 : 0, t - n, n), axes_);
  out.origin_ = origin_;
  return out;
}

Positions Positions::with_origin(int64_t origin) const {
  Positions out(values_, axes_);
  out.origin_ = origin;
  return out;
}

Positions Positions::capped(int64_t last) const {
  Positions out(values_.clamp_max(last), axes_);
  out.origin_ = origin_;
  return out;
}

Positions Positions::cat(const Positions& next) const {
  if (!defined()) return next;
  TORCH_CHECK(next.axes_ == axes_, "Positions: cannot join ", axes_, " and ", next.axes_, " axes");
  const bool rows = batched() || next.batched();
  auto with_rows = [&](const Positions& p, int64_t B) {  // shared positions repeated for B rows
    if (p.batched()) return p.values_;
    auto sizes = p.values_.sizes().vec();
    sizes.insert(sizes.begin(), B);
    return p.values_.unsqueeze(0).expand(sizes);
  };
  if (!rows) return {torch::cat({values_, next.values_}, 0), axes_};
  const int64_t B = batched() ? values_.size(0) : next.values_.size(0);
  return {torch::cat({with_rows(*this, B), with_rows(next, B)}, 1), axes_};
}

}  // namespace ropelab
