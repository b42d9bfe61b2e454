// The task registry: each row makes its task, says whether its model reads a source side,
// and offers the evaluation protocols eval/ runs on it; a protocol a task does not offer
// is refused by name.
#include "ropelab/task/task_registry.h"

#include <set>

#include "../test_util.h"
#include "ropelab/config/config.h"
#include "ropelab/eval/protocols.h"

using namespace ropelab;
using ropelab::testing::error_of;

class TaskRegistry : public ropelab::testing::TempDir {
 protected:
  /// A tiny config of `row`'s task over a test split of three lines, and its byte tokenizer.
  Config config_of(const TaskTraits& row) {
    const bool pairs = row.encoder_decoder;
    const auto test = write("test.txt", pairs ? "a b\tb a\nc d\td c\ne\te\n" : "a b c d\ne f g\nh i\n");
    return load_config({{},
                        {std::string("task=") + row.name, std::string("data.format=") + (pairs ? "tsv" : "text"),
                         "tokenizer.type=byte", "data.context=8", "data.max_len=16", "data.test=" + test,
                         "model.d_model=16", "model.heads=2", "model.d_ff=16", "model.encoder_layers=1",
                         "model.decoder_layers=1", "decode.max_len_b=4", "train.max_tokens=64"}});
  }
};

TEST_F(TaskRegistry, EachRowMakesItsTaskAndItsModelReadsASourceOnlyWhenItSaysSo) {
  std::set<std::string> names;
  for (const auto& row : task_registry()) {
    SCOPED_TRACE(row.name);
    EXPECT_TRUE(names.insert(row.name).second) << "a name twice";
    EXPECT_EQ(&task_traits(row.type), &row);
    const auto config = config_of(row);
    EXPECT_EQ(config.task, row.type);
    EXPECT_EQ(to_string(row.type), row.name);  // the registry's name is config.task's value
    const auto task = make_task(config);
    EXPECT_EQ(task->config().task, row.type);
    const auto model = task->build_model(300);
    bool encoder = false;
    for (const auto& p : (*model)->named_parameters()) encoder = encoder || p.key().rfind("encoder.", 0) == 0;
    EXPECT_EQ(encoder, row.encoder_decoder);
    EXPECT_FALSE(row.protocols.empty());
  }
}

// eval/ runs each protocol of EvalProtocol that a task offers, with the report's fields
// of that protocol, and refuses the others naming the task and the protocol.
TEST_F(TaskRegistry, EvaluationRunsTheProtocolsATaskOffersAndRefusesTheRest) {
  const std::vector<EvalProtocol> protocols{TranslationQuality{}, WindowPerplexity{}, ContextGain{0, 4}};
  for (const auto& row : task_registry()) {
    SCOPED_TRACE(row.name);
    const auto config = config_of(row);
    const auto task = make_task(config);
    const auto tokenizer = train_tokenizer(config.tokenizer, std::vector<std::string>{}, "");
    const auto model = task->build_model(tokenizer->vocab_size());
    (*model)->eval();
    for (const auto& protocol : protocols) {
      const auto kind = protocol_kind(protocol);
      SCOPED_TRACE(protocol_name(kind));
      auto run = [&] {
        return evaluate(*task, *model, *tokenizer, "test", config.data.test(), DecodeRequest{}, protocol, torch::kCPU);
      };
      if (!row.offers(kind)) {
        EXPECT_EQ(error_of(run), std::string("task ") + row.name + " does not offer " + protocol_name(kind));
        continue;
      }
      const auto report = run();
      EXPECT_TRUE(report.fields.contains("perplexity"));
      // translation quality decodes every source line; window perplexity keeps its windows
      EXPECT_EQ(report.fields.contains("bleu"), kind == ProtocolKind::translation_quality);
      EXPECT_EQ(report.hypotheses.size(), kind == ProtocolKind::translation_quality ? 3u : 0u);
      EXPECT_EQ(report.fields.contains("context"), kind != ProtocolKind::translation_quality);
      EXPECT_EQ(report.fields.contains("gain@4-8"), kind == ProtocolKind::context_gain);
      EXPECT_EQ(report.file_tag, kind == ProtocolKind::window_perplexity ? "test.ctx8"
                                 : kind == ProtocolKind::context_gain    ? "test.ctx8.gain4"
                                                                         : "test");
    }
  }
}

// `ropelab eval`'s flags choose window perplexity where the task offers it, context gain
// with --context-gain; a task without them takes no window flags.
TEST_F(TaskRegistry, EvalFlagsSelectWindowPerplexityOnlyWhereATaskOffersIt) {
  const std::string refused =
      "--context, --stride, --per-position and --context-gain measure language models; RUN is a ";
  for (const auto& row : task_registry()) {
    SCOPED_TRACE(row.name);
    const auto task = make_task(config_of(row));
    const bool windows = row.offers(ProtocolKind::window_perplexity);
    const auto plain = eval_protocol(*task, {}, 0, "RUN");
    EXPECT_EQ(protocol_kind(plain), windows ? ProtocolKind::window_perplexity : ProtocolKind::translation_quality);
    for (const auto& flags :
         {WindowPerplexity{16, 0, false}, WindowPerplexity{0, 4, false}, WindowPerplexity{0, 0, true}}) {
      if (windows) {
        const auto chosen = std::get<WindowPerplexity>(eval_protocol(*task, flags, 0, "RUN"));
        EXPECT_EQ(chosen.context, flags.context);
        EXPECT_EQ(chosen.stride, flags.stride);
        EXPECT_EQ(chosen.per_position, flags.per_position);
      } else {
        EXPECT_EQ(error_of([&] { eval_protocol(*task, flags, 0, "RUN"); }), refused + task->model_noun());
      }
    }
    if (row.offers(ProtocolKind::context_gain)) {
      const auto gain = std::get<ContextGain>(eval_protocol(*task, {16, 0, false}, 4, "RUN"));
      EXPECT_EQ(gain.context, 16);
      EXPECT_EQ(gain.window, 4);
      EXPECT_EQ(error_of([&] {
                  eval_protocol(*task, {16, 8, false}, 4, "RUN");
                }),
                "--context-gain compares non-overlapping windows and reports by bucket of positions: drop --stride "
                "and --per-position");
    } else {
      EXPECT_EQ(error_of([&] { eval_protocol(*task, {}, 4, "RUN"); }), refused + task->model_noun());
    }
  }
}
