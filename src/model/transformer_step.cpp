// Transformer training step: batch checks, activation arena, forward and backward.
// Forward/backward follow the signature rule of the layer files (outputs, saved activations,
// inputs, weights, sizes; parameter grads +=, activation grads =). See transformer.h.
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
#include "ops/ops.h"

namespace sft::model {

namespace {

void add_into(float* dst, const float* src, int64_t n) {
  ops::parallel_for_rows(n, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] += src[i];
  });
}

// Hands out consecutive views of one arena (64-byte aligned each).
struct Carver {
  std::vector<float>* arena;
  size_t used = 0;
  bool dry = true;
  float* take(int64_t n) {
    const size_t at = used;
    used += (static_cast<size_t>(n) + 15) / 16 * 16;
    return dry ? nullptr : arena->data() + at;
  }
};

}  // namespace

void Transformer::check_batch(const Batch& b) const {
  const int64_t T = static_cast<int64_t>(b.tokens.size());
  if (T == 0) fail("model", "empty batch");
  for (int64_t t = 0; t < T; ++t)
    if (b.tokens[t] < 0 || b.tokens[t] >= config_.vocab_size)
      fail("model", "token " + std::to_string(b.tokens[t]) + " at position " + std::to_string(t) +
                        " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) +
                        ")");
  if (!b.labels.empty()) {
    if (static_cast<int64_t>(b.labels.size()) != T)
      fail("model", "labels has " + std::to_string(b.labels.size()) + " entries, tokens has " +
                        std::to_string(T));
    for (int64_t t = 0; t < T; ++t)
      if (b.labels[t] != -100 && (b.labels[t] < 0 || b.labels[t] >= config_.vocab_size))
        fail("model", "label " + std::to_string(b.labels[t]) + " at position " + std::to_string(t) +
                          " is neither -100 nor a token id");
  }
  int64_t sum = 0;
  for (int64_t n : b.doc_lengths) {
    if (n <= 0) fail("model", "document lengths must be positive");
    sum += n;
  }
  if (!b.doc_lengths.empty() && sum != T)
    fail("model", "document lengths sum to " + std::to_string(sum) + " but the batch has " +
                      std::to_string(T) + " tokens");
}

void Transformer::prepare(const Batch& b) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(b.tokens.size());
  const int64_t C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, D = c.head_dim, L = c.num_hidden_layers;
  tokens_ = b.tokens;
  doc_lens_ = b.doc_lengths.empty() ? std::vector<int64_t>{T} : b.doc_lengths;
  doc_starts_.clear();
  positions_.assign(static_cast<size_t>(T), 0);
  targets_.assign(static_cast<size_t>(T), -1);
  probs_offsets_.clear();
  int64_t start = 0, probs_total = 0;
  for (int64_t n : doc_lens_) {
    doc_starts_.push_back(start);
    probs_offsets_.push_back(probs_total);
    probs_total += H * n * n;
    for (int64_t i = 0; i < n; ++i) {
      positions_[start + i] = i;
      // position t is scored against labels[t + 1] inside the same document only
      if (!b.labels.empty() && i + 1 < n && b.labels[start + i + 1] != -100)
        targets_[start + i] = b.labels[start + i + 1];
    }
    start += n;
  }
  cos_.resize(static_cast<size_t>(T * D / 2));
  sin_.resize(static_cast<size_t>(T * D / 2));
  // Per document: dynamic scaling depends on the sequence length, and a packed document must
  // see the frequencies it would see alone (transformers rescales per forward call).
  for (size_t d = 0; d < doc_lens_.size(); ++d) {
    const int64_t offset = doc_starts_[d] * (D / 2);
    rope_tables(cos_.data() + offset, sin_.data() + offset, rope_frequencies(c, doc_lens_[d]),
                positions_.data() + doc_starts_[d], doc_lens_[d]);
  }

  // Two passes: measure, then carve (the arena only grows, so steady state never allocates).
  for (int pass = 0; pass < 2; ++pass) {
    Carver cv{&acts_, 0, pass == 0};
    resid_ = cv.take((L + 1) * T * C);
    la_.assign(static_cast<size_t>(L), LayerActs{});
    // With gradient checkpointing every layer shares one set of views: backward recomputes a
    // layer's activations from its saved input (resid_) just before using them.
    for (size_t li = 0; li < la_.size(); ++li) {
      LayerActs& a = la_[li];
      if (gradient_checkpointing_ && li > 0) {
        a = la_[0];
        continue;
      }
      a.ln1 = cv.take(T * C);
      a.rstd1 = cv.take(T);
      if (c.qk_norm) {
        a.q_raw = cv.take(T * H * D);
        a.q_rstd = cv.take(T * H);
        a.k_raw = cv.take(T * Hkv * D);
        a.k_rstd = cv.take(T * Hkv);
      }
      a.q = cv.take(T * H * D);
      a.k = cv.take(T * Hkv * D);
      a.v = cv.take(T * Hkv * D);
      a.probs = cv.take(probs_total);
      a.att = cv.take(T * H * D);
      a.x_mid = cv.take(T * C);
      a.ln2 = cv.take(T * C);
      a.rstd2 = cv.take(T);
      a.gate = cv.take(T * I);
      a.up = cv.take(T * I);
      a.h = cv.take(T * I);
    }
    lnf_ = cv.take(T * C);
    rstdf_ = cv.take(T);
    if (pass == 0 && acts_.size() < cv.used) acts_.resize(cv.used);
  }
  T_ = T;
}

