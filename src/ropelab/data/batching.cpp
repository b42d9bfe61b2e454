#include "ropelab/data/batching.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace ropelab {

Batch collate_lm(const ExampleSet& set, const std::vector<size_t>& indices, const torch::Device& device) {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (auto i : indices) examples.push_back(set.get(i));
  const auto rows = static_cast<int64_t>(indices.size());
  size_t length = 0;
  for (const auto& e : examples) length = std::max(length, e.target.size() - 1);
  auto tin = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(length)}, kPadId, torch::kLong);
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& example = examples[static_cast<size_t>(r)];
    const auto& chunk = example.target;
    const auto n = static_cast<int64_t>(chunk.size()) - 1;
    for (int64_t j = 0; j < n; ++j) {
      a[r][j] = chunk[static_cast<size_t>(j)];
      // predictions before score_from are context only: padded targets, not scored
      b[r][j] = j < example.score_from ? kPadId : chunk[static_cast<size_t>(j + 1)];
    }
    batch.target_tokens += n - std::min(n, example.score_from);
  }
  batch.target_in = tin.to(device);
  batch.target_out = tout.to(device);
  batch.sentences = rows;
  return batch;
}

Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& indices, const torch::Device& device) {
  return collate(ExampleView(examples), indices, device);
}

Batch collate(const ExampleSet& set, const std::vector<size_t>& indices, const torch::Device& device) {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (auto i : indices) examples.push_back(set.get(i));
  const auto rows = static_cast<int64_t>(indices.size());
  size_t s_len = 0, t_len = 0;
  for (const auto& e : examples) {
    s_len = std::max(s_len, e.source.size() + 1);
    t_len = std::max(t_len, e.target.size() + 1);
  }
  auto src = torch::full({rows, static_cast<int64_t>(s_len)}, kPadId, torch::kLong);
  auto tin = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto tout = torch::full({rows, static_cast<int64_t>(t_len)}, kPadId, torch::kLong);
  auto s = src.accessor<int64_t, 2>();
  auto a = tin.accessor<int64_t, 2>();
  auto b = tout.accessor<int64_t, 2>();
  Batch batch;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& e = examples[static_cast<size_t>(r)];
    const auto n = static_cast<int64_t>(e.source.size());
    for (int64_t j = 0; j < n; ++j) s[r][j] = e.source[static_cast<size_t>(j)];
    s[r][n] = kEosId;
    const auto m = static_cast<int64_t>(e.target.size());
    a[r][0] = kBosId;
    for (int64_t j = 0; j < m; ++j) a[r][j + 1] = b[r][j] = e.target[static_cast<size_t>(j)];
    b[r][m] = kEosId;
    batch.target_tokens += m + 1;
  }
  if (!examples.empty() && !examples.front().source_positions.empty()) {
    auto pos = torch::zeros({rows, static_cast<int64_t>(s_len), 2}, torch::kLong);
    auto p = pos.accessor<int64_t, 3>();
    for (int64_t r = 0; r < rows; ++r) {
      const auto& coords = examples[static_cast<size_t>(r)].source_positions;
      for (size_t j = 0; j < coords.size() / 2; ++j)
        p[r][static_cast<int64_t>(j)][0] = coords[2 * j], p[r][static_cast<int64_t>(j)][1] = coords[2 * j + 1];
    }
    batch.source_positions = pos.to(device);
  }
  batch.source = src.to(device);
  batch.target_in = tin.to(device);
  batch.target_out = tout.to(device);
  batch.sentences = rows;
  return batch;
}

std::vector<std::vector<size_t>> plan_batches(const std::vector<Example>& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed) {
  return plan_batches(ExampleView(examples), max_tokens, bucketing, seed);
}

std::vector<std::vector<size_t>> plan_batches(const ExampleSet& examples, int64_t max_tokens, bool bucketing,
                                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  auto length = [&](size_t i) { return examples.padded_length(i); };
  if (bucketing)  // stable after the shuffle: equal lengths stay in random order
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length(a) < length(b); });

  auto batches = pack_batches(order, length, max_tokens);
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

std::vector<std::vector<size_t>> pack_batches(const std::vector<size_t>& order,
                                              const std::function<size_t(size_t)>& length, int64_t max_tokens) {
  std::vector<std::vector<size_t>> batches;
  std::vector<size_t> current;
  size_t longest = 0;
  for (auto i : order) {
    const size_t l = std::max(longest, length(i));
    if (!current.empty() && static_cast<int64_t>(l * (current.size() + 1)) > max_tokens) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(i);
    longest = std::max(longest, length(i));
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

}  // namespace ropelab
