#pragma once
// What `ropelab retrieval make` and `retrieval eval` share: the task's flags and the check of
// lengths against what its needles take.
#include <string>
#include <vector>

#include "commands.h"
#include "ropelab/data/retrieval.h"

namespace ropelab::apps {

/// --task and the task's sizes, shared by make and eval.
inline void add_task_flags(CLI::App& cmd, RetrievalOptions& o, std::string& task, std::string& corpus) {
  cmd.add_option("--task", task, "multikey | multivalue | mqar | vartrack")
      ->required()
      ->check(CLI::IsMember(retrieval_task_names()));
  cmd.add_option("--corpus", corpus, "the haystack's text (multikey, multivalue, vartrack)")->capture_default_str();
  cmd.add_option("--keys", o.keys, "multikey: needles (one asked); vartrack: chains (one asked)")
      ->check(positive())
      ->capture_default_str();
  cmd.add_option("--values", o.values, "multivalue: values of the asked key")->check(positive())->capture_default_str();
  cmd.add_option("--queries", o.queries, "mqar: keys asked again")->check(positive())->capture_default_str();
  cmd.add_option("--hops", o.hops, "vartrack: assignments after each chain's first")
      ->check(nonnegative())
      ->capture_default_str();
}

/// Refuses lengths the task's needles cannot fit, naming the flag.
inline void check_lengths(const RetrievalOptions& o, const std::vector<int64_t>& lengths, const char* flag) {
  auto sized = o;
  for (auto l : lengths)
    if (l < retrieval_minimum_length(sized))
      throw std::runtime_error(std::string(flag) + ": " + std::to_string(l) + " is below the " +
                               std::to_string(retrieval_minimum_length(sized)) + " characters " + to_string(o.task) +
                               "'s needles and question take");
}

void add_retrieval_make(CLI::App& retrieval);

}  // namespace ropelab::apps
