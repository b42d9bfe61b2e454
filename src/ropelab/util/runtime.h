#pragma once
/// Device and thread set-up shared by every app.

#include <torch/torch.h>

#include <string>

namespace ropelab {

/// Parses cpu | cuda | cuda:N; throws std::runtime_error when the device is unknown or
/// CUDA is asked for but unavailable.
torch::Device parse_device(const std::string& name);

/// Sets LibTorch's intra-op threads (0 = all cores); returns the number in use.
int64_t set_threads(int64_t threads);

/// Wall-clock seconds since an arbitrary epoch (steady clock).
double now_seconds();

/// "1h02m", "3m07s", "12s"
std::string format_duration(double seconds);

}  // namespace ropelab
