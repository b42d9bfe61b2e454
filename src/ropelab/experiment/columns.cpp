#include "ropelab/experiment/columns.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>
#include <utility>

#include "ropelab/data/retrieval.h"

namespace ropelab {

namespace {

using Measure = ColumnKey::Measure;

const std::array<std::pair<Measure, const char*>, 8> kMeasures{{{Measure::valid_ppl, "valid_ppl"},
                                                                {Measure::train_s, "train_s"},
                                                                {Measure::test_bleu, "test_bleu"},
                                                                {Measure::test_chrf, "test_chrf"},
                                                                {Measure::test_ter, "test_ter"},
                                                                {Measure::test_ppl, "test_ppl"},
                                                                {Measure::passkey, "passkey"},
                                                                {Measure::gain, "gain"}}};

/// The positive number at the start of `text` and the rest; nullopt without one.
std::optional<std::pair<int64_t, std::string>> leading_number(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == 0 || end > 18 || text[0] == '0') return std::nullopt;
  return std::make_pair(std::stoll(text.substr(0, end)), text.substr(end));
}

}  // namespace

std::string format_column(const ColumnKey& key) {
  if (key.measure == Measure::retrieval) return key.task + "@" + std::to_string(key.length);
  std::string name;
  for (const auto& [measure, text] : kMeasures)
    if (measure == key.measure) name = text;
  if (key.length > 0) name += "@" + std::to_string(key.length);
  if (key.stride > 0) name += "/" + std::to_string(key.stride);
  if (key.window > 0)
    name += "#w" + std::to_string(key.window) + (key.sinks > 0 ? "s" + std::to_string(key.sinks) : "");
  if (!key.scaling.empty()) name += "+" + key.scaling;
  if (key.measure == Measure::gain) name += ":" + std::to_string(key.begin) + "-" + std::to_string(key.end);
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
  const auto& tasks = retrieval_task_names();
  if (at != std::string::npos && std::find(tasks.begin(), tasks.end(), name.substr(0, at)) != tasks.end()) {
    const auto length = leading_number(name.substr(at + 1));
    if (!length || !length->second.empty()) return std::nullopt;
    return ColumnKey::retrieval(name.substr(0, at), length->first);
  }
  ColumnKey key;
  bool known = false;
  for (const auto& [measure, text] : kMeasures)
    if (name.compare(0, at, text) == 0) key.measure = measure, known = true;
  if (!known) return std::nullopt;
  const bool located =
      key.measure == Measure::test_ppl || key.measure == Measure::passkey || key.measure == Measure::gain;
  if (at == std::string::npos) {
    if (key.measure == Measure::passkey || key.measure == Measure::gain) return std::nullopt;  // they need a length
    return key;
  }
  if (!located) return std::nullopt;
  auto length = leading_number(name.substr(at + 1));
  if (!length) return std::nullopt;
  key.length = length->first;
  std::string rest = length->second;
  if (key.measure != Measure::passkey && !rest.empty() && rest[0] == '/') {
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
  if (key.measure == Measure::passkey)  // passkey@L, passkey@L#wWsS
    return rest.empty() ? std::optional<ColumnKey>(key) : std::nullopt;
  if (key.measure == Measure::gain) {  // gain@C#wW:B-E
    const auto begin = rest.size() > 1 && rest[0] == ':' ? leading_number(rest.substr(1)) : std::nullopt;
    const auto end = begin && begin->second.size() > 1 && begin->second[0] == '-'
                         ? leading_number(begin->second.substr(1))
                         : std::nullopt;
    if (key.window == 0 || key.sinks > 0 || key.stride > 0 || !end || !end->second.empty()) return std::nullopt;
    key.begin = begin->first, key.end = end->first;
    return key;
  }
  if (!rest.empty()) {
    if (rest[0] != '+' || rest.size() == 1) return std::nullopt;
    key.scaling = rest.substr(1);
  }
  return key;
}

bool column_before(const std::string& a, const std::string& b) {
  const auto ka = parse_column(a), kb = parse_column(b);
  if (ka && kb && ka->measure == kb->measure && ka->task != kb->task) return ka->task < kb->task;
  if (ka && kb && ka->measure == kb->measure && ka->length > 0 && kb->length > 0 && ka->length != kb->length)
    return ka->length < kb->length;
  if (ka && kb && ka->measure == Measure::gain && kb->measure == Measure::gain)  // a context's buckets in order
    return std::make_tuple(ka->window, ka->begin, ka->end) < std::make_tuple(kb->window, kb->begin, kb->end);
  return a < b;
}

}  // namespace ropelab
