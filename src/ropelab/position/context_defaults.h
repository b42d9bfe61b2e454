#pragma once
/// The position encoders' settings measured in tokens (PositionTraits::length_keys), set
/// relative to the training context C so that no encoder is handicapped by a setting made
/// for another length. A Config starts them unset (0) and fills each one left unset:
///
///   key             encoder   rule here              the paper's own setting
///   max_len         learned   C                      a table of the training length; rows
///                                                    past C are never trained, so longer
///                                                    contexts are not evaluated
///   max_distance    t5_bias   max(C / 4, buckets)    128 for 512-token inputs (Raffel et
///                                                    al. 2020): the last logarithmic bucket
///                                                    ends at a quarter of the context
///   scale_base      xpos      C / 2                  512 for 1024-token training (Sun et
///                                                    al. 2022)
///   fire_threshold  fire      C                      L learned (Li et al. 2024); starting at
///                                                    C, psi(max(L, i)) normalises by the
///                                                    training context in training and
///                                                    interpolates past it
///   cope_positions  (cope)    max(C / 16, 2)         64 at a 1024-token context (Golovneva
///                                                    et al. 2024's language models); their
///                                                    code's default, the block size + 1,
///                                                    leaves the last columns untrained where
///                                                    the gates count less than one a token,
///                                                    and every count past C reads the last
///                                                    (docs/language_models.md, "Settings measured in tokens")
///   train_positions (randomized, 64 C                   the longest evaluation, 64x (Ruoss et
///   .range           pose)                              al. 2023 draw from about 50x their
///                                                       training length; Zhu et al. 2024
///                                                       extend 2k to 128k); a learned table's
///                                                       max_len then follows it
///
/// A translation run has no one training context (each pair has its own lengths, and a
/// translation may run longer than its source): with C = 0 the settings keep the absolute
/// values of PositionOptions (1024, 128, 512, 512, 64, 32768). RoPE scaling's original_max is the
/// training context itself (config/config.cpp sets it for language models).

#include <cstdint>

#include "ropelab/position/position_encoder.h"

namespace ropelab {

/// Marks the length-dependent settings of `options` unset (0).
void unset_length_settings(PositionOptions& options);

/// Fills each unset length-dependent setting of `options` from the training context
/// `context` (0: none, the absolute values); settings already given are kept.
void resolve_length_settings(PositionOptions& options, int64_t context);

}  // namespace ropelab
