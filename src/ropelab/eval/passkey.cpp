#include "ropelab/eval/passkey.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ropelab/util/files.h"
#include "ropelab/util/random.h"

namespace ropelab {

namespace {

// Mohtashami and Jaggi's filler, one sentence after another.
const char* const kFiller[] = {"The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
                               "There and back again."};
constexpr size_t kFillerSentences = sizeof kFiller / sizeof kFiller[0];
const std::string kQuestion = "What is the pass key? The pass key is";

std::string key_sentence(const std::string& key) {
  return "The pass key is " + key + ". Remember it. " + key + " is the pass key.";
}

/// `chars` characters of filler sentences from sentence `first` on, cut at the end.
std::string filler(size_t chars, size_t first) {
  std::string out;
  for (size_t i = first; out.size() < chars; ++i)
    out += (out.empty() ? "" : " ") + std::string(kFiller[i % kFillerSentences]);
  out.resize(chars);
  return out;
}

}  // namespace

int64_t passkey_minimum_length(int64_t digits) {
  return static_cast<int64_t>(key_sentence(std::string(static_cast<size_t>(digits), '1')).size() + 1 +
                              kQuestion.size());
}

void check_passkey_length(int64_t length, int64_t digits, const std::string& flag) {
  const int64_t minimum = passkey_minimum_length(digits);
  if (length < minimum)
    throw std::invalid_argument(flag + " " + std::to_string(length) + " is below the " + std::to_string(minimum) +
                                " characters of the key sentence and the question");
}

void write_passkey_documents(const PasskeyDocumentSet& set, std::ostream& out) {
  const int64_t low = set.min_length > 0 ? set.min_length : set.length;
  if (low > set.length) throw std::invalid_argument("--min-length is above --length");
  check_passkey_length(low, set.digits, "--length");
  SplitMix64 shapes(set.seed ^ 0xA5A5A5A5A5A5A5A5ULL);
  for (int64_t i = 0; i < set.count; ++i) {
    PasskeyOptions o;
    o.digits = set.digits;
    o.length = low + static_cast<int64_t>(shapes.below(static_cast<uint32_t>(set.length - low + 1)));
    o.depth = static_cast<double>(shapes.below(101)) / 100.0;
    const auto d = make_passkey_document(o, set.seed, static_cast<uint64_t>(i));
    out << (set.prompts ? d.prompt + "\t" + d.key : d.with_answer()) << '\n';
  }
  out << std::flush;
}

PasskeyDocument make_passkey_document(const PasskeyOptions& o, uint64_t seed, uint64_t index) {
  if (o.digits < 1 || o.digits > 18)
    throw std::invalid_argument("passkey digits must be 1 to 18, got " + std::to_string(o.digits));
  if (!(o.depth >= 0 && o.depth <= 1)) throw std::invalid_argument("passkey depth must be in [0, 1]");
  const int64_t minimum = passkey_minimum_length(o.digits);
  if (o.length < minimum)
    throw std::invalid_argument("passkey length " + std::to_string(o.length) + " is below the " +
                                std::to_string(minimum) + " characters of the key sentence and the question");
  // one stream per document: (seed, index) mixed, so documents do not depend on each other
  SplitMix64 rng(seed * 0x9E3779B97F4A7C15ULL + index);
  PasskeyDocument d;
  d.key = std::to_string(1 + rng.below(9));
  for (int64_t i = 1; i < o.digits; ++i) d.key += std::to_string(rng.below(10));
  const auto key = key_sentence(d.key);
  // the filler: what the key sentence, the question and the space before it leave
  const size_t room = static_cast<size_t>(o.length) - key.size() - kQuestion.size() - 1;
  const size_t before = static_cast<size_t>(std::llround(o.depth * static_cast<double>(room)));
  const auto text = filler(room, rng.below(static_cast<uint32_t>(kFillerSentences)));
  std::string head = text.substr(0, before), tail = text.substr(before);
  // a space on either side of the key takes a filler character's place: the prompt is
  // exactly `length` characters
  if (!head.empty()) head.back() = ' ';
  if (!tail.empty()) tail.front() = ' ';
  d.prompt = head + key + tail + " " + kQuestion;
  return d;
}

std::string passkey_answer(const std::string& continuation) {
  size_t i = 0;
  while (i < continuation.size() && continuation[i] == ' ') ++i;
  size_t j = i;
  while (j < continuation.size() && continuation[j] >= '0' && continuation[j] <= '9') ++j;
  return continuation.substr(i, j - i);
}

bool passkey_retrieved(const std::string& output, const std::string& key) {
  static const std::string kAnswerFollows = "The pass key is";
  const auto at = output.rfind(kAnswerFollows);
  return at != std::string::npos && passkey_answer(output.substr(at + kAnswerFollows.size())) == key;
}

ProportionInterval wilson_interval(int64_t successes, int64_t trials) {
  TORCH_CHECK(trials > 0 && successes >= 0 && successes <= trials, "wilson_interval: ", successes, " of ", trials);
  const double z = 1.959963984540054;  // the standard normal's 97.5% quantile
  const double n = static_cast<double>(trials), p = static_cast<double>(successes) / n, z2 = z * z;
  const double centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = z / (1 + z2 / n) * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  // exact at the ends: 0 successes give low 0, all give high 1
  return {successes == 0 ? 0.0 : centre - half, successes == trials ? 1.0 : centre + half};
}

void write_passkey_table(const std::string& path, const std::vector<PasskeyCell>& cells) {
  std::string text = "length,depth,documents,correct,accuracy,ci95_low,ci95_high,error\n";
  char row[160];
  for (const auto& c : cells) {
    std::snprintf(row, sizeof row, "%ld,%.4g,%ld,%ld,%.4f,", static_cast<long>(c.length), c.depth,
                  static_cast<long>(c.documents), static_cast<long>(c.correct), c.accuracy());
    text += row;
    if (c.documents > 0) {
      const auto ci = wilson_interval(c.correct, c.documents);
      std::snprintf(row, sizeof row, "%.4f,%.4f,", ci.low, ci.high);
      text += row;
    } else {
      text += ",,";
    }
    text += (c.error.empty() ? std::string() : "\"" + c.error + "\"") + "\n";
  }
  write_file_atomically(path, text, "passkey table");
}

std::vector<PasskeyCell> read_passkey_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::string line;
  std::getline(in, line);  // the header
  std::vector<PasskeyCell> cells;
  for (int64_t number = 2; std::getline(in, line); ++number) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (int f = 0; f < 7; ++f) {  // the error, last, may hold commas
      const auto comma = line.find(',', start);
      if (comma == std::string::npos)
        throw std::runtime_error(path + ":" + std::to_string(number) + ": expected 8 comma-separated fields");
      fields.push_back(line.substr(start, comma - start));
      start = comma + 1;
    }
    PasskeyCell c;
    try {
      c.length = std::stoll(fields[0]), c.depth = std::stod(fields[1]);
      c.documents = std::stoll(fields[2]), c.correct = std::stoll(fields[3]);
    } catch (const std::exception&) {
      throw std::runtime_error(path + ":" + std::to_string(number) +
                               ": length, depth, documents and correct must be "
                               "numbers");
    }
    c.error = line.substr(start);
    cells.push_back(c);
  }
  return cells;
}

