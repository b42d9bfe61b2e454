#pragma once
/// One search over the DecoderState seam (decode/decoder_state.h): greedy, beam search
/// and sampling serve every task's model, both attention backends and every position
/// encoder. Tasks build the Decoding (task/); searches only pick tokens.

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "ropelab/decode/decoder_state.h"
#include "ropelab/decode/options.h"

namespace ropelab {

struct Hypothesis {
  std::vector<int64_t> tokens;  // output tokens, without start tokens and EOS
  double score = 0.0;           // sum of token log-probabilities (EOS included)
};

/// Takes the tokens of a search's rows as they are chosen: (row, token), EOS excluded.
/// Returning false stops the search, every row, after the current step. A search given a
/// sink keeps no tokens in its hypotheses (their scores stay), so that decoding without
/// end (a windowed language model) runs in bounded memory.
using TokenSink = std::function<bool(int64_t row, int64_t token)>;

/// The likeliest token at each step, one hypothesis per row.
std::vector<Hypothesis> greedy_search(Decoding decoding, const TokenSink& sink = {});

/// Beam search (Vaswani et al. 2017, 6.1), batched over rows and beams, with the length
/// penalty named by options.lenpen_formula. A row is finished once it has `beam`
/// completed hypotheses; at its length limit the live beams are completed as they are.
/// Returns the best hypothesis per row by length-normalised score.
std::vector<Hypothesis> beam_search(Decoding decoding, const DecodeOptions& options);

/// Ancestral sampling, one hypothesis per row, drawn from torch's default generator
/// (seed it for reproducible samples). Scores are the model's log-probabilities of the
/// drawn tokens.
std::vector<Hypothesis> sample_search(Decoding decoding, const SamplingOptions& options, const TokenSink& sink = {});

/// How to search: sampling when `sample`, else greedy for beam 1 and beam search above.
struct SearchOptions {
  DecodeOptions decode;
  bool sample = false;
  SamplingOptions sampling;
};
/// With a sink, greedy search and sampling hand it each token as it is chosen; beam
/// search, whose hypotheses are settled only at the end, hands it the best one's then.
std::vector<Hypothesis> search(Decoding decoding, const SearchOptions& options, const TokenSink& sink = {});

/// Length penalty lp(n) for n output tokens (EOS included): gnmt ((5+n)/6)^alpha or average n^alpha.
double length_penalty(const DecodeOptions& options, int64_t length);

/// The output length limit for an input of `input_len` tokens.
int64_t max_output_length(const DecodeOptions& options, int64_t input_len);

}  // namespace ropelab
