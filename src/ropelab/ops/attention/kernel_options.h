#pragma once
/// How an attention kernel runs, beside its tensors: which keys each query sees and how the
/// work is blocked. Every kernel (fused_attention.h, streaming_attention.h,
/// chunked_attention.h) takes one KernelOptions and reads the fields that concern it.

#include <cstdint>

#include "ropelab/ops/attention/key_visibility.h"

namespace ropelab {

/// The streaming CPU kernel's tile: queries x keys per score tile.
struct StreamingTiles {
  int64_t queries = 64;
  int64_t keys = 256;
};

/// The chunked form's chunk: key positions per chunk, and query positions per chunk, or 0
/// for as many as keep one chunk within `budget` elements (over batch rows x heads, or
/// FIRE's hidden units when there are more of those).
struct AttentionChunks {
  int64_t queries = 0;
  int64_t keys = 1024;
  int64_t budget = int64_t{1} << 24;  // 64 MiB of fp32 scores
};

struct KernelOptions {
  KernelOptions(KeyVisibility visibility = {}, StreamingTiles tiles = {},  // NOLINT: visibility alone converts
                AttentionChunks chunks = {})
      : visibility(visibility), tiles(tiles), chunks(chunks) {}
  KeyVisibility visibility;  // causal, window, sinks
  StreamingTiles tiles;      // read by the streaming kernel
  AttentionChunks chunks;    // read by the chunked form
};

}  // namespace ropelab
