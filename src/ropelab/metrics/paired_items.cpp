#include "ropelab/metrics/paired_items.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ropelab/util/files.h"

namespace ropelab {

namespace {

class Perplexity : public CorpusMetric {
 public:
  std::string name() const override { return "ppl"; }
  size_t width() const override { return 2; }
  double score(const double* sums) const override { return std::exp(sums[0] / sums[1]); }
};

class PerToken : public CorpusMetric {
 public:
  std::string name() const override { return "nats/token"; }
  size_t width() const override { return 2; }
  double score(const double* sums) const override { return sums[0] / sums[1]; }
};

std::string header_of(const std::vector<std::string>& columns) {
  std::string header;
  for (const auto& c : columns) header += (header.empty() ? "" : "\t") + c;
  return header;
}

}  // namespace

std::shared_ptr<const CorpusMetric> perplexity_metric() {
  static const auto metric = std::make_shared<const Perplexity>();
  return metric;
}

std::shared_ptr<const CorpusMetric> per_token_metric() {
  static const auto metric = std::make_shared<const PerToken>();
  return metric;
}

std::vector<std::string> read_item_header(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + ":1: no header");
  std::vector<std::string> columns;
  std::istringstream fields(line);
  for (std::string field; std::getline(fields, field, '\t');) columns.push_back(field);
  return columns;
}

void write_item_table(const std::string& path, const std::vector<std::string>& columns,
                      const std::vector<std::vector<double>>& rows) {
  std::string text = header_of(columns) + '\n';
  char buffer[32];
  for (const auto& row : rows) {
    if (row.size() != columns.size())
      throw std::invalid_argument(path + ": a row of " + std::to_string(row.size()) + " values for " +
                                  std::to_string(columns.size()) + " columns");
    for (size_t c = 0; c < row.size(); ++c) {
      std::snprintf(buffer, sizeof buffer, "%.17g", row[c]);
      text += (c ? "\t" : "") + std::string(buffer);
    }
    text += '\n';
  }
  write_file_atomically(path, text, "item table");
}

std::vector<double> read_item_table(const std::string& path, const std::vector<std::string>& columns) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::string line;
  if (!std::getline(in, line) || line != header_of(columns))
    throw std::runtime_error(path + ":1: expected the header '" + header_of(columns) + "'");
  std::vector<double> out;
  for (int64_t number = 2; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    size_t n = 0;
    for (std::string field; std::getline(fields, field, '\t'); ++n) {
      char* end = nullptr;
      const double v = std::strtod(field.c_str(), &end);
      if (field.empty() || *end != '\0' || !std::isfinite(v))
        throw std::runtime_error(path + ":" + std::to_string(number) + ": '" + field + "' is not a finite number");
      out.push_back(v);
    }
    if (n != columns.size())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + std::to_string(n) + " fields, expected " +
                               std::to_string(columns.size()));
  }
  return out;
}

}  // namespace ropelab
