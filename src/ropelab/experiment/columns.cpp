#include "ropelab/experiment/columns.h"

#include <array>
#include <cctype>
#include <utility>

namespace ropelab {

namespace {

using Measure = ColumnKey::Measure;

const std::array<std::pair<Measure, const char*>, 7> kMeasures{{{Measure::valid_ppl, "valid_ppl"},
                                                                {Measure::train_s, "train_s"},
                                                                {Measure::test_bleu, "test_bleu"},
                                                                {Measure::test_chrf, "test_chrf"},
                                                                {Measure::test_ter, "test_ter"},
                                                                {Measure::test_ppl, "test_ppl"},
                                                                {Measure::passkey, "passkey"}}};

/// The positive number at the start of `text` and the rest; nullopt without one.
std::optional<std::pair<int64_t, std::string>> leading_number(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == 0 || end > 18 || text[0] == '0') return std::nullopt;
  return std::make_pair(std::stoll(text.substr(0, end)), text.substr(end));
}

}  // namespace

std::string format_column(const ColumnKey& key) {
  std::string name;
  for (const auto& [measure, text] : kMeasures)
    if (measure == key.measure) name = text;
  if (key.length > 0) name += "@" + std::to_string(key.length);
  if (key.stride > 0) name += "/" + std::to_string(key.stride);
  if (key.window > 0)
    name += "#w" + std::to_string(key.window) + (key.sinks > 0 ? "s" + std::to_string(key.sinks) : "");
  if (!key.scaling.empty()) name += "+" + key.scaling;
  return name;
}

std::string ColumnKey::evaluated_as() const {
  std::string out = scaling;
  if (window > 0)
    out += (out.empty() ? "" : ",") + std::string("w") + std::to_string(window) +
           (sinks > 0 ? "s" + std::to_string(sinks) : "");
  return out.empty() ? "none" : out;
}

std::optional<ColumnKey> parse_column(const std::string& name) {
  const auto at = name.find('@');
  ColumnKey key;
  bool known = false;
  for (const auto& [measure, text] : kMeasures)
    if (name.compare(0, at, text) == 0) key.measure = measure, known = true;
  if (!known) return std::nullopt;
  const bool located = key.measure == Measure::test_ppl || key.measure == Measure::passkey;
  if (at == std::string::npos) {
    if (key.measure == Measure::passkey) return std::nullopt;  // passkey needs its length
    return key;
  }
  if (!located) return std::nullopt;
  auto length = leading_number(name.substr(at + 1));
  if (!length) return std::nullopt;
  key.length = length->first;
  std::string rest = length->second;
  if (key.measure == Measure::passkey) return rest.empty() ? std::optional<ColumnKey>(key) : std::nullopt;
  if (!rest.empty() && rest[0] == '/') {
    auto stride = leading_number(rest.substr(1));
    if (!stride) return std::nullopt;
    key.stride = stride->first;
    rest = stride->second;
  }
  if (rest.rfind("#w", 0) == 0) {
    auto window = leading_number(rest.substr(2));
    if (!window) return std::nullopt;
    key.window = window->first;
    rest = window->second;
    if (!rest.empty() && rest[0] == 's') {
      auto sinks = leading_number(rest.substr(1));
      if (!sinks) return std::nullopt;
      key.sinks = sinks->first;
      rest = sinks->second;
    }
  }
  if (!rest.empty()) {
    if (rest[0] != '+' || rest.size() == 1) return std::nullopt;
    key.scaling = rest.substr(1);
  }
  return key;
}

bool column_before(const std::string& a, const std::string& b) {
  const auto ka = parse_column(a), kb = parse_column(b);
  if (ka && kb && ka->measure == kb->measure && ka->length > 0 && kb->length > 0) return ka->length < kb->length;
  return a < b;
}

}  // namespace ropelab