void Transformer::layer_forward(int64_t l) {
  const ModelConfig& c = config_;
  const int64_t T = T_, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, D = c.head_dim;
  const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
  LayerActs& a = la_[static_cast<size_t>(l)];
  const float* x = resid_ + l * T * C;
  float* out = resid_ + (l + 1) * T * C;
  const bool sliding = static_cast<size_t>(l) < c.layer_sliding_window.size() &&
                       c.layer_sliding_window[static_cast<size_t>(l)] && c.sliding_window;
  const int64_t window = sliding ? *c.sliding_window : 0;

  rmsnorm_forward(a.ln1, a.rstd1, x, w.input_norm, T, C, c.rms_norm_eps);
  linear_forward(c.qk_norm ? a.q_raw : a.q, a.ln1, w.q_w, w.q_b, T, C, H * D);
  linear_forward(c.qk_norm ? a.k_raw : a.k, a.ln1, w.k_w, w.k_b, T, C, Hkv * D);
  linear_forward(a.v, a.ln1, w.v_w, w.v_b, T, C, Hkv * D);
  if (c.qk_norm) {
    rmsnorm_forward(a.q, a.q_rstd, a.q_raw, w.q_norm, T * H, D, c.rms_norm_eps);
    rmsnorm_forward(a.k, a.k_rstd, a.k_raw, w.k_norm, T * Hkv, D, c.rms_norm_eps);
  }
  rope_forward(a.q, cos_.data(), sin_.data(), T, H, D);
  rope_forward(a.k, cos_.data(), sin_.data(), T, Hkv, D);
  for (size_t d = 0; d < doc_lens_.size(); ++d) {
    const int64_t s = doc_starts_[d], n = doc_lens_[d];
    attention_forward(a.att + s * H * D, a.probs + probs_offsets_[d], a.q + s * H * D,
                      a.k + s * Hkv * D, a.v + s * Hkv * D,
                      AttentionShape{n, n, 0, H, Hkv, D, window});
  }
  linear_forward(a.x_mid, a.att, w.o_w, w.o_b, T, H * D, C);
  add_into(a.x_mid, x, T * C);
  rmsnorm_forward(a.ln2, a.rstd2, a.x_mid, w.post_norm, T, C, c.rms_norm_eps);
  linear_forward(a.gate, a.ln2, w.gate_w, w.gate_b, T, C, I);
  linear_forward(a.up, a.ln2, w.up_w, w.up_b, T, C, I);
  swiglu_forward(a.h, a.gate, a.up, T * I);
  linear_forward(out, a.h, w.down_w, w.down_b, T, I, C);
  add_into(out, a.x_mid, T * C);
}

