// Rotary position embeddings with transformers' rotate_half convention: for i < D/2,
//   y_i = x_i cos θ_i − x_{i+D/2} sin θ_i,   y_{i+D/2} = x_{i+D/2} cos θ_i + x_i sin θ_i,
// with θ_i = position · inv_freq_i and cos/sin multiplied by the attention scaling (yarn).
// inv_freq follows transformers' rope types default, linear, dynamic, llama3 and yarn.
//
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: T tokens, NH heads of this tensor (H or Hkv), D head dim.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace sft::model {

struct RopeFrequencies {
  std::vector<float> inv_freq;   // (D/2), as transformers stores it (fp32)
  double attention_scaling = 1;  // multiplies cos and sin (yarn)
};

// `seq_len` matters only for dynamic scaling: the length of the sequence (in a packed batch,
// of the document) as transformers sees it in one forward call.
RopeFrequencies rope_frequencies(const ModelConfig& config, int64_t seq_len);

// cos, sin (T, D/2) for the given positions, already scaled.
void rope_tables(float* cos, float* sin, const RopeFrequencies& f, const int64_t* positions,
                 int64_t T);

// In place on x (T, NH, D): forward rotates by +θ, backward (on the gradient) by −θ.
template <typename T>
void rope_forward(T* x, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D);
template <typename T>
void rope_backward(T* dx, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D);

}  // namespace sft::model
