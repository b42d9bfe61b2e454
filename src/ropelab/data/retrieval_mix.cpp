#include "ropelab/data/retrieval_mix.h"

#include <cstdio>
#include <sstream>

namespace ropelab {

namespace {

std::vector<RetrievalTask> task_list(const std::string& tasks) {
  std::vector<RetrievalTask> out;
  std::stringstream in(tasks);
  for (std::string name; std::getline(in, name, ',');) out.push_back(parse_retrieval_task(name));
  return out;
}

constexpr uint64_t kTrainingStream = 0x7261696E696E67ULL;  // apart from the streams evaluation draws from

}  // namespace

MixProblem retrieval_mix_problem(const RetrievalMixOptions& o) {
  const auto number = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  if (!(o.ratio() >= 0 && o.ratio() < 1)) return {"ratio", number(o.ratio()), "must be in [0, 1)"};
  if (o.tasks().empty()) {
    if (o.ratio() > 0) return {"tasks", "''", "must name the tasks to mix in at data.retrieval.ratio > 0"};
    return {};
  }
  std::vector<RetrievalTask> tasks;
  try {
    tasks = task_list(o.tasks());
  } catch (const std::invalid_argument& e) {
    return {"tasks", o.tasks(), "names an " + std::string(e.what()).replace(0, 22, "unknown task")};
  }
  if (o.ratio() == 0) return {"ratio", "0", "must be positive with data.retrieval.tasks set"};
  if (o.min_length() > o.max_length())
    return {"min_length", std::to_string(o.min_length()), "is above data.retrieval.max_length"};
  for (auto t : tasks) {
    RetrievalOptions sized;
    sized.task = t;
    if (o.min_length() < retrieval_minimum_length(sized))
      return {"min_length", std::to_string(o.min_length()),
              "is below the " + std::to_string(retrieval_minimum_length(sized)) + " characters " + to_string(t) +
                  "'s needles and question take"};
  }
  return {};
}

RetrievalMix::RetrievalMix(const RetrievalMixOptions& options, const std::string& corpus, uint64_t seed)
    : options_(options),
      tasks_(task_list(options.tasks())),
      seed_(seed ^ kTrainingStream),
      shapes_(seed ^ kTrainingStream ^ 0xA5A5A5A5ULL) {
  for (auto t : tasks_)
    if (t != RetrievalTask::mqar && !haystack_)
      haystack_ = std::make_unique<Haystack>(options.corpus().empty() ? corpus : options.corpus());
}

RetrievalMix::~RetrievalMix() = default;

void RetrievalMix::after_line(int64_t tokens, const std::function<int64_t(const std::string&)>& emit) {
  text_tokens_ += tokens;
  const double share = options_.ratio() / (1 - options_.ratio());  // mixed tokens per text token
  while (static_cast<double>(mixed_tokens_) < share * static_cast<double>(text_tokens_)) {
    RetrievalOptions o;
    o.task = tasks_[static_cast<size_t>(documents_) % tasks_.size()];
    const auto span = static_cast<uint32_t>(options_.max_length() - options_.min_length() + 1);
    o.length = options_.min_length() + static_cast<int64_t>(shapes_.below(span));
    o.depth = static_cast<double>(shapes_.below(101)) / 100.0;
    const auto d = make_retrieval_document(o, haystack_.get(), seed_, static_cast<uint64_t>(documents_));
    mixed_tokens_ += emit(d.text);
    ++documents_;
  }
}

std::string RetrievalMix::summary() const {
  char text[96];
  const double total = static_cast<double>(text_tokens_ + mixed_tokens_);
  std::snprintf(text, sizeof text, "%lld retrieval documents, %.1f%% of the tokens", static_cast<long long>(documents_),
                total > 0 ? 100.0 * static_cast<double>(mixed_tokens_) / total : 0.0);
  return text;
}

}  // namespace ropelab