LossStats Transformer::forward(const Batch& batch, float* logits) {
  check_batch(batch);
  prepare(batch);
  const ModelConfig& c = config_;
  const int64_t T = T_, C = c.hidden_size, V = c.vocab_size, L = c.num_hidden_layers;
  embedding_forward(resid_, tokens_.data(), w_.embed, T, C);
  for (int64_t l = 0; l < L; ++l) layer_forward(l);
  rmsnorm_forward(lnf_, rstdf_, resid_ + L * T * C, w_.final_norm, T, C, c.rms_norm_eps);
  has_forward_ = true;
  return lm_head_loss_forward(logits, lnf_, w_.lm_head, targets_.data(), T, C, V, lm_workspace_);
}

// Backward scratch views, carved from bwd_ per call.
namespace {
struct Grads {
  float *dres, *dtmp, *dln, *datt, *dq, *dk, *dv, *dq2, *dk2, *dh, *dgate, *dup, *scratch;
};
}  // namespace

void Transformer::backward(float scale) {
  if (!has_forward_) fail("model", "backward called without a forward");
  if (grads_.empty()) zero_grad();
  const ModelConfig& c = config_;
  const int64_t T = T_, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, D = c.head_dim, L = c.num_hidden_layers,
                V = c.vocab_size;
  int64_t max_len = 0;
  for (int64_t n : doc_lens_) max_len = std::max(max_len, n);
  Grads g{};
  for (int pass = 0; pass < 2; ++pass) {
    Carver cv{&bwd_, 0, pass == 0};
    g.dres = cv.take(T * C);
    g.dtmp = cv.take(T * C);
    g.dln = cv.take(T * C);
    g.datt = cv.take(T * H * D);
    g.dq = cv.take(T * H * D);
    g.dk = cv.take(T * Hkv * D);
    g.dv = cv.take(T * Hkv * D);
    g.dq2 = cv.take(T * H * D);
    g.dk2 = cv.take(T * Hkv * D);
    g.dh = cv.take(T * I);
    g.dgate = cv.take(T * I);
    g.dup = cv.take(T * I);
    g.scratch = cv.take(max_len * max_len);
    if (pass == 0 && bwd_.size() < cv.used) bwd_.resize(cv.used);
  }

  lm_head_loss_backward(g.dln, g_.lm_head, lnf_, w_.lm_head, targets_.data(), scale, T, C, V,
                        lm_workspace_);
  rmsnorm_backward(g.dres, g_.final_norm, g.dln, resid_ + L * T * C, rstdf_, w_.final_norm, T, C);

  for (int64_t l = L - 1; l >= 0; --l) {
    const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
    const LayerWeights& gw = g_.layers[static_cast<size_t>(l)];
    const LayerActs& a = la_[static_cast<size_t>(l)];
    const float* x = resid_ + l * T * C;
    if (gradient_checkpointing_) layer_forward(l);
    // MLP: dres is d(layer output)
    linear_backward(g.dh, gw.down_w, gw.down_b, g.dres, a.h, w.down_w, T, I, C);
    swiglu_backward(g.dgate, g.dup, g.dh, a.gate, a.up, T * I);
    linear_backward(g.dln, gw.gate_w, gw.gate_b, g.dgate, a.ln2, w.gate_w, T, C, I);
    linear_backward(g.dln, gw.up_w, gw.up_b, g.dup, a.ln2, w.up_w, T, C, I, true);
    rmsnorm_backward(g.dtmp, gw.post_norm, g.dln, a.x_mid, a.rstd2, w.post_norm, T, C);
    add_into(g.dres, g.dtmp, T * C);  // dres is now d x_mid
    // Attention
    linear_backward(g.datt, gw.o_w, gw.o_b, g.dres, a.att, w.o_w, T, H * D, C);
    for (size_t d = 0; d < doc_lens_.size(); ++d) {
      const int64_t s = doc_starts_[d], n = doc_lens_[d];
      const bool sliding = static_cast<size_t>(l) < c.layer_sliding_window.size() &&
                           c.layer_sliding_window[static_cast<size_t>(l)] && c.sliding_window;
      attention_backward(g.dq + s * H * D, g.dk + s * Hkv * D, g.dv + s * Hkv * D, g.scratch,
                         g.datt + s * H * D, a.probs + probs_offsets_[d], a.q + s * H * D,
                         a.k + s * Hkv * D, a.v + s * Hkv * D,
                         AttentionShape{n, n, 0, H, Hkv, D, sliding ? *c.sliding_window : 0});
    }
    rope_backward(g.dq, cos_.data(), sin_.data(), T, H, D);
    rope_backward(g.dk, cos_.data(), sin_.data(), T, Hkv, D);
    const float* dq = g.dq;
    const float* dk = g.dk;
    if (c.qk_norm) {
      rmsnorm_backward(g.dq2, gw.q_norm, g.dq, a.q_raw, a.q_rstd, w.q_norm, T * H, D);
      rmsnorm_backward(g.dk2, gw.k_norm, g.dk, a.k_raw, a.k_rstd, w.k_norm, T * Hkv, D);
      dq = g.dq2;
      dk = g.dk2;
    }
    linear_backward(g.dln, gw.q_w, gw.q_b, dq, a.ln1, w.q_w, T, C, H * D);
    linear_backward(g.dln, gw.k_w, gw.k_b, dk, a.ln1, w.k_w, T, C, Hkv * D, true);
    linear_backward(g.dln, gw.v_w, gw.v_b, g.dv, a.ln1, w.v_w, T, C, Hkv * D, true);
    rmsnorm_backward(g.dtmp, gw.input_norm, g.dln, x, a.rstd1, w.input_norm, T, C);
    add_into(g.dres, g.dtmp, T * C);  // dres is now d(layer input)
  }
  embedding_backward(g_.embed, g.dres, tokens_.data(), T, C);
}

