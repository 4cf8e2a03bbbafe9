// Transformer decoding with a KV cache: runs new tokens against the cached keys/values of the
// tokens before them (one sequence), for generation. The same decoder_layer_forward as
// training, with keys and values written into the cache and one attention segment at the
// cache's length. On a device the cache and the pass's views are device memory; the ids and
// the rope tables cross in, the last row's logits back (the step's only transfers). See
// transformer.h.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/arena.h"
#include "core/error.h"
#include "model/blocks/layer_shape.h"
#include "model/rope.h"
#include "model/transformer.h"

namespace sft::model {

KvCache Transformer::new_cache(int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  cache.layer_elements = capacity * config_.num_key_value_heads * config_.head_dim;
  const size_t bytes =
      static_cast<size_t>(cache.layer_elements * config_.num_hidden_layers) * sizeof(float);
  cache.k = Arena(params_.device());
  cache.v = Arena(params_.device());
  cache.k.reserve(std::max<size_t>(bytes, 1));
  cache.v.reserve(std::max<size_t>(bytes, 1));
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

  const Device device = params_.device();
  const bool on_host = device == Device::kCpu;
  if (cache.k.device() != device)
    fail("model", std::string("decode: the KV cache is on the ") + device_name(cache.k.device()) +
                      " device, the model on the " + device_name(device) +
                      " (hint: make the cache with new_cache after to_device)");
  const int sets = c.sliding_rope ? 2 : 1;
  const LayerShape shape = LayerShape::of(c, n, compute_);
  LayerActivations acts;
  LayerScratch scratch;
  ops::View x, y, last_norm, last_norm32, last_rstd, logits;
  ops::View cos[2], sin[2];  // per rope set (Transformer::rope_set_of)
  ops::Workspace head_ws;
  int64_t* device_ids = nullptr;
  carve(decode_, [&](Carver& cv) {
    acts = carve_layer_activations(cv, shape, /*own_kv=*/false);
    scratch = carve_layer_scratch(cv, shape, LayerPass::kDecode);
    x = take_f32(cv, n, C);
    y = take_f32(cv, n, C);
    for (int set = 0; set < sets; ++set) {
      cos[set] = take_f32(cv, n, R / 2);
      sin[set] = take_f32(cv, n, R / 2);
    }
    last_norm32 = take_f32(cv, 1, C);
    last_norm = compute_ == DType::kBF16 ? take_view(cv, DType::kBF16, 1, C) : last_norm32;
    last_rstd = take_f32(cv, 1, 1);
    head_ws = ops::take_workspace(
        cv, ops::lm_head_workspace_bytes(
                {.dtype = compute_, .rows = 1, .hidden = C, .vocab = V, .logits = true}));
    device_ids = cv.take<int64_t>(n + 1);  // the ids, then the LM head's target (none)
    logits = on_host ? ops::view_of(last_logits, 1, V) : take_f32(cv, 1, V);
  });
  // The ids and rope tables are made on the host and copied in on a device.
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = p0 + i;
  std::vector<float> host_tables;
  ops::View host_cos[2] = {cos[0], cos[1]}, host_sin[2] = {sin[0], sin[1]};
  if (!on_host) {
    host_tables.resize(static_cast<size_t>(sets * n * R));
    for (int set = 0; set < sets; ++set) {
      float* base = host_tables.data() + set * n * R;
      host_cos[set] = ops::view_of(base, n, R / 2);
      host_sin[set] = ops::view_of(base + n * R / 2, n, R / 2);
    }
  }
  fill_rope_tables(host_cos, host_sin, pos.data(), n, p0 + n);
  const size_t table_bytes = static_cast<size_t>(n * R / 2) * sizeof(float);
  copy_bytes(device_ids, device, ids, Device::kCpu, static_cast<size_t>(n) * sizeof(int64_t));
  const int64_t no_target = -1;
  copy_bytes(device_ids + n, device, &no_target, Device::kCpu, sizeof(int64_t));
  if (!on_host)
    for (int set = 0; set < sets; ++set) {
      copy_bytes(cos[set].data, device, host_cos[set].data, Device::kCpu, table_bytes);
      copy_bytes(sin[set].data, device, host_sin[set].data, Device::kCpu, table_bytes);
    }

  // The new tokens attend to the cache and to each other: one segment at offset p0.
  const ops::AttentionSegment segment{0, n, 0, p0 + n, p0};
  ops::embedding_forward(x, device_ids, embedding_table());
  if (embed_scale_ != 1) ops::scale(x, embed_scale_);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    float* kc = cache.k_of(l);
    float* vc = cache.v_of(l);
    // This call's keys and values go to the cache.
    acts.attn.k = ops::view_of(kc + p0 * KV, n, KV, device);
    acts.attn.v = ops::view_of(vc + p0 * KV, n, KV, device);
    const AttentionInputs attn{ops::view_of(kc, p0 + n, KV, device),
                               ops::view_of(vc, p0 + n, KV, device),
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
  lm_head_.cross_entropy(ops::View{}, logits, last_norm, device_ids + n, 0, false, head_ws, {},
                         c.final_logit_softcapping);
  if (!on_host)
    copy_bytes(last_logits, Device::kCpu, logits.data, device,
               static_cast<size_t>(V) * sizeof(float));
}

}  // namespace sft::model
