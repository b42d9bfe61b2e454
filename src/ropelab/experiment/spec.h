#pragma once
/// Ablation experiment files (`ropelab ablate EXPERIMENT.yaml`):
///
///   base: experiments/lm_sotu_char.yaml      # one config file or a list; paths from the cwd
///   set: [train.steps=2000]                  # overrides for every variant (optional)
///   grid:                                    # keys to lists of values, crossed
///     model.position.type: [learned, sinusoidal, t5_bias, rotary, none]
///     # a value may carry a short label for the figures: {value: "{type: rotary, unrotated: 0.25}", label: p-rope}
///   seeds: [1, 2, 3]
///   eval_contexts: [128, 256, 512, 1024]     # language models: test perplexity at each (optional)
///   eval_strides: [64]                       # and sliding windows with each stride (optional)
///   eval_scaling: [linear, ntk, dynamic_ntk, yarn]  # rotary runs again, scaled, past data.context (optional)
///   eval_scaling_factors: [4, 16]            # and the static ones at these fixed factors, at every
///                                            #   context (optional)
///   eval_window_sinks: [0, 4]                # and past data.context with a sliding window of data.context
///                                            #   keys and each number of sinks (optional)
///   eval_context_gain: [512]                 # and the context gain of keys beyond each window (optional)
///   eval_tokens: 16384                       # language models: test tokens of every evaluation (optional)
///   retrieval:                               # language models: retrieval probes of every run (optional)
///     tasks: [multikey, mqar]                #   data/retrieval.h's tasks
///     lengths: [512, 1024, 2048]             #   characters of each document
///     depths: [0, 0.5, 1]                    #   tasks with a depth (optional; default 0, 0.25, ..., 1)
///     documents: 20                          #   per (length, depth) (optional; default 20)
///     corpus: data/corpora/sotu/test.txt     #   the haystack (optional; this default)
///   passkey:                                 # language models: passkey retrieval of every run (optional)
///     lengths: [120, 248, 504]               #   prompt characters
///     depths: [0, 0.5, 1]                    #   (optional; default 0, 0.25, 0.5, 0.75, 1)
///     documents: 10                          #   per (length, depth) (optional; default 20)
///     documents_per_seed: true               #   a document set per seed (optional; default one set)
///   baseline: model.position.type=rotary     # what every variant is tested against (optional; the first)
///   pairs: [[model.position.type=alibi, model.position.type=none]]  # more pairs to test (optional)
///   finetune:                                # fine-tunes of one variant's finished runs (optional)
///     from: model.position.type=rotary       #   the grid variant they start from, seed by seed
///     set: [data.context=512, train.steps=300]
///     grid:
///       model.position.scaling.type: [none, linear, yarn]
///
/// Every variant's config is loaded and validated before anything runs; errors name the
/// experiment file and the variant.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ropelab/config/config.h"
#include "ropelab/eval/passkey.h"
#include "ropelab/eval/retrieval_eval.h"

