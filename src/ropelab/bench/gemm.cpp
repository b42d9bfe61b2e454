#include "ropelab/bench/gemm.h"

#include <stdexcept>

#include "ropelab/task/task_registry.h"

namespace ropelab {

namespace {

struct GemmCounter {
  std::vector<GemmShape> shapes;

  /// y = x W^T with x (rows x in): forward, dx = dy W, dW = dy^T x.
  void linear(const std::string& name, int64_t rows, int64_t in, int64_t out, int64_t count) {
    shapes.push_back({name + ", forward", 1, rows, out, in, count});
    shapes.push_back({name + ", grad input", 1, rows, in, out, count});
    shapes.push_back({name + ", grad weight", 1, out, in, rows, count});
  }

  /// Softmax attention per (sentence, head): S = Q K^T, O = P V forward; dP = dO V^T,
  /// dV = P^T dO, dQ = dS K, dK = dS^T Q backward.
  void attention(const std::string& name, int64_t heads_total, int64_t tq, int64_t tk, int64_t dh, int64_t count) {
    const bool fp32 = true;  // attention itself runs in fp32 under mixed precision
    shapes.push_back({name + " scores", heads_total, tq, tk, dh, count, fp32});
    shapes.push_back({name + " values", heads_total, tq, dh, tk, count, fp32});
    shapes.push_back({name + " grad probs", heads_total, tq, tk, dh, count, fp32});
    shapes.push_back({name + " grad values", heads_total, tk, dh, tq, count, fp32});
    shapes.push_back({name + " grad queries", heads_total, tq, dh, tk, count, fp32});
    shapes.push_back({name + " grad keys", heads_total, tk, dh, tq, count, fp32});
  }
};

}  // namespace

std::vector<GemmShape> training_gemms(const Config& config, int64_t vocab, int64_t sentences, int64_t length) {
  const auto& m = config.model;
  if (m.attention().type() != AttentionType::softmax)
    throw std::invalid_argument("the matmul count covers softmax attention; model.attention.type is " +
                                to_string(m.attention().type()));
  const int64_t d = m.d_model(), ff = m.d_ff(), h = m.heads(), dh = d / h, rows = sentences * length;
  GemmCounter c;
  const bool encoder_decoder = task_traits(config.task).encoder_decoder;
  const int64_t enc = encoder_decoder ? m.encoder_layers() : 0, dec = m.decoder_layers();
  if (enc > 0) {
    c.linear("encoder self q,k,v", rows, d, 3 * d, enc);
    c.attention("encoder self", sentences * h, length, length, dh, enc);
    c.linear("encoder self out", rows, d, d, enc);
    c.linear("encoder ffn in", rows, d, ff, enc);
    c.linear("encoder ffn out", rows, ff, d, enc);
  }
  c.linear("decoder self q,k,v", rows, d, 3 * d, dec);
  c.attention("decoder self", sentences * h, length, length, dh, dec);
  c.linear("decoder self out", rows, d, d, dec);
  if (encoder_decoder) {
    c.linear("decoder cross q", rows, d, d, dec);
    c.linear("decoder cross k,v", rows, d, 2 * d, dec);
    c.attention("decoder cross", sentences * h, length, length, dh, dec);
    c.linear("decoder cross out", rows, d, d, dec);
  }
  c.linear("decoder ffn in", rows, d, ff, dec);
  c.linear("decoder ffn out", rows, ff, d, dec);
  c.linear("output projection", rows, d, vocab, 1);
  return c.shapes;
}

double total_flops(const std::vector<GemmShape>& shapes) {
  double f = 0;
  for (const auto& s : shapes) f += s.flops();
  return f;
}

GemmBenchResult bench_gemm(const std::vector<GemmShape>& shapes, torch::Dtype dtype, const torch::Device& device,
                           int64_t repeats) {
  GemmBenchResult result;
  torch::NoGradGuard no_grad;
  for (const auto& s : shapes) {
    GemmRow row{s, s.fp32 ? torch::kFloat : dtype, {}};
    const auto options = torch::TensorOptions().dtype(row.dtype).device(device);
    if (s.batch == 1) {
      auto a = torch::randn({s.m, s.k}, options), b = torch::randn({s.k, s.n}, options);
      auto out = torch::empty({s.m, s.n}, options);
      row.timing = time_repeats([&] { torch::mm_out(out, a, b); }, 1, repeats, device);
    } else {
      auto a = torch::randn({s.batch, s.m, s.k}, options), b = torch::randn({s.batch, s.k, s.n}, options);
      auto out = torch::empty({s.batch, s.m, s.n}, options);
      row.timing = time_repeats([&] { torch::bmm_out(out, a, b); }, 1, repeats, device);
    }
    result.seconds += row.timing.median * static_cast<double>(s.count);
    result.flops += s.flops();
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace ropelab