std::string format_passkey_cells(const std::vector<PasskeyCell>& cells) {
  std::string text = "length  depth  accuracy\n";
  char row[160];
  for (const auto& c : cells) {
    std::snprintf(row, sizeof row, "%6ld  %5.2f  ", static_cast<long>(c.length), c.depth);
    text += row;
    if (!c.error.empty()) {
      text += "n/a: " + c.error + "\n";
      continue;
    }
    const auto ci = wilson_interval(c.correct, c.documents);
    std::snprintf(row, sizeof row, "%.2f (%ld/%ld; 95%% CI %.2f-%.2f)\n", c.accuracy(), static_cast<long>(c.correct),
                  static_cast<long>(c.documents), ci.low, ci.high);
    text += row;
  }
  return text;
}

void write_passkey_summary(const std::string& path, const std::vector<PasskeyCell>& cells, uint64_t seed) {
  std::map<int64_t, std::pair<int64_t, int64_t>> by_length;  // length -> (correct, documents)
  std::set<int64_t> failed;                                  // lengths with a cell that has an error
  int64_t correct = 0, documents = 0;
  for (const auto& c : cells) {
    auto& [length_correct, length_documents] = by_length[c.length];
    if (!c.error.empty()) {
      failed.insert(c.length);
      continue;
    }
    length_correct += c.correct, length_documents += c.documents;
    correct += c.correct, documents += c.documents;
  }
  auto accuracy = [](int64_t right, int64_t of) {
    return of > 0 ? nlohmann::json(static_cast<double>(right) / static_cast<double>(of)) : nlohmann::json();
  };
  auto interval = [](int64_t right, int64_t of) {
    if (of == 0) return nlohmann::json();
    const auto ci = wilson_interval(right, of);
    return nlohmann::json::array({ci.low, ci.high});
  };
  nlohmann::ordered_json json = {{"accuracy", accuracy(correct, documents)}};
  // a length with a failed depth has no accuracy: over its other depths it would be
  // another measure than its neighbours' (the counts below keep what was scored)
  for (const auto& [length, counts] : by_length)
    json["accuracy@" + std::to_string(length)] =
        failed.count(length) ? nlohmann::json() : accuracy(counts.first, counts.second);
  json["ci95"] = interval(correct, documents);
  for (const auto& [length, counts] : by_length)
    json["ci95@" + std::to_string(length)] =
        failed.count(length) ? nlohmann::json() : interval(counts.first, counts.second);
  // the counts, which pool over runs (an ablation's seeds) as accuracies cannot
  for (const auto& [length, counts] : by_length) {
    json["correct@" + std::to_string(length)] = counts.first;
    json["documents@" + std::to_string(length)] = counts.second;
  }
  json["passkey_seed"] = seed;
  write_file_atomically(path, json.dump() + "\n", "passkey summary");
}

