#pragma once
/// Positions a stack trains on in place of 0, ..., T - 1, so that training sees the
/// positions (and distances) of sequences longer than the training context. Evaluation and
/// decoding count 0, ..., T - 1, unless randomized positions are drawn at evaluation too
/// (drawn_at_eval, the reference code's choice).
///
///   contiguous  0, ..., T - 1
///   randomized  T positions drawn without replacement from [0, range) and sorted, one draw
///               shared by the batch (Ruoss et al. 2023; their reference code draws one set
///               of indexes for the call)
///   pose        positional skip-wise training (Zhu et al. 2024) with two chunks, as the
///               authors' reference code: the first chunk is tokens 0 .. f - 1 at positions
///               0 .. f - 1, f uniform in [1, (T + 1) / 2]; the rest keep their order at
///               positions shifted by a skip u uniform in [0, range - T]. One draw per
///               sequence. The text stays contiguous (the reference code also takes the
///               second chunk's text from further into a longer document).

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "ropelab/position/positions.h"

namespace ropelab {

enum class TrainPositionsType { contiguous, randomized, pose };

struct TrainPositionsOptions {
  /// Whether positions are drawn (not contiguous).
  bool drawn() const { return type_ != TrainPositionsType::contiguous; }
  /// Whether evaluation draws them too: randomized with drawn_at_eval (only randomized
  /// reads the key).
  bool draws_at_eval() const { return type_ == TrainPositionsType::randomized && drawn_at_eval_; }
  TORCH_ARG(TrainPositionsType, type) = TrainPositionsType::contiguous;
  /// randomized, pose: positions are drawn within [0, range): the longest length the model
  /// should know (PoSE's target context). A length: unset (0) in a Config it is 64 C, C the
  /// training context (position/context_defaults.h).
  TORCH_ARG(int64_t, range) = 32768;
  /// randomized: evaluation without a cache draws its positions too, one sorted sample from
  /// [0, range) per call, as Ruoss et al. 2023's reference code does at test time; false:
  /// it counts 0, ..., T - 1. Cached decoding counts 0, ..., T - 1 either way (a draw for
  /// T tokens cannot grow one token at a time).
  TORCH_ARG(bool, drawn_at_eval) = false;
};

std::string to_string(TrainPositionsType type);
TrainPositionsType parse_train_positions_type(const std::string& name);

/// PoSE's positions of `length` tokens with a first chunk of `first` tokens and a skip of
/// `skip` positions: 0, ..., first - 1, first + skip, ..., length - 1 + skip (int64).
torch::Tensor pose_positions(int64_t length, int64_t first, int64_t skip);

/// Training positions of `rows` sequences of `length` tokens drawn as `options` say, from
/// torch's default generator (train.seed makes them reproducible), on `device`: shared by
/// the batch (T) for randomized, one row per sequence (rows, T) for pose. Fails if `length`
/// exceeds the range.
Positions draw_training_positions(const TrainPositionsOptions& options, int64_t rows, int64_t length,
                                  const torch::Device& device);

}  // namespace ropelab