std::vector<NamedTensor> Transformer::activations() const {
  std::vector<NamedTensor> out;
  if (!has_forward_) return out;
  const ModelConfig& c = config_;
  const int64_t T = T_, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads, D = c.head_dim;
  auto view = [&](const std::string& name, const float* p, Shape shape) {
    if (p) out.push_back({name, Tensor::borrow(DType::kF32, std::move(shape), p, nullptr)});
  };
  view("embed", resid_, {T, C});
  for (size_t l = 0; l < la_.size(); ++l) {
    const LayerActs& a = la_[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    view(p + "attn_norm", a.ln1, {T, C});
    view(p + "q_proj", a.q_raw, {T, H, D});
    view(p + "k_proj", a.k_raw, {T, Hkv, D});
    view(p + "q_rope", a.q, {T, H, D});
    view(p + "k_rope", a.k, {T, Hkv, D});
    view(p + "v", a.v, {T, Hkv, D});
    view(p + "attn", a.att, {T, H * D});
    view(p + "attn_residual", a.x_mid, {T, C});
    view(p + "mlp_norm", a.ln2, {T, C});
    view(p + "gate", a.gate, {T, I});
    view(p + "up", a.up, {T, I});
    view(p + "swiglu", a.h, {T, I});
    view(p + "output", resid_ + static_cast<int64_t>(l + 1) * T * C, {T, C});
  }
  view("final_norm", lnf_, {T, C});
  return out;
}

}  // namespace sft::model
