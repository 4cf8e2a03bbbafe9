// Transformer decoding with a KV cache: runs new tokens against the cached keys/values of the
// tokens before them (one sequence), for generation. The same decoder_layer_forward as
// training, with keys and values written into the cache and one attention segment at the
// cache's length. See transformer.h.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "model/rope.h"
#include "model/transformer.h"

namespace sft::model {

KvCache Transformer::new_cache(int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  const size_t per_layer =
      static_cast<size_t>(capacity * config_.num_key_value_heads * config_.head_dim);
  cache.k.assign(static_cast<size_t>(config_.num_hidden_layers), std::vector<float>(per_layer));
  cache.v.assign(static_cast<size_t>(config_.num_hidden_layers), std::vector<float>(per_layer));
  return cache;
}

void Transformer::decode(const int64_t* ids, int64_t n, KvCache& cache, float* last_logits) {
  if (lora_) lora_->set_training(false);  // generation: no adapter dropout
  if (tp_.on())
    fail("model",
         "generation with a tensor-parallel model (hint: generate from the exported "
         "model in one process)");
  const ModelConfig& c = config_;
  const int64_t C = c.hidden_size, KV = c.num_key_value_heads * c.head_dim, V = c.vocab_size;
  const int64_t R = 2 * static_cast<int64_t>(rope_.inv_freq.size());  // rotary dims
  const int64_t p0 = cache.length;
  if (n <= 0) fail("model", "decode needs at least one token");
  if (p0 + n > cache.capacity)
    fail("model", "KV cache full: " + std::to_string(p0 + n) + " tokens > capacity " +
                      std::to_string(cache.capacity));
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= V)
      fail("model", "token id " + std::to_string(ids[i]) + " is outside the vocabulary");

  const LayerShape shape = LayerShape::of(c, n, compute_);
  LayerActivations acts;
  LayerScratch scratch;
  ops::View x, y, last_norm, last_norm32, last_rstd;
  ops::View cos[2], sin[2];  // per rope set (Transformer::rope_set_of)
  ops::Workspace head_ws;
  carve(decode_, [&](Carver& cv) {
    acts = carve_layer_activations(cv, shape, /*own_kv=*/false);
    scratch = carve_layer_scratch(cv, shape, LayerPass::kDecode);
    x = ops::view_of(cv.take<float>(n * C), n, C);
    y = ops::view_of(cv.take<float>(n * C), n, C);
    for (int set = 0; set < (c.sliding_rope ? 2 : 1); ++set) {
      cos[set] = ops::view_of(cv.take<float>(n * R / 2), n, R / 2);
      sin[set] = ops::view_of(cv.take<float>(n * R / 2), n, R / 2);
    }
    last_norm32 = ops::view_of(cv.take<float>(C), 1, C);
    last_norm = compute_ == DType::kBF16 ? ops::view_of(cv.take<uint16_t>(C), 1, C) : last_norm32;
    last_rstd = ops::view_of(cv.take<float>(1), 1, 1);
    head_ws = ops::take_workspace(
        cv, ops::lm_head_workspace_bytes(
                {.dtype = compute_, .rows = 1, .hidden = C, .vocab = V, .logits = true}));
  });
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = p0 + i;
  fill_rope_tables(cos, sin, pos.data(), n, p0 + n);

  // The new tokens attend to the cache and to each other: one segment at offset p0.
  const ops::AttentionSegment segment{0, n, 0, p0 + n, p0};
  ops::embedding_forward(x, ids, embed_->value);
  if (embed_scale_ != 1) ops::scale(x, embed_scale_);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    float* kc = cache.k[static_cast<size_t>(l)].data();
    float* vc = cache.v[static_cast<size_t>(l)].data();
    acts.attn.k = ops::view_of(kc + p0 * KV, n, KV);  // this call's keys and values go to the cache
    acts.attn.v = ops::view_of(vc + p0 * KV, n, KV);
    const AttentionInputs attn{ops::view_of(kc, p0 + n, KV),
                               ops::view_of(vc, p0 + n, KV),
                               {&segment, 1},
                               cos[rope_set_of(l)],
                               sin[rope_set_of(l)]};
    decoder_layer_forward(y, acts, scratch, x, attn, layers_[static_cast<size_t>(l)]);
    std::swap(x, y);
  }
  cache.length = p0 + n;
  final_norm().forward(last_norm32, last_rstd, x.row_range(n - 1, 1));
  if (c.logits_scaling != 1) ops::scale(last_norm32, static_cast<float>(1.0 / c.logits_scaling));
  if (last_norm.data != last_norm32.data) ops::cast(last_norm, last_norm32);
  const int64_t no_target = -1;
  lm_head_.cross_entropy(ops::View{}, ops::view_of(last_logits, 1, V), last_norm, &no_target, 0,
                         false, head_ws, {}, c.final_logit_softcapping);
}

}  // namespace sft::model
