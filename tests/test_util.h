#pragma once
// Shared helpers for ropelab's tests.

#include "ropelab/model/transformer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

namespace ropelab::testing {

/// Every test starts from the same RNG state.
class Seeded : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

/// A tiny Seq2Seq configuration (fast to build and run).
inline TransformerOptions tiny_options(int64_t vocab = 23) {
  return TransformerOptions()
      .vocab_size(vocab)
      .pad_id(0)
      .d_model(16)
      .heads(2)
      .d_ff(32)
      .encoder_layers(2)
      .decoder_layers(2)
      .dropout(0.0);
}

/// Runs `f` and returns the message of the exception it throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// Max absolute difference.
inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

}  // namespace ropelab::testing
