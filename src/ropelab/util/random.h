#pragma once
/// A small seeded random stream that gives the same numbers on every platform (the
/// standard library's distributions do not): for draws whose results are recorded, such
/// as significance-test resamples and generated passkey documents.

#include <cstdint>

namespace ropelab {

/// SplitMix64 (Steele, Lea and Flood 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) by the multiply-high method (bias below n / 2^64).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  uint64_t state_;
};

}  // namespace ropelab
