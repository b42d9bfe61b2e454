#include "ropelab/attention/performer.h"

#include <cmath>
#include <limits>

namespace ropelab {

namespace {

/// Added to every query feature after its row stabilizer (relative to a maximum of 1).
constexpr double kQueryEps = 1e-6;
/// Guards denominators of rows that see no key at all (padded rows, ignored by callers).
constexpr double kTinyDenominator = 1e-30;
/// Stands for log 0 at padded keys; finite, so differences of two stay NaN-free.
constexpr double kLogZero = -std::numeric_limits<float>::max();

}  // namespace

torch::Tensor orthogonal_random_features(int64_t m, int64_t d, const torch::TensorOptions& options) {
  TORCH_CHECK(m > 0 && d > 0, "orthogonal_random_features: m and d must be positive, got ", m, " and ", d);
  auto opts = options.dtype(torch::kFloat).device(torch::kCPU);
  std::vector<torch::Tensor> blocks;
  for (int64_t rows = 0; rows < m; rows += d) {
    auto q = std::get<0>(at::linalg_qr(torch::randn({d, d}, opts)));  // orthonormal columns
    blocks.push_back(q.t());
  }
  auto w = torch::cat(blocks).narrow(0, 0, m);
  auto norms = torch::randn({m, d}, opts).norm(2, {1}, true);  // chi(d)-distributed
  return (w * norms).to(options.device());
}

PerformerAttention::PerformerAttention(const AttentionOptions& options, int64_t head_dim)
    : num_features_(options.num_features()),
      head_dim_(head_dim),
      redraw_every_(options.redraw_every()),
      chunk_size_(options.chunk_size()) {
  TORCH_CHECK(num_features_ > 0, "performer: num_features must be positive, got ", num_features_);
  TORCH_CHECK(chunk_size_ > 0, "performer: chunk_size must be positive, got ", chunk_size_);
  TORCH_CHECK(redraw_every_ >= 0, "performer: redraw_every must be >= 0, got ", redraw_every_);
  TORCH_CHECK(options.dropout() == 0.0, "performer: attention dropout is not supported (got ", options.dropout(), ")");
  features = register_buffer("features", orthogonal_random_features(num_features_, head_dim_));
}

void PerformerAttention::redraw() {
  torch::NoGradGuard no_grad;
  features.copy_(orthogonal_random_features(num_features_, head_dim_, features.options()));
}

void PerformerAttention::before_update(int64_t done) {
  if (is_training() && redraw_every_ > 0 && done > 0 && done % redraw_every_ == 0) redraw();
}

torch::Tensor PerformerAttention::feature_logits(const torch::Tensor& k) const {
  auto x = k * std::pow(static_cast<double>(head_dim_), -0.25);
  return torch::matmul(x, features.to(x.dtype()).t()) - x.square().sum(-1, true) * 0.5;
}

torch::Tensor PerformerAttention::query_features(const torch::Tensor& q) const {
  auto logits = feature_logits(q);
  // Not detached: with eps the row scale does not cancel exactly, and gradients through
  // the maximum keep backward exact for the function forward computes.
  auto stabilizer = std::get<0>(logits.max(-1, true));
  return (torch::exp(logits - stabilizer) + kQueryEps) * (1.0 / std::sqrt(static_cast<double>(num_features_)));
}

torch::Tensor PerformerAttention::forward(const AttentionInputs& in) {
  TORCH_CHECK(!in.logit_bias.defined(),
              "performer attention takes no logit bias (T5, ALiBi, Kerple, FIRE, a forget gate)");
  TORCH_CHECK(!in.contextual.defined(), "performer attention takes no contextual positions (CoPE)");
  auto phi_q = query_features(in.q);
  auto logits = feature_logits(in.k);
  torch::Tensor keep;  // (B, 1, Tk, 1), true at real keys
  if (in.key_padding_mask.defined()) keep = in.key_padding_mask.logical_not().view({in.k.size(0), 1, -1, 1});
  if (in.causal) {
    TORCH_CHECK(in.q.size(-2) == in.k.size(-2), "performer: causal attention without a cache needs Tq == Tk");
    return causal_linear_attention(phi_q, logits, keep, in.v, chunk_size_);
  }
  if (keep.defined()) logits = logits.masked_fill(keep.logical_not(), kLogZero);
  auto stabilizer = logits.amax({-2, -1}, true).detach();  // one per (batch, head): cancels exactly
  auto phi_k = torch::exp(logits - stabilizer);
  if (keep.defined()) phi_k = phi_k * keep.to(phi_k.dtype());
  auto kv = torch::matmul(phi_k.transpose(-2, -1), in.v);                // (B, H, m, Dh)
  auto denominator = torch::matmul(phi_q, phi_k.sum(-2).unsqueeze(-1));  // (B, H, Tq, 1)
  return torch::matmul(phi_q, kv) / denominator.clamp_min(kTinyDenominator);
}

void PerformerCache::reorder(const torch::Tensor& index) {
  for (auto* t : {&kv_sum, &k_sum, &log_scale})
    if (t->defined()) *t = t->index_select(0, index);
}

torch::Tensor PerformerAttention::forward_cached(AttentionInputs in, AttentionCachePtr& cache) {
  TORCH_CHECK(!in.logit_bias.defined(),
              "performer attention takes no logit bias (T5, ALiBi, Kerple, FIRE, a forget gate)");
  // Incremental decoding feeds real tokens only (Stack rejects a padding mask there).
  TORCH_CHECK(!in.key_padding_mask.defined(), "performer: incremental decoding takes no key padding mask");
  TORCH_CHECK(!in.rotate_keys, "performer: its sums cannot rotate past keys again (dynamic NTK per call)");
  if (!cache) cache = std::make_unique<PerformerCache>();
  auto* sums = dynamic_cast<PerformerCache*>(cache.get());
  TORCH_INTERNAL_ASSERT(sums, "attention cache of another backend");
  return causal_linear_attention(query_features(in.q), feature_logits(in.k), {}, in.v, chunk_size_, sums);
}

torch::Tensor causal_linear_attention(const torch::Tensor& phi_q, const torch::Tensor& key_logits,
                                      const torch::Tensor& keep, const torch::Tensor& v, int64_t chunk_size,
                                      PerformerCache* cache) {
  const int64_t B = v.size(0), H = v.size(1), T = v.size(2), Dh = v.size(3), m = phi_q.size(-1);
  const int64_t C = std::min(chunk_size, T), N = (T + C - 1) / C, padded = N * C;
  auto logits = key_logits;
  auto keep_t = keep;
  auto q = phi_q, values = v;
  if (padded > T) {  // pad to whole chunks with keys that count for nothing
    const int64_t extra = padded - T;
    auto pad_time = [&](const torch::Tensor& x) {
      auto shape = x.sizes().vec();
      shape[2] = extra;
      return torch::cat({x, torch::zeros(shape, x.options())}, 2);
    };
    q = pad_time(q), values = pad_time(values), logits = pad_time(logits);
    keep_t = pad_time(keep_t.defined() ? keep_t : torch::ones({B, 1, T, 1}, v.options().dtype(torch::kBool)));
  }
  if (keep_t.defined()) logits = logits.masked_fill(keep_t.logical_not(), kLogZero);

  // Per chunk: its own maximum, features relative to it, and its sums phi(k)^T v, phi(k).
  auto lc = logits.view({B, H, N, C, m});
  auto chunk_max = lc.amax({-2, -1}).detach();  // (B, H, N)
  auto e = torch::exp(lc - chunk_max.unsqueeze(-1).unsqueeze(-1));
  if (keep_t.defined()) e = e * keep_t.view({B, 1, N, C, 1}).to(e.dtype());
  auto vc = values.view({B, H, N, C, Dh});
  auto qc = q.view({B, H, N, C, m});
  auto kv = torch::matmul(e.transpose(-2, -1), vc);  // (B, H, N, m, Dh)
  auto ks = e.sum(-2);                               // (B, H, N, m)

  // Earlier keys from the cache form a chunk of their own before the first.
  const bool from_cache = cache && cache->kv_sum.defined();
  const int64_t first = from_cache ? 1 : 0, L = N + first;
  auto scale = chunk_max, kv_all = kv, ks_all = ks;
  if (from_cache) {
    scale = torch::cat({cache->log_scale.unsqueeze(-1), chunk_max}, -1);
    kv_all = torch::cat({cache->kv_sum.unsqueeze(2), kv}, 2);
    ks_all = torch::cat({cache->k_sum.unsqueeze(2), ks}, 2);
  }
  // Chunk i is computed at the running maximum M_i; chunk j < i enters with
  // exp(scale_j - M_i) <= 1, its own content at exp(scale_i - M_i).
  auto running = std::get<0>(torch::cummax(scale, -1));  // (B, H, L)
  auto earlier = torch::ones({L, L}, scale.options().dtype(torch::kBool)).tril(-1);
  auto weight = torch::exp(scale.unsqueeze(-2) - running.unsqueeze(-1)).masked_fill(earlier.logical_not(), 0.0);
  weight = weight.narrow(2, first, N);  // (B, H, N, L)
  auto prefix_kv = torch::matmul(weight, kv_all.flatten(-2)).view({B, H, N, m, Dh});
  auto prefix_k = torch::matmul(weight, ks_all);  // (B, H, N, m)

  auto within = torch::matmul(qc, e.transpose(-2, -1));  // (B, H, N, C, C)
  within = within.masked_fill(torch::ones({C, C}, within.options().dtype(torch::kBool)).triu(1), 0.0);
  auto own = torch::exp(chunk_max - running.narrow(2, first, N)).unsqueeze(-1);  // (B, H, N, 1)
  auto numerator = torch::matmul(within, vc) * own.unsqueeze(-1) + torch::matmul(qc, prefix_kv);
  auto denominator = within.sum(-1) * own + torch::matmul(qc, prefix_k.unsqueeze(-1)).squeeze(-1);
  auto out = (numerator / denominator.clamp_min(kTinyDenominator).unsqueeze(-1)).view({B, H, padded, Dh});

  if (cache) {                              // sums over every key so far, at the final running maximum
    auto last = running.select(-1, L - 1);  // (B, H)
    auto w = torch::exp(scale - last.unsqueeze(-1)).detach();  // (B, H, L)
    cache->kv_sum = (kv_all * w.unsqueeze(-1).unsqueeze(-1)).sum(2);
    cache->k_sum = (ks_all * w.unsqueeze(-1)).sum(2);
    cache->log_scale = last;
  }
  return padded > T ? out.narrow(2, 0, T) : out;
}

torch::Tensor causal_linear_attention_reference(const torch::Tensor& phi_q, const torch::Tensor& phi_k,
                                                const torch::Tensor& v) {
  const int64_t T = v.size(2);
  auto a = torch::matmul(phi_q, phi_k.transpose(-2, -1));
  a = a.masked_fill(torch::ones({T, T}, a.options().dtype(torch::kBool)).triu(1), 0.0);
  return torch::matmul(a, v) / a.sum(-1, true);
}

}  // namespace ropelab
