// Autoregressive generation from token ids: prefill the prompt, then one token at a time with
// the KV cache (or, with use_cache = false, re-running the full forward each step, as
// transformers' generate(use_cache=False) does). Stops after max_new_tokens or on an eos id.
#pragma once

#include <cstdint>
#include <vector>

#include "model/sampling.h"
#include "model/transformer.h"

namespace sft::model {

struct GenerateOptions {
  int64_t max_new_tokens = 256;
  SamplingOptions sampling;  // greedy by default
  uint64_t seed = 0;
  bool use_cache = true;
  std::vector<int64_t> eos_token_ids;  // generation stops after emitting one of these
};

// The generated ids (without the prompt; including the eos id that stopped it, as transformers).
std::vector<int64_t> generate(Transformer& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& options);

}  // namespace sft::model