namespace ropelab {

/// The test evaluations an experiment asks of each run (`eval_contexts`, `eval_strides`,
/// `eval_scaling`, `eval_window_sinks`, `eval_tokens`, `passkey`).
struct TestEvaluations {
  std::vector<int64_t> contexts;  // language models: perplexity at each; empty: data.context
  std::vector<int64_t> strides;   // language models: also sliding windows with each stride below the context
  /// Rotary language models: also, at each context beyond the training one, evaluated
  /// (not retrained) with each RoPE scaling (linear, ntk, dynamic_ntk, yarn) at factor
  /// context / data.context.
  std::vector<std::string> scalings;
  /// Rotary language models: also, at every context, evaluated with each static scaling of
  /// `scalings` (linear, ntk, yarn) at each of these fixed factors, the one a user deploys
  /// whatever the length (columns test_ppl@C+yarn4x, ...).
  std::vector<double> scaling_factors;
  /// Language models with softmax attention: also, at each context beyond the training
  /// one, evaluated with sliding-window attention over data.context keys (the window the
  /// model was trained with; a sliding form of Sun et al. 2022's blockwise causal
  /// attention) and each number of attention sinks (Xiao et al. 2024; 0: the window alone).
  std::vector<int64_t> window_sinks;
  /// Language models with softmax attention: the context gain (`eval --context-gain W`) of
  /// the keys farther than each of these windows, at each context above it.
  std::vector<int64_t> gain_windows;
  /// Language models: the first `tokens` tokens of the test split in every evaluation
  /// (`eval --set data.eval_tokens=N`); 0: the run's data.eval_tokens.
  int64_t tokens = 0;
  /// Language models: passkey retrieval (`ropelab passkey eval`) over this grid.
  std::optional<PasskeyGrid> passkey;
  /// Passkey documents from the stream passkey.seed + the run's train.seed, a set per seed
  /// (passkey.documents_per_seed: true), instead of one set shared by every seed.
  bool passkey_per_seed = false;
  /// Language models: the retrieval probes (`ropelab retrieval eval`) of these tasks over
  /// `retrieval_grid` (its task's sizes; documents drawn from seed retrieval_grid.seed +
  /// the run's train.seed, a set per seed).
  std::vector<std::string> retrieval_tasks;
  RetrievalGrid retrieval_grid;
};

/// Fine-tunes (`train --init-from`) of a grid variant's runs, each seed from the run of
/// that seed: base, set, the source variant's overrides, then these.
struct FinetuneSpec {
  std::string from;                                                    // a grid variant's name
  std::vector<std::string> set;                                        // overrides for every fine-tune
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // crossed, as the main grid
};

struct ExperimentSpec {
  std::string path;                                                    // the experiment file
  std::vector<std::string> base;                                       // config files
  std::vector<std::string> set;                                        // overrides for every variant
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // in file order
  std::map<std::string, std::string> labels;  // "key=value" of the grids -> the value's label, where given
  std::vector<int64_t> seeds = {1};
  TestEvaluations evaluations;         // eval_contexts, eval_strides, eval_scaling, eval_tokens, passkey
  std::vector<FinetuneSpec> finetune;  // at most one
  /// The variant every other is tested against (significance.csv); "": the first.
  std::string baseline;
  /// Further pairs (variant, baseline) to test, as a reading compares them.
  std::vector<std::pair<std::string, std::string>> pairs;
  /// One line per variant whose config holds keys it does not read (a grid's or a
  /// fine-tune's setting of another encoder): its name and the keys; shown, not refused.
  std::vector<std::string> warnings;
};

/// One point of the grid: its overrides ("key=value") and a name for directories and tables.
struct Variant {
  std::vector<std::string> overrides;
  std::string name;   // "key=value,key=value" with the common "model." prefix kept
  std::string label;  // its values' labels, space-separated; "" when none has one
};

/// Reads and checks an experiment file; throws ConfigError naming the file and key.
ExperimentSpec load_experiment(const std::string& path);

/// The cross product of the grid, in file order (the last key varies fastest).
std::vector<Variant> expand_grid(const ExperimentSpec& spec);

/// The fine-tune variants: the source variant's overrides, finetune.set, then each point of
/// finetune.grid; named "finetune:" + the point ("finetune" without a grid). Empty without
/// a finetune section.
std::vector<Variant> finetune_variants(const ExperimentSpec& spec);

/// The experiment restricted to some of its seeds, in the order given (`ablate --seeds`:
/// one seed of every variant first, the others later into the same directory). Throws
/// ConfigError naming the experiment file when a seed is not among its seeds or is repeated.
ExperimentSpec with_seeds(const ExperimentSpec& spec, const std::vector<int64_t>& seeds);

/// The config of one variant and seed (base, then set, then the variant, then the seed).
/// Keys it does not read (config/unread_keys.h) are listed in `unread`, or refused when that
/// is null.
Config variant_config(const ExperimentSpec& spec, const Variant& variant, int64_t seed,
                      std::vector<UnreadKey>* unread = nullptr);

}  // namespace ropelab
