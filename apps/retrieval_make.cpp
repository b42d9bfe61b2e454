// ropelab retrieval make: the documents of a retrieval probe (data/retrieval.h), one per line.
#include <iostream>
#include <memory>

#include "retrieval_flags.h"

namespace ropelab::apps {

void add_retrieval_make(CLI::App& cmd) {
  struct MakeArgs {
    RetrievalOptions task;
    std::string name, corpus = "data/corpora/sotu/test.txt";
    int64_t count = 100, min_length = 0;
    uint64_t seed = 1;
    bool answers = false;
  };
  auto m = std::make_shared<MakeArgs>();
  auto* make = cmd.add_subcommand("make", "write documents to standard output, one per line, answers included");
  add_task_flags(*make, m->task, m->name, m->corpus);
  make->add_option("--count", m->count, "documents")->check(positive())->capture_default_str();
  make->add_option("--length", m->task.length, "characters of each document (the longest, with --min-length)")
      ->check(positive())
      ->capture_default_str();
  make->add_option("--min-length", m->min_length, "lengths drawn uniformly from [this, --length] (0: all --length)")
      ->check(nonnegative());
  make->add_option("--seed", m->seed, "random seed: the same seed writes the same documents")->capture_default_str();
  make->add_flag("--answers", m->answers, "after each document, a TAB and each answer, TAB-separated");
  make->callback([m] {
    m->task.task = parse_retrieval_task(m->name);
    const int64_t low = m->min_length > 0 ? m->min_length : m->task.length;
    if (low > m->task.length) throw std::runtime_error("--min-length is above --length");
    check_lengths(m->task, {low}, "--length");
    std::unique_ptr<Haystack> hay;
    if (m->task.task != RetrievalTask::mqar) hay = std::make_unique<Haystack>(m->corpus);
    SplitMix64 shapes(m->seed ^ 0x5A5A5A5A5A5A5A5AULL);  // lengths and depths apart from the texts
    for (int64_t i = 0; i < m->count; ++i) {
      auto o = m->task;
      o.length = low + static_cast<int64_t>(shapes.below(static_cast<uint32_t>(m->task.length - low + 1)));
      o.depth = static_cast<double>(shapes.below(101)) / 100.0;
      const auto d = make_retrieval_document(o, hay.get(), m->seed, static_cast<uint64_t>(i));
      std::cout << d.text;
      for (size_t a = 0; m->answers && a < d.answers.size(); ++a) std::cout << '\t' << d.answer(a);
      std::cout << '\n';
    }
    std::cout << std::flush;
  });
}

}  // namespace ropelab::apps
