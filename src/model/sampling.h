// Next-token choice from a row of logits: greedy argmax, or sampling with temperature, top-k
// and top-p applied in transformers' order (temperature, then top-k, then top-p). Randomness
// comes only from the caller's Rng, so a --seed reproduces a generation exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace sft::model {

struct SamplingOptions {
  bool do_sample = false;    // false = greedy
  double temperature = 1.0;  // > 0
  int64_t top_k = 0;         // 0 = off
  double top_p = 1.0;        // 1 = off
};

// The first index of the largest logit (torch.argmax's choice on ties).
int64_t argmax(const float* logits, int64_t V);

// Picks the next token; `logits` (V) is used as scratch.
int64_t sample_next(std::vector<float>& logits, const SamplingOptions& options, Rng& rng);

}  // namespace sft::model
