// Generation loop. See generate.h.
#include "model/generate.h"

#include <algorithm>

#include "core/error.h"

namespace sft::model {

std::vector<int64_t> generate(Transformer& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& o) {
  if (prompt.empty()) fail("generate", "the prompt has no tokens");
  const int64_t V = model.config().vocab_size;
  Rng rng(o.seed, /*stream=*/0x67656e);  // "gen"
  std::vector<int64_t> seq = prompt, out;
  std::vector<float> logits(static_cast<size_t>(V));
  KvCache cache;
  if (o.use_cache) {
    cache = model.new_cache(static_cast<int64_t>(prompt.size()) + o.max_new_tokens);
    model.decode(prompt.data(), static_cast<int64_t>(prompt.size()), cache, logits.data());
  }
  std::vector<float> all;
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    if (!o.use_cache) {
      const int64_t T = static_cast<int64_t>(seq.size());
      all.resize(static_cast<size_t>(T * V));
      model.forward(Batch{seq, {}, {}}, all.data());
      std::copy(all.end() - V, all.end(), logits.begin());
    }
    const int64_t next = sample_next(logits, o.sampling, rng);
    out.push_back(next);
    seq.push_back(next);
    if (std::find(o.eos_token_ids.begin(), o.eos_token_ids.end(), next) != o.eos_token_ids.end())
      break;
    if (!o.use_cache || step + 1 >= o.max_new_tokens) continue;
    // Longrope (Phi-3): the step whose sequence first passes original_max_position_embeddings
    // switches to the long factors, and transformers' Phi3ForCausalLM.prepare_inputs_for_
    // generation then drops the cache, so every key is recomputed with them: the same here.
    const ModelConfig& c = model.config();
    const int64_t orig = c.rope.original_max_position_embeddings;
    if (c.rope.type == RopeType::kLongrope && static_cast<int64_t>(seq.size()) >= orig + 1 &&
        cache.length <= orig) {
      cache.length = 0;
      model.decode(seq.data(), static_cast<int64_t>(seq.size()), cache, logits.data());
    } else {
      model.decode(&next, 1, cache, logits.data());
    }
  }
  return out;
}

}  // namespace sft::model
