// BLEU, chrF, chrF++ and TER behind one interface of per-line statistics, for `ropelab
// score -m` and the paired significance tests.
#include <algorithm>
#include <future>
#include <stdexcept>

#include "ropelab/metrics/metrics.h"

namespace ropelab {

namespace {

// BLEU's statistics per line: hypothesis length, reference length, matches[4], totals[4].
constexpr size_t kBleuWidth = 10;

BleuStats bleu_stats_of(const double* s) {
  BleuStats b;
  b.hyp_len = static_cast<int64_t>(s[0]);
  b.ref_len = static_cast<int64_t>(s[1]);
  for (size_t n = 0; n < 4; ++n)
    b.matches[n] = static_cast<int64_t>(s[2 + n]), b.totals[n] = static_cast<int64_t>(s[6 + n]);
  return b;
}

class Bleu : public TextMetric {
 public:
  explicit Bleu(BleuOptions options) : options_(options) {}
  std::string name() const override { return "BLEU"; }
  size_t width() const override { return kBleuWidth; }
  double score(const double* sums) const override { return bleu_from_stats(bleu_stats_of(sums), options_, 1).score; }
  std::vector<double> sentence_stats(const std::vector<std::string>& hyps,
                                     const std::vector<std::vector<std::string>>& refs) const override {
    std::vector<double> out;
    out.reserve(hyps.size() * kBleuWidth);
    for (const auto& b : bleu_sentence_stats(hyps, refs, options_)) {
      out.push_back(static_cast<double>(b.hyp_len));
      out.push_back(static_cast<double>(b.ref_len));
      for (auto m : b.matches) out.push_back(static_cast<double>(m));
      for (auto t : b.totals) out.push_back(static_cast<double>(t));
    }
    return out;
  }
  std::string line(const double* sums) const override {
    return bleu_from_stats(bleu_stats_of(sums), options_, 1).format();
  }
  std::string signature(size_t nrefs) const override { return bleu_from_stats({}, options_, nrefs).signature; }

 private:
  BleuOptions options_;
};

class Chrf : public TextMetric {
 public:
  explicit Chrf(ChrfOptions options) : options_(options) {}
  std::string name() const override { return "chrF2" + std::string(static_cast<size_t>(options_.word_order), '+'); }
  size_t width() const override { return chrf_stats_width(options_); }
  double score(const double* sums) const override { return chrf_from_stats(sums, options_, 1).score; }
  std::vector<double> sentence_stats(const std::vector<std::string>& hyps,
                                     const std::vector<std::vector<std::string>>& refs) const override {
    return std::move(chrf_sentence_stats(hyps, refs, {options_})[0]);
  }
  std::string line(const double* sums) const override { return chrf_from_stats(sums, options_, 1).format(); }
  std::string signature(size_t nrefs) const override {
    const std::vector<double> zeros(width(), 0.0);
    return chrf_from_stats(zeros.data(), options_, nrefs).signature;
  }

 private:
  ChrfOptions options_;
};

class Ter : public TextMetric {
 public:
  explicit Ter(TerOptions options) : options_(options) {}
  std::string name() const override { return "TER"; }
  size_t width() const override { return 2; }
  double score(const double* sums) const override { return ter_from_stats({sums[0], sums[1]}, options_, 1).score; }
  std::vector<double> sentence_stats(const std::vector<std::string>& hyps,
                                     const std::vector<std::vector<std::string>>& refs) const override {
    std::vector<double> out;
    out.reserve(2 * hyps.size());
    for (const auto& t : ter_sentence_stats(hyps, refs, options_)) out.push_back(t.edits), out.push_back(t.ref_len);
    return out;
  }
  std::string line(const double* sums) const override {
    return ter_from_stats({sums[0], sums[1]}, options_, 1).format();
  }
  std::string signature(size_t nrefs) const override { return ter_from_stats({}, options_, nrefs).signature; }

 private:
  TerOptions options_;
};

}  // namespace

const std::vector<std::string>& text_metric_names() {
  static const std::vector<std::string> names{"bleu", "chrf", "chrf++", "ter"};
  return names;
}

std::unique_ptr<TextMetric> make_text_metric(const std::string& name, const TextMetricOptions& options) {
  if (name == "bleu") {
    BleuOptions o;
    o.smoothing = options.smoothing;
    o.lowercase = options.lowercase;
    return std::make_unique<Bleu>(o);
  }
  if (name == "chrf" || name == "chrf++") {
    ChrfOptions o = name == "chrf" ? ChrfOptions{} : chrf_plus_plus();
    o.lowercase = options.lowercase;
    return std::make_unique<Chrf>(o);
  }
  if (name == "ter") {
    TerOptions o;
    o.case_sensitive = options.case_sensitive_ter;
    return std::make_unique<Ter>(o);
  }
  std::string known;
  for (const auto& n : text_metric_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown metric '" + name + "' (known: " + known + ")");
}

std::vector<std::vector<double>> text_metric_stats(const std::vector<std::string>& names,
                                                   const TextMetricOptions& options,
                                                   const std::vector<std::string>& hyps,
                                                   const std::vector<std::vector<std::string>>& refs) {
  check_line_counts(hyps, refs);
  std::vector<std::vector<double>> out(names.size());
  std::vector<std::future<void>> running;
  const auto first_chrf =
      std::find_if(names.begin(), names.end(), [](const std::string& n) { return n == "chrf" || n == "chrf++"; });
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& name = names[i];
    const bool chrf = name == "chrf" || name == "chrf++";
    if (chrf && names.begin() + static_cast<std::ptrdiff_t>(i) != first_chrf) continue;  // in the first chrF's pass
    if (!chrf) {
      // made here, so that an unknown name throws before any thread starts
      std::shared_ptr<TextMetric> metric = make_text_metric(name, options);
      running.push_back(std::async(std::launch::async,
                                   [&out, &hyps, &refs, i, metric] { out[i] = metric->sentence_stats(hyps, refs); }));
      continue;
    }
    std::vector<size_t> slots;  // every chrF variant asked for, in one pass
    std::vector<ChrfOptions> variants;
    for (size_t k = i; k < names.size(); ++k) {
      if (names[k] != "chrf" && names[k] != "chrf++") continue;
      ChrfOptions o = names[k] == "chrf" ? ChrfOptions{} : chrf_plus_plus();
      o.lowercase = options.lowercase;
      slots.push_back(k), variants.push_back(o);
    }
    running.push_back(std::async(std::launch::async, [&out, &hyps, &refs, slots, variants] {
      auto stats = chrf_sentence_stats(hyps, refs, variants);
      for (size_t v = 0; v < slots.size(); ++v) out[slots[v]] = std::move(stats[v]);
    }));
  }
  for (auto& r : running) r.get();
  return out;
}

std::vector<double> column_sums(const std::vector<double>& stats, size_t width) {
  std::vector<double> sums(width, 0.0);
  for (size_t i = 0; i < stats.size(); ++i) sums[i % width] += stats[i];
  return sums;
}

}  // namespace ropelab
