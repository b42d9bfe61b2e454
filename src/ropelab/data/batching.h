#pragma once
/// Batches: examples padded into tensors (collate, collate_lm) and token-budget batch
/// plans (plan_batches, pack_batches).

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "ropelab/data/token_store.h"

namespace ropelab {

struct Batch {
  torch::Tensor source;            // (B, S): tokens EOS pad...; undefined for language models
  torch::Tensor target_in;         // (B, T): BOS tokens pad... (LM: chunk[:-1])
  torch::Tensor target_out;        // (B, T): tokens EOS pad... (LM: chunk[1:])
  torch::Tensor source_positions;  // (B, S, 2) in the grid layout, else undefined
  int64_t target_tokens = 0;       // non-pad target tokens
  int64_t sentences = 0;
};

/// Pads the examples at `indices` into one batch on `device`.
Batch collate(const ExampleSet& examples, const std::vector<size_t>& indices, const torch::Device& device);
Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& indices, const torch::Device& device);

/// Pads language-model chunks into one batch: inputs chunk[:-1], targets chunk[1:].
Batch collate_lm(const ExampleSet& examples, const std::vector<size_t>& indices, const torch::Device& device);

/// Splits examples into batches whose padded size (rows x longest side) stays within
/// `max_tokens`. With `bucketing`, examples of similar length share a batch (sorted by
/// length with seeded random tie-breaks); without, batches are drawn in random order.
/// Batch order is shuffled with `seed`.
std::vector<std::vector<size_t>> plan_batches(const ExampleSet& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed);
std::vector<std::vector<size_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed);

/// Cuts `order` into consecutive batches whose padded size (rows x the longest
/// `length(i)`) stays within `max_tokens`; a batch holds at least one example.
std::vector<std::vector<size_t>> pack_batches(const std::vector<size_t>& order,
                                              const std::function<size_t(size_t)>& length, int64_t max_tokens);

}  // namespace ropelab
