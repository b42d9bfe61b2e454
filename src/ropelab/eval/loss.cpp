#include "ropelab/eval/loss.h"

#include <cmath>

#include "ropelab/ops/cross_entropy/cross_entropy.h"

namespace ropelab {

namespace {
/// Target tokens whose logits are held at once: a (B, T, V) batch is projected in pieces of
/// positions of at most this many rows x positions (128 MiB of fp32 logits at V = 8192).
constexpr int64_t kProjectedTokens = 4096;

/// Leading positions of `targets` (B, T) at which no row has a target (padding in every
/// row: the context of sliding windows); 0 when none has one at all.
int64_t unscored_prefix(const torch::Tensor& targets) {
  const auto scored = targets.ne(kPadId).any(0).cpu();
  const auto s = scored.accessor<bool, 1>();
  for (int64_t j = 0; j < scored.size(0); ++j)
    if (s[j]) return j;
  return 0;
}
}  // namespace

LossTotals evaluate_loss(const Task& task, const TaskModel& model, const ExampleSet& examples, int64_t max_tokens,
                         double label_smoothing, const torch::Device& device, std::vector<ExampleLoss>* per_example,
                         std::vector<ExampleLoss>* per_position, std::vector<std::vector<double>>* per_token) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  LossTotals totals;
  if (per_example) per_example->assign(examples.size(), {});
  if (per_position) per_position->clear();
  if (per_token) per_token->assign(examples.size(), {});
  for (const auto& indices : plan_batches(examples, max_tokens, true, 0)) {
    auto batch = task.collate(examples, indices, device);
    // positions that no row scores (a sliding window's context) need no output: the
    // model computes the rest alone, and the loss reads targets from `skip` on
    const int64_t skip = unscored_prefix(batch.target_out);
    const int64_t width = batch.target_out.size(1);
    const auto hidden = model.hidden(batch, width - skip);  // (B, width - skip, D)
    const auto targets = batch.target_out.narrow(1, skip, width - skip);
    const int64_t B = hidden.size(0), T = hidden.size(1);
    const int64_t piece = std::max<int64_t>(1, kProjectedTokens / B);
    auto loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device)), nll = loss.clone();
    torch::Tensor row_sums;                   // (B, 2) NLL and tokens per row, in double
    std::vector<torch::Tensor> column_sums;   // (piece, 2) per piece of positions
    std::vector<torch::Tensor> token_pieces;  // (B, piece) per piece, NaN where not scored
    for (int64_t start = 0; start < T; start += piece) {
      const int64_t n = std::min(piece, T - start);
      const auto logits = model.project(hidden.narrow(1, start, n));  // (B, n, V)
      const auto target_out = targets.narrow(1, start, n);
      auto [piece_loss, piece_nll] = smoothed_loss(logits, target_out, label_smoothing, kPadId);
      loss += piece_loss.to(torch::kDouble), nll += piece_nll.to(torch::kDouble);
      if (!per_example && !per_position && !per_token) continue;
      // each target's NLL, logsumexp - target logit (no log-probability tensor), 0 at padding,
      // in fp32 at least, as the loss above (bf16 logits under mixed precision)
      const auto target = target_out.clamp_min(0).unsqueeze(-1);
      const auto mask = target_out.ne(kPadId);
      const auto wide = logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat);
      const auto token_nll = ((wide.logsumexp(-1) - wide.gather(-1, target).squeeze(-1)) * mask).to(torch::kDouble);
      const auto counts = mask.to(torch::kDouble);
      auto rows = torch::stack({token_nll.sum(1), counts.sum(1)}, 1);
      row_sums = row_sums.defined() ? row_sums + rows : rows;
      if (per_position) column_sums.push_back(torch::stack({token_nll.sum(0), counts.sum(0)}, 1));
      if (per_token) token_pieces.push_back(token_nll.masked_fill(mask.logical_not(), NAN));
    }
    totals.add(loss.item<double>(), nll.item<double>(), static_cast<double>(batch.target_tokens));
    // brought to the host once per batch
    if (per_example) {
      const auto rows = row_sums.cpu();
      const auto r = rows.accessor<double, 2>();
      for (size_t b = 0; b < indices.size(); ++b)
        (*per_example)[indices[b]] = {r[static_cast<int64_t>(b)][0], r[static_cast<int64_t>(b)][1]};
    }
    if (per_token) {
      const auto tokens = torch::cat(token_pieces, 1).cpu();  // (B, width - skip): positions skip, skip + 1, ...
      const auto t = tokens.accessor<double, 2>();
      for (size_t b = 0; b < indices.size(); ++b) {
        auto& row = (*per_token)[indices[b]];
        row.assign(static_cast<size_t>(width), NAN);
        for (int64_t j = 0; j < tokens.size(1); ++j) row[static_cast<size_t>(skip + j)] = t[static_cast<int64_t>(b)][j];
      }
    }
    if (per_position) {
      const auto columns = torch::cat(column_sums).cpu();  // (T, 2): positions skip, skip + 1, ...
      const auto c = columns.accessor<double, 2>();
      if (per_position->size() < static_cast<size_t>(skip + columns.size(0)))
        per_position->resize(static_cast<size_t>(skip + columns.size(0)));
      for (int64_t j = 0; j < columns.size(0); ++j)
        (*per_position)[static_cast<size_t>(skip + j)].nll += c[j][0],
            (*per_position)[static_cast<size_t>(skip + j)].tokens += c[j][1];
    }
  }
  model->train(was_training);
  return totals;
}

}  // namespace ropelab
