// Rotary position embedding tables: θ_i = position · inv_freq_i, with cos/sin multiplied by
// the attention scaling (yarn). inv_freq follows transformers' rope types default, linear,
// dynamic, llama3, yarn and longrope. The rotation itself is the ops rope kernel.
// Dimensions: T tokens, D head dim.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace sft::model {

struct RopeFrequencies {
  std::vector<float> inv_freq;   // (R/2), R the rotary dims (D, or fewer: partial rotary)
  double attention_scaling = 1;  // multiplies cos and sin (yarn)
};

// `seq_len` matters only for dynamic scaling and longrope: the length of the sequence as
// transformers sees it in one forward call (dynamic: in a packed batch, the document's;
// longrope: max(position_ids) + 1 of the whole call, Transformer::rope_for).
RopeFrequencies rope_frequencies(const ModelConfig& config, int64_t seq_len);

// cos, sin (T, R/2) for the given positions, already scaled.
void rope_tables(float* cos, float* sin, const RopeFrequencies& f, const int64_t* positions,
                 int64_t T);

}  // namespace sft::model
