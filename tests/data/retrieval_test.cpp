// The retrieval probes' documents: each answer is recovered from the document's own text by
// a plain parser written here (regular expressions over the task's sentences), keys appear
// only where the task asks for them again, lengths and depths are as asked, and documents
// depend on nothing but their seed and index.
#include "ropelab/data/retrieval.h"

#include <map>
#include <regex>

#include "../test_util.h"

using namespace ropelab;
using ropelab::testing::error_of;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// What the task's sentences in `prompt` (the text before the answer) say the answer is.
std::string parsed_answer(RetrievalTask task, const std::string& prompt) {
  std::smatch m;
  if (task == RetrievalTask::vartrack) {
    EXPECT_TRUE(
        std::regex_search(prompt, m, std::regex("Which variables hold (\\d+)\\? The variables that hold \\1 are$")));
    std::map<std::string, std::string> assigned;  // variable -> its value or variable
    const std::regex statement("VAR ([A-Z]+) = (VAR )?([A-Z0-9]+)\\.");
    for (std::sregex_iterator it(prompt.begin(), prompt.end(), statement), end; it != end; ++it) {
      EXPECT_EQ(assigned.count((*it)[1]), 0u) << "a variable assigned twice";
      assigned[(*it)[1]] = (*it)[3];
    }
    // in order of appearance, every variable whose chain ends in the value
    std::string answer;
    for (std::sregex_iterator it(prompt.begin(), prompt.end(), statement), end; it != end; ++it) {
      std::string v = (*it)[1];
      while (assigned.count(v)) v = assigned[v];
      if (v == m[1].str()) answer += (answer.empty() ? " " : ", ") + (*it)[1].str();
    }
    return answer + ".";
  }
  const bool all = task == RetrievalTask::multivalue;
  EXPECT_TRUE(std::regex_search(
      prompt, m,
      std::regex(all ? "What are all the special magic numbers for ([a-z]+)\\? The special magic numbers for \\1 are$"
                     : "What is the special magic number for ([a-z]+)\\? The special magic number for \\1 is$")));
  const std::regex needle("One of the special magic numbers for " + m[1].str() + " is: (\\d+)\\.");
  std::string answer;
  for (std::sregex_iterator it(prompt.begin(), prompt.end(), needle), end; it != end; ++it)
    answer += (answer.empty() ? " " : ", ") + (*it)[1].str();
  return answer + ".";
}

}  // namespace