std::string passkey_cell_mismatch(const PasskeyGrid& grid, size_t at, const PasskeyCell& cell) {
  const size_t depths = grid.depths.size(), total = grid.lengths.size() * depths;
  if (at >= total) return "a cell beyond the grid's " + std::to_string(total);
  const auto length = grid.lengths[at / depths];
  const auto depth = grid.depths[at % depths];
  if (cell.length == length && cell.depth == depth && (!cell.error.empty() || cell.documents == grid.documents))
    return "";
  std::ostringstream what;
  what << "length " << cell.length << " depth " << cell.depth << " with " << cell.documents
       << " documents, where the grid's cell " << at + 1 << " is length " << length << " depth " << depth << " with "
       << grid.documents;
  return what.str();
}

void write_passkey_partial(const std::string& path, const std::string& key, const std::vector<PasskeyCell>& cells) {
  std::string text = nlohmann::ordered_json{{"evaluation", key}}.dump() + "\n";
  for (const auto& c : cells)
    text += nlohmann::ordered_json{{"length", c.length},
                                   {"depth", c.depth},
                                   {"documents", c.documents},
                                   {"correct", c.correct},
                                   {"error", c.error}}
                .dump() +
            "\n";
  write_file_atomically(path, text, "passkey cells scored so far");
}

std::vector<PasskeyCell> read_passkey_partial(const std::string& path, const std::string& key, const PasskeyGrid& grid,
                                              bool* other) {
  if (other) *other = false;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path);
  if (!std::filesystem::is_regular_file(path, ec) || !in)
    throw std::runtime_error(path + ": cannot read the passkey cells scored so far (not a readable file)");
  const auto fail = [&](int64_t line, const std::string& what) {
    return std::runtime_error(path + " line " + std::to_string(line) + ": " + what +
                              " (remove the file to score every cell again)");
  };
  std::string line;
  int64_t number = 1;
  if (!std::getline(in, line)) throw fail(number, "empty, not a passkey evaluation's cells");
  const auto head = nlohmann::json::parse(line, nullptr, false);
  if (!head.is_object() || head.size() != 1 || !head.contains("evaluation") || !head["evaluation"].is_string())
    throw fail(number, "not {\"evaluation\": ...}");
  if (head["evaluation"].get<std::string>() != key) {
    if (other) *other = true;
    return {};
  }
  std::vector<PasskeyCell> cells;
  while (std::getline(in, line)) {
    ++number;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const bool shaped = j.is_object() && j.size() == 5 && j.contains("length") && j["length"].is_number_integer() &&
                        j.contains("depth") && j["depth"].is_number() && j.contains("documents") &&
                        j["documents"].is_number_integer() && j.contains("correct") &&
                        j["correct"].is_number_integer() && j.contains("error") && j["error"].is_string();
    if (!shaped)
      throw fail(number, "not a passkey cell {\"length\", \"depth\", \"documents\", \"correct\", \"error\"}");
    PasskeyCell c;
    c.length = j["length"].get<int64_t>();
    c.depth = j["depth"].get<double>();
    c.documents = j["documents"].get<int64_t>();
    c.correct = j["correct"].get<int64_t>();
    c.error = j["error"].get<std::string>();
    if (c.documents < 0 || c.correct < 0 || c.correct > c.documents)
      throw fail(number, std::to_string(c.correct) + " correct of " + std::to_string(c.documents) + " documents");
    if (!c.error.empty() && c.documents != 0)
      throw fail(number, "a cell with an error and " + std::to_string(c.documents) + " documents");
    const auto mismatch = passkey_cell_mismatch(grid, cells.size(), c);
    if (!mismatch.empty()) throw fail(number, mismatch);
    cells.push_back(std::move(c));
  }
  if (in.bad()) throw std::runtime_error(path + ": cannot read the passkey cells scored so far");
  return cells;
}

std::string passkey_evaluation_key(const PasskeyEvaluation& e) {
  return nlohmann::ordered_json{{"program", "ropelab " + e.version},
                                {"lengths", e.grid.lengths},
                                {"depths", e.grid.depths},
                                {"documents", e.grid.documents},
                                {"digits", e.grid.digits},
                                {"passkey_seed", e.grid.seed},
                                {"precision", to_string(e.precision)},
                                {"device", e.device},
                                {"set", e.overrides},
                                {"config_fnv1a", e.config_fingerprint},
                                {"checkpoint_fnv1a", e.checkpoint_fingerprint}}
      .dump();
}

std::vector<std::string> passkey_eval_args(const PasskeyGrid& grid) {
  std::ostringstream lengths, depths;
  for (size_t i = 0; i < grid.lengths.size(); ++i) lengths << (i ? "," : "") << grid.lengths[i];
  for (size_t i = 0; i < grid.depths.size(); ++i) depths << (i ? "," : "") << grid.depths[i];
  return {"--lengths",      lengths.str(),
          "--depths",       depths.str(),
          "--documents",    std::to_string(grid.documents),
          "--passkey-seed", std::to_string(grid.seed)};
}

}  // namespace ropelab
