// Transformer decoding with a KV cache: runs new tokens against the cached keys/values of the
// tokens before them (one sequence), for generation. Same layer kernels as training, with the
// attention's query offset set to the cache length. See transformer.h.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "model/attention.h"
#include "model/embedding.h"
#include "model/linear.h"
#include "model/mlp.h"
#include "model/rmsnorm.h"
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
  const ModelConfig& c = config_;
  const int64_t C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, D = c.head_dim, V = c.vocab_size;
  const int64_t p0 = cache.length;
  if (n <= 0) fail("model", "decode needs at least one token");
  if (p0 + n > cache.capacity)
    fail("model", "KV cache full: " + std::to_string(p0 + n) + " tokens > capacity " +
                      std::to_string(cache.capacity));
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= V)
      fail("model", "token id " + std::to_string(ids[i]) + " is outside the vocabulary");

  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = p0 + i;
  const RopeFrequencies freqs = rope_frequencies(c, p0 + n);
  std::vector<float> cs(static_cast<size_t>(n * D / 2)), sn(cs.size());
  rope_tables(cs.data(), sn.data(), freqs, pos.data(), n);

  std::vector<float> x(static_cast<size_t>(n * C)), ln(x.size()), rstd(static_cast<size_t>(n * H));
  std::vector<float> q(static_cast<size_t>(n * H * D)), qn(q.size()),
      k(static_cast<size_t>(n * Hkv * D));
  std::vector<float> att(q.size()), probs(static_cast<size_t>(H * n * (p0 + n)));
  std::vector<float> gate(static_cast<size_t>(n * I)), up(gate.size()), h(gate.size()),
      tmp(x.size());
  embedding_forward(x.data(), ids, w_.embed, n, C);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
    float* kc = cache.k[static_cast<size_t>(l)].data() + p0 * Hkv * D;
    float* vc = cache.v[static_cast<size_t>(l)].data() + p0 * Hkv * D;
    rmsnorm_forward(ln.data(), rstd.data(), x.data(), w.input_norm, n, C, c.rms_norm_eps);
    linear_forward(q.data(), ln.data(), w.q_w, w.q_b, n, C, H * D);
    linear_forward(k.data(), ln.data(), w.k_w, w.k_b, n, C, Hkv * D);
    linear_forward(vc, ln.data(), w.v_w, w.v_b, n, C, Hkv * D);
    if (c.qk_norm) {
      rmsnorm_forward(qn.data(), rstd.data(), q.data(), w.q_norm, n * H, D, c.rms_norm_eps);
      rmsnorm_forward(kc, rstd.data(), k.data(), w.k_norm, n * Hkv, D, c.rms_norm_eps);
      q.swap(qn);
    } else {
      std::memcpy(kc, k.data(), k.size() * sizeof(float));
    }
    rope_forward(q.data(), cs.data(), sn.data(), n, H, D);
    rope_forward(kc, cs.data(), sn.data(), n, Hkv, D);
    const bool sliding = static_cast<size_t>(l) < c.layer_sliding_window.size() &&
                         c.layer_sliding_window[static_cast<size_t>(l)] && c.sliding_window;
    attention_forward(att.data(), probs.data(), q.data(), cache.k[static_cast<size_t>(l)].data(),
                      cache.v[static_cast<size_t>(l)].data(),
                      AttentionShape{n, p0 + n, p0, H, Hkv, D, sliding ? *c.sliding_window : 0});
    linear_forward(tmp.data(), att.data(), w.o_w, w.o_b, n, H * D, C);
    for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
    rmsnorm_forward(ln.data(), rstd.data(), x.data(), w.post_norm, n, C, c.rms_norm_eps);
    linear_forward(gate.data(), ln.data(), w.gate_w, w.gate_b, n, C, I);
    linear_forward(up.data(), ln.data(), w.up_w, w.up_b, n, C, I);
    swiglu_forward(h.data(), gate.data(), up.data(), n * I);
    linear_forward(tmp.data(), h.data(), w.down_w, w.down_b, n, I, C);
    for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
  }
  cache.length = p0 + n;
  const float* last = x.data() + (n - 1) * C;
  rmsnorm_forward(ln.data(), rstd.data(), last, w_.final_norm, 1, C, c.rms_norm_eps);
  linear_forward(last_logits, ln.data(), w_.lm_head, static_cast<const float*>(nullptr), 1, C, V);
}

}  // namespace sft::model
