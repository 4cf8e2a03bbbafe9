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
    if (o.use_cache && step + 1 < o.max_new_tokens) model.decode(&next, 1, cache, logits.data());
  }
  return out;
}

}  // namespace sft::model
