#pragma once
/// Token positions as they travel through a model: int64 coordinates with `axes`
/// coordinates per token, shared by the batch or given per sequence. The one place that
/// knows the four layouts and builds default positions.
///   shared:  (T) for one axis, (T, N) for N axes
///   batched: (B, T) for one axis, (B, T, N) for N axes

#include <torch/torch.h>

#include <memory>
#include <utility>
#include <vector>

namespace ropelab {

class Positions {
 public:
  Positions() = default;
  /// `values` in one of the layouts above; checks that the shape fits `axes`.
  Positions(torch::Tensor values, int64_t axes = 1);  // NOLINT: a tensor of 1-D positions converts
  /// offset, offset + 1, ..., offset + length - 1 (on every axis), shared by the batch.
  static Positions range(int64_t offset, int64_t length, int64_t axes, const torch::Device& device);

  bool defined() const { return values_.defined(); }
  const torch::Tensor& values() const { return values_; }
  int64_t axes() const { return axes_; }
  /// Per sequence (B, T[, N]) rather than shared by the batch.
  bool batched() const { return values_.dim() == (axes_ == 1 ? 2 : 3); }
  /// Tokens per sequence.
  int64_t length() const { return values_.size(batched() ? 1 : 0); }
  /// The coordinates with the axis dimension always present: (T, N) or (B, T, N).
  torch::Tensor coordinates() const { return axes_ == 1 ? values_.unsqueeze(-1) : values_; }
  /// Rows `index` of batched positions; shared positions stay as they are.
  Positions index_select(const torch::Tensor& index) const;
  /// The positions at `index` (1-D) along the time dimension (a windowed decoder cache).
  Positions index_time(const torch::Tensor& index) const;
  /// The last `n` positions along the time dimension, counted from the same origin.
  Positions last(int64_t n) const;
  /// These positions followed by `next` along the time dimension (decoder caches).
  Positions cat(const Positions& next) const;
  /// The position xPos's scales count from, zeta^((n - origin) / scale_base): a shift
  /// shared by every query and key of a sequence leaves their products unchanged and keeps
  /// the exponents within half a window of 0. 0 unless a stack sets it (model/transformer.h).
  int64_t origin() const { return origin_; }
  /// These positions counted from `origin`, with tables of their own.
  Positions with_origin(int64_t origin) const;
  /// Each position p as min(p, last) (the same origin): the positions within a sliding
  /// window's cache whose last position is `last` (attention/backend.h, WindowPositions).
  Positions capped(int64_t last) const;

  /// Tables an encoder derives from these positions (rotary cos/sin for a dtype), made
  /// once by `make` and shared by every layer and copy that sees the same positions.
  template <typename Make>
  const std::vector<torch::Tensor>& derived(const void* owner, torch::ScalarType dtype, Make&& make) const {
    TORCH_CHECK(memo_, "Positions: no tables derive from undefined positions");
    for (const auto& d : *memo_)
      if (d.owner == owner && d.dtype == dtype) return d.tables;
    memo_->push_back({owner, dtype, make()});
    return memo_->back().tables;
  }

 private:
  struct Derived {
    const void* owner;
    torch::ScalarType dtype;
    std::vector<torch::Tensor> tables;
  };
  torch::Tensor values_;
  int64_t axes_ = 1;
  int64_t origin_ = 0;
  std::shared_ptr<std::vector<Derived>> memo_;  // made with the values: copies share it
};

}  // namespace ropelab
