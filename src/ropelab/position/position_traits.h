#pragma once
/// The position registry: one row per encoder (PositionType) saying what it is, read by
/// config validation, the model's users, experiments and tests instead of lists by hand.
/// tests/position/position_traits_test.cpp checks each row against the encoder it names.

#include <string>
#include <vector>

namespace ropelab {

enum class PositionType;
struct PositionOptions;

/// Through which hook of position_encoder.h an encoder gives position information.
enum class PositionKind {
  none,      // none: no position information (NoPE)
  additive,  // embed(): added to the token embeddings
  rotary,    // rotate(): rotates queries and keys
  bias,      // logit_bias(): added to the attention logits
};

struct PositionTraits {
  PositionType type;
  const char* name;  // the YAML spelling
  PositionKind kind;
  /// Attention depends on key_pos - query_pos alone (a rotation, or a bias that
  /// relative_bias() gives per distance).
  bool relative;
  /// A bias that depends on the query position beyond the distance (FIRE's psi(max(L, i))).
  bool query_dependent;
  bool trainable;        // has parameters
  bool causal_only;      // defined for causal self-attention only: not in a translator's encoder
  bool cross_attention;  // may also act in cross-attention (rotate_cross_attention)
  bool scalable;         // RoPE scaling (scaling.*) applies
  bool bounded;          // knows positions below max_len and none beyond (a learned table)
  bool multi_axis;       // takes several coordinates per token (a grid's rows and columns)
  /// Its hyperparameters measured in tokens of length, which a fair comparison sets from
  /// the training context (the PositionOptions keys).
  std::vector<std::string> length_keys;
  const char* reference;  // the paper, by author and year
};

/// Every encoder, in PositionType's order.
const std::vector<PositionTraits>& position_registry();
const PositionTraits& position_traits(PositionType type);
/// The encoders whose row satisfies `keep`, in registry order.
std::vector<PositionType> position_types(bool (*keep)(const PositionTraits&));
/// How a stack with `options` gets position information: its encoder's kind, or `bias` for
/// a forget gate without other position information (FoX: the gate's decay is a logit bias).
PositionKind position_kind(const PositionOptions& options);
/// A short name of a stack's position information for legends and tables: the encoder's
/// name, then what changes it ("rotary unrotated 0.25", "rotary nope/3", "rotary+yarn");
/// a forget gate or CoPE without other position information reads "fox" or "cope".
std::string position_label(const PositionOptions& options);
/// "a, b and c": the names of `types`, for messages.
std::string position_names(const std::vector<PositionType>& types);

}  // namespace ropelab