TEST(Retrieval, EveryAnswerIsRecoveredFromTheTextByAPlainParser) {
  const auto dir = std::filesystem::temp_directory_path() / ("ropelab_retrieval_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hay.txt") << "The Congress met in the winter of that year and spoke of many things.\n\n"
                                    "Our commerce grew, and the treaties with foreign nations held firm. "
                                    "The debt was 4 million dollars in 1790, and the army stood at 1000 men.\n";
  const Haystack hay((dir / "hay.txt").string());
  for (const auto& name : retrieval_task_names()) {
    const auto task = parse_retrieval_task(name);
    for (const int64_t length : {400, 1024, 4096}) {
      for (uint64_t index = 0; index < 6; ++index) {
        SCOPED_TRACE(name + " length " + std::to_string(length) + " document " + std::to_string(index));
        RetrievalOptions o;
        o.task = task, o.length = length, o.depth = static_cast<double>(index) / 5;
        const auto d = make_retrieval_document(o, &hay, 7, index);
        ASSERT_FALSE(d.answers.empty());
        EXPECT_EQ(std::isnan(d.depth), !retrieval_has_depth(task));
        if (task == RetrievalTask::mqar) {
          EXPECT_LE(d.text.size(), static_cast<size_t>(length));
          EXPECT_GT(d.text.size() + 7, static_cast<size_t>(length));
          // pairs up to the first ". ", then each query "key=" followed by its answer
          const auto pairs_end = d.text.find(". ");
          std::map<std::string, std::string> pairs;
          const std::regex pair("([a-z]+)=(\\d\\d)");
          const auto head = d.text.substr(0, pairs_end);
          for (std::sregex_iterator it(head.begin(), head.end(), pair), end; it != end; ++it) {
            EXPECT_EQ(pairs.count((*it)[1]), 0u) << "a key given twice";
            pairs[(*it)[1]] = (*it)[2];
          }
          for (size_t a = 0; a < d.answers.size(); ++a) {
            const auto& span = d.answers[a];
            const auto before = d.text.substr(0, span.begin);
            const auto key = before.substr(before.rfind(' ') + 1, 3);
            EXPECT_EQ(d.answer(a), pairs.at(key));
            EXPECT_EQ(count(d.text, key + "="), 2u) << key;  // given once, asked once
          }
          continue;
        }
        EXPECT_EQ(d.text.size(), static_cast<size_t>(length));
        ASSERT_EQ(d.answers.size(), 1u);
        EXPECT_EQ(d.answers[0].end, d.text.size());
        const auto prompt = d.text.substr(0, d.answers[0].begin);
        EXPECT_EQ(d.answer(0), parsed_answer(task, prompt));
        if (task == RetrievalTask::multikey) {  // distractors once, the asked key in its needle and the question
          const std::regex keys("numbers? for ([a-z]+)");
          std::map<std::string, size_t> seen;
          for (std::sregex_iterator it(prompt.begin(), prompt.end(), keys), end; it != end; ++it) ++seen[(*it)[1]];
          EXPECT_EQ(seen.size(), 3u);  // the default: 3 keys
          for (const auto& [key, n] : seen) EXPECT_EQ(count(prompt, key), n == 3 ? 3u : 1u) << key;
        }
        if (retrieval_has_depth(task)) {  // the asked needle where it was asked for, in the haystack
          const std::string value = d.answer(0).substr(1, 5);
          const auto end = prompt.find(value + ".") + 6, start = prompt.rfind("One of", end);
          const auto before = count(prompt.substr(0, start), "One of the special");  // needles before it
          const double offset = static_cast<double>(start - before * (end - start + 1));
          const double room = static_cast<double>(length - retrieval_minimum_length(o));
          EXPECT_NEAR(offset, o.depth * room, 30.0);  // within a word
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Retrieval, DocumentsDependOnlyOnTheirSeedAndIndex) {
  RetrievalOptions o;
  o.task = RetrievalTask::mqar, o.length = 512;
  const auto a = make_retrieval_document(o, nullptr, 3, 5);
  EXPECT_EQ(make_retrieval_document(o, nullptr, 3, 5).text, a.text);
  EXPECT_NE(make_retrieval_document(o, nullptr, 3, 6).text, a.text);
  EXPECT_NE(make_retrieval_document(o, nullptr, 4, 5).text, a.text);
}

TEST(Retrieval, RefusesWhatCannotBeMadeInOneLine) {
  RetrievalOptions o;
  o.length = 100;
  EXPECT_EQ(error_of([&] { make_retrieval_document(o, nullptr, 1, 0); }),
            "retrieval multikey: length 100 is below the " + std::to_string(retrieval_minimum_length(o)) +
                " characters its needles and question take");
  o.length = 1024;
  EXPECT_EQ(error_of([&] { make_retrieval_document(o, nullptr, 1, 0); }), "retrieval multikey needs a haystack corpus");
  o.keys = 0;
  EXPECT_EQ(error_of([&] { make_retrieval_document(o, nullptr, 1, 0); }), "retrieval --keys must be at least 1, got 0");
  EXPECT_EQ(error_of([] { parse_retrieval_task("niah"); }),
            "unknown retrieval task 'niah' (expected multikey | multivalue | mqar | vartrack)");
  EXPECT_EQ(error_of([] { Haystack("/nonexistent/hay.txt"); }),
            "/nonexistent/hay.txt: cannot read the haystack corpus");
  // the default sizes fit 1024 characters, and the documents of a 512-byte training context
  for (const auto& name : retrieval_task_names()) {
    RetrievalOptions d;
    d.task = parse_retrieval_task(name);
    EXPECT_LE(retrieval_minimum_length(d), 400) << name;
  }
}
