// Transformer training step: batch checks, the activation arena, forward and backward over
// the packed batch. See transformer.h.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/rope.h"
#include "model/transformer.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

template <typename T>
ops::View take(Carver& cv, int64_t rows, int64_t cols) {
  return ops::view_of(cv.take<T>(rows * cols), rows, cols, cv.device());
}

}  // namespace

void Transformer::check_batch(const Batch& b) const {
  const int64_t T = static_cast<int64_t>(b.tokens.size());
  if (T == 0) fail("model", "empty batch");
  for (int64_t t = 0; t < T; ++t)
    if (b.tokens[t] < 0 || b.tokens[t] >= config_.vocab_size)
      fail("model", "token " + std::to_string(b.tokens[t]) + " at position " + std::to_string(t) +
                        " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) +
                        ")");
  if (!b.padding.empty() && static_cast<int64_t>(b.padding.size()) != T)
    fail("model", "padding has " + std::to_string(b.padding.size()) + " entries, tokens has " +
                      std::to_string(T));
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

void Transformer::prepare(const Batch& b, bool logits) {
  const ModelConfig& c = config_;
  const int64_t T_real = static_cast<int64_t>(b.tokens.size());
  // bf16 runs on oneDNN, which compiles a kernel for every new matrix shape (tens of ms each):
  // the token count is padded to a multiple of kTokenQuantum with an unscored document of
  // token 0 that no real token attends to and that adds nothing to any gradient.
  constexpr int64_t kTokenQuantum = 64;
  const int64_t T = compute_ == DType::kBF16
                        ? (T_real + kTokenQuantum - 1) / kTokenQuantum * kTokenQuantum
                        : T_real;
  const int64_t C = c.hidden_size, L = c.num_hidden_layers;
  const int64_t R = 2 * static_cast<int64_t>(rope_.inv_freq.size());  // rotary dims
  tokens_.assign(b.tokens.begin(), b.tokens.end());
  tokens_.resize(static_cast<size_t>(T), 0);
  positions_.assign(static_cast<size_t>(T), 0);
  targets_.assign(static_cast<size_t>(T), -1);
  segments_.clear();
  int64_t start = 0;
  auto add_document = [&](int64_t n) {
    segments_.push_back({start, n, start, n, 0});
    for (int64_t i = 0; i < n; ++i) {
      positions_[start + i] = i;
      // position t is scored against labels[t + 1] inside the same document only
      const int64_t next = start + i + 1;
      if (!b.labels.empty() && i + 1 < n && next < T_real && b.labels[next] != -100)
        targets_[start + i] = b.labels[next];
    }
    start += n;
  };
  if (b.doc_lengths.empty()) add_document(T_real);
  for (int64_t n : b.doc_lengths) add_document(n);
  if (T > T_real) add_document(T - T_real);

  LayerShape shape = LayerShape::of(c, T, compute_, tp_.size);
  shape.expert_rows_elsewhere = expert_exchange_on();
  const size_t layer_sets = gradient_checkpointing_ ? 1 : static_cast<size_t>(L);
  la_.resize(static_cast<size_t>(L));
  carve(acts_, [&](Carver& cv) {
    resid_ = take<float>(cv, (L + 1) * T, C);
    // Each layer carves the MLP it has (dense or experts); one shared set carves both.
    for (size_t l = 0; l < layer_sets; ++l)
      la_[l] = carve_layer_activations(
          cv, gradient_checkpointing_ ? shape : shape.for_layer(c, static_cast<int64_t>(l)));
    // With gradient checkpointing every layer shares one set of views: backward recomputes a
    // layer's activations from its saved input (resid_) just before using them.
    for (size_t l = layer_sets; l < la_.size(); ++l) la_[l] = la_[0];
    // Kept MLP products (pre-norm dense layers): gate and up views of each layer's own. The
    // first such layer keeps the shared set's when no other layer writes them (every dense
    // layer keeps its own; expert layers write other views).
    if (gradient_checkpointing_ && checkpoint_keeps_mlp_) {
      bool shared_free = true;
      for (size_t l = 0; l < la_.size(); ++l)
        shared_free = shared_free && (mlp_kept(l) || layers_[l].plan.experts);
      for (size_t l = 0; l < la_.size(); ++l) {
        if (!mlp_kept(l)) continue;
        if (shared_free) {  // the first kept layer: the shared set's views
          shared_free = false;
          continue;
        }
        const int64_t I = shape.for_layer(c, static_cast<int64_t>(l)).I;
        la_[l].mlp.gate = take_view(cv, shape.compute, T, I);
        la_[l].mlp.up = take_view(cv, shape.compute, T, I);
      }
    }
    lnf_ = compute_ == DType::kBF16 ? take<uint16_t>(cv, T, C) : take<float>(cv, T, C);
    rstdf_ = take<float>(cv, T, 1);
    dlnf_ = take<float>(cv, T, C);
    cos_ = take<float>(cv, T, R / 2);
    sin_ = take<float>(cv, T, R / 2);
    if (config_.sliding_rope) {
      cos_sliding_ = take<float>(cv, T, R / 2);
      sin_sliding_ = take<float>(cv, T, R / 2);
    }
    acts_bytes_ = cv.used();  // what backward reads; the forward's scratch follows
    // The ids the kernels read, on the arena's device (a copy of T ids, also on the CPU).
    device_tokens_ = cv.take<int64_t>(T);
    device_targets_ = cv.take<int64_t>(T);
    device_logits_ = logits && cv.device() != Device::kCpu
                         ? take<float>(cv, T_real, lm_head_.weight->value.rows)
                         : ops::View{};
    // On a device with experts: the router load's sums (2, E) and the load-balancing loss's
    // gradient row (1, E) there, and the padding mask the load reads (T bytes).
    const bool moe_on_device = c.has_experts() && cv.device() != Device::kCpu;
    device_moe_rows_ = moe_on_device ? take<float>(cv, 3, c.num_experts) : ops::View{};
    device_padding_ = moe_on_device ? cv.take<uint8_t>(T) : nullptr;
    scratch_ = carve_layer_scratch(cv, shape, LayerPass::kTrainForward);
    // The LM head's workspace (forward, and backward's unfused head): T rows of lnf_.
    const ops::View& w = lm_head_.weight->value;
    head_ws_ = ops::take_workspace(
        cv, ops::lm_head_workspace_bytes({.dtype = compute_,
                                          .rows = T,
                                          .hidden = C,
                                          .vocab = w.rows,
                                          .logits = logits,
                                          .shard = vocab_shard_.group != nullptr}));
  });
  // The ids and the rope tables are written on the host: into the arena itself on the CPU, on
  // a device into staging_ (pinned), the mirror of their span of acts_, which then crosses in
  // one copy (they are consecutive there: cos_ ... sin_sliding_, device_tokens_, device_targets_).
  const Device device = acts_.device();
  const bool on_host = device == Device::kCpu;
  std::byte* const span = reinterpret_cast<std::byte*>(cos_.data);
  const size_t span_bytes =
      static_cast<size_t>(reinterpret_cast<std::byte*>(device_targets_ + T) - span);
  if (!on_host) staging_.reserve(span_bytes);
  const auto host_of = [&](void* p) -> void* {
    return on_host ? p : staging_.data() + (static_cast<std::byte*>(p) - span);
  };
  std::memcpy(host_of(device_tokens_), tokens_.data(), static_cast<size_t>(T) * sizeof(int64_t));
  std::memcpy(host_of(device_targets_), targets_.data(), static_cast<size_t>(T) * sizeof(int64_t));
  // Per document: dynamic scaling depends on the sequence length, and a packed document must
  // see the frequencies it would see alone (transformers rescales per forward call).
  // longrope (Phi-3) picks its factor set once per forward call from max(position_ids) + 1
  // (transformers' longrope_frequency_update): in a packed batch, the longest document's length,
  // so every document of the batch gets the long factors when one is past
  // original_max_position_embeddings.
  int64_t max_position = 0;
  for (int64_t t = 0; t < T_real; ++t)
    max_position = std::max(max_position, positions_[static_cast<size_t>(t)]);
  const auto staged = [&](const ops::View& v) {
    if (on_host || v.empty()) return v;
    ops::View h = v;
    h.device = Device::kCpu;
    h.data = host_of(v.data);
    return h;
  };
  const ops::View host[4] = {staged(cos_), staged(sin_), staged(cos_sliding_),
                             staged(sin_sliding_)};
  const auto rows = [](const ops::View& v, const ops::AttentionSegment& seg) {
    return v.empty() ? ops::View{} : v.row_range(seg.q_begin, seg.q_len);
  };
  for (const ops::AttentionSegment& seg : segments_) {
    const int64_t n = config_.rope.type == RopeType::kLongrope ? max_position + 1 : seg.q_len;
    fill_rope_tables({rows(host[0], seg), rows(host[2], seg)},
                     {rows(host[1], seg), rows(host[3], seg)}, positions_.data() + seg.q_begin,
                     seg.q_len, n);
  }
  if (!on_host) copy_bytes(span, device, staging_.data(), Device::kCpu, span_bytes);
  T_ = T;
  T_real_ = T_real;
}

void Transformer::fill_rope_tables(const ops::View (&cos)[2], const ops::View (&sin)[2],
                                   const int64_t* positions, int64_t n, int64_t rope_n) {
  for (int set = 0; set < 2; ++set) {
    if (cos[set].empty()) continue;
    rope_tables(cos[set].as<float>(), sin[set].as<float>(), rope_for(rope_n, set), positions, n);
  }
}

int Transformer::rope_set_of(int64_t layer) const {
  const size_t l = static_cast<size_t>(layer);
  return l < config_.layer_rope_set.size() ? config_.layer_rope_set[l] : 0;
}

const RopeFrequencies& Transformer::rope_for(int64_t n, int set) {
  if (set == 1) {
    // Gemma 3's sliding layers: their own parameters (no longrope: the config refuses it).
    if (sliding_config_.rope.type == RopeType::kDynamic &&
        n > sliding_config_.max_position_embeddings) {
      rope_sliding_long_ = rope_frequencies(sliding_config_, n);
      return rope_sliding_long_;
    }
    return rope_sliding_;
  }
  // Generation (transformer_decode.cpp asks with p0 + n, the call's max position + 1) follows
  // transformers' cache: keys already cached keep the rotation they were made with, a step
  // past original_max_position_embeddings turns its own q and k with the long factors.
  if (config_.rope.type == RopeType::kLongrope &&
      n > config_.rope.original_max_position_embeddings) {
    rope_long_ = rope_frequencies(config_, n);
    return rope_long_;
  }
  if (config_.rope.type == RopeType::kDynamic && n > config_.max_position_embeddings) {
    rope_long_ = rope_frequencies(config_, n);
    return rope_long_;
  }
  return rope_;
}

AttentionInputs Transformer::attention_inputs(int64_t l) const {
  const LayerActivations& a = la_[static_cast<size_t>(l)];
  if (rope_set_of(l) == 1) return {a.attn.k, a.attn.v, segments_, cos_sliding_, sin_sliding_};
  return {a.attn.k, a.attn.v, segments_, cos_, sin_};
}

void Transformer::layer_forward(int64_t l) {
  const int64_t T = T_;
  decoder_layer_forward(resid_.row_range((l + 1) * T, T), la_[static_cast<size_t>(l)], scratch_,
                        resid_.row_range(l * T, T), attention_inputs(l),
                        layers_[static_cast<size_t>(l)]);
}

void Transformer::add_embedding_noise(int64_t T) {
  ops::add_uniform_noise(resid_.row_range(0, T), static_cast<float>(noise_.magnitude), noise_.seed,
                         noise_.stream, 0);
  noise_ = {};  // one forward only
}

LossStats Transformer::forward(const Batch& batch, float* logits,
                               std::optional<double> loss_scale) {
  check_batch(batch);
  prepare(batch, logits != nullptr);
  const int64_t T = T_, L = config_.num_hidden_layers;
  if (loss_scale && !trainable().has_grads()) trainable().allocate_grads();
  if (lora_) lora_->set_training(loss_scale.has_value());
  if (hooks_.before_embedding)
    hooks_.before_embedding(std::span<const int64_t>(device_tokens_, static_cast<size_t>(T)));
  ops::embedding_forward(resid_.row_range(0, T), device_tokens_, embedding_table(), vocab_shard_);
  if (hooks_.after_embedding) hooks_.after_embedding();
  // Granite: the embeddings (NEFTune's noise included, as its hook sits on embed_tokens) times
  // embedding_multiplier. Gemma scales inside embed_tokens (Gemma3TextScaledWordEmbedding), so
  // there the noise comes after the scale.
  if (config_.embedding_scale_sqrt_hidden && embed_scale_ != 1)
    ops::scale(resid_.row_range(0, T), embed_scale_);
  if (noise_.magnitude > 0) add_embedding_noise(T);
  if (!config_.embedding_scale_sqrt_hidden && embed_scale_ != 1)
    ops::scale(resid_.row_range(0, T), embed_scale_);
  router_load_.assign(static_cast<size_t>(2 * config_.num_experts), 0.0f);
  padding_ = batch.padding;
  // On a device the sums gather there (the padding mask copied over) and come back after the
  // last layer.
  const bool load_on_device = !device_moe_rows_.empty();
  const ops::View load = load_on_device ? device_moe_rows_.row_range(0, 2)
                                        : ops::view_of(router_load_.data(), 2, config_.num_experts);
  const uint8_t* padding = padding_.empty() ? nullptr : padding_.data();
  if (load_on_device) {
    ops::zero(load);
    if (padding) {
      copy_bytes(device_padding_, load.device, padding, Device::kCpu, padding_.size());
      padding = device_padding_;
    }
  }
  int64_t counted = T_real_;
  for (const uint8_t pad : padding_) counted -= pad ? 1 : 0;
  int64_t expert_layers = 0;
  for (int64_t l = 0; l < L; ++l) {
    if (hooks_.before_forward) hooks_.before_forward(l);
    layer_forward(l);
    if (hooks_.after_forward) hooks_.after_forward(l);
    if (!config_.layer_has_experts(l)) continue;
    const MoeMlpBlock::Saved& moe = la_[static_cast<size_t>(l)].moe;
    ops::moe_router_load(load, moe.probs.row_range(0, T_real_), moe.expert_of,
                         config_.num_experts_per_tok, padding);
    ++expert_layers;
  }
  if (load_on_device && expert_layers > 0)
    copy_bytes(router_load_.data(), Device::kCpu, load.data, load.device,
               router_load_.size() * sizeof(float));
  // transformers: E · Σ_e (tokens routed to e / rows) · (probability mass of e / rows), rows
  // counted over every expert layer.
  router_aux_loss_ = 0;
  aux_rows_ = expert_layers * counted;
  if (aux_rows_ > 0) {
    const double rows = static_cast<double>(aux_rows_);
    const int64_t E = config_.num_experts;
    for (int64_t e = 0; e < E; ++e)
      router_aux_loss_ += (router_load_[static_cast<size_t>(e)] / rows) *
                          (router_load_[static_cast<size_t>(E + e)] / rows);
    router_aux_loss_ *= static_cast<double>(E);
  }
  const ops::View norm_out = lnf_.dtype == DType::kBF16 ? dlnf_ : lnf_;
  final_norm().forward(norm_out, rstdf_, resid_.row_range(L * T, T));
  // Granite's logits / logits_scaling, as the LM head's input times 1 / logits_scaling (the
  // head is linear; the two differ by a rounding).
  if (config_.logits_scaling != 1)
    ops::scale(norm_out, static_cast<float>(1.0 / config_.logits_scaling));
  if (lnf_.data != norm_out.data) ops::cast(lnf_, norm_out);
  has_forward_ = true;
  head_grad_scale_ = loss_scale;
  return head(logits, loss_scale.value_or(0), loss_scale.has_value());
}

LossStats Transformer::head(float* logits, double scale, bool train) {
  // The LM head sees the batch's own rows; the padding rows get no gradient.
  const int64_t Tr = T_real_;
  ops::View logits_view = logits ? ops::view_of(logits, Tr, config_.vocab_size) : ops::View{};
  if (logits && !device_logits_.empty()) logits_view = device_logits_;  // copied out below
  if (logits && tp_.on())
    fail("model", "full logits of a tensor-parallel model (each rank holds a vocabulary slice)");
  if (hooks_.before_head) hooks_.before_head();
  ops::VocabShard shard = vocab_shard_;
  shard.weight_blocks = hooks_.head_blocks;
  const LossStats s = lm_head_.cross_entropy(dlnf_.row_range(0, Tr), logits_view,
                                             lnf_.row_range(0, Tr), device_targets_, scale, train,
                                             head_ws_, shard, config_.final_logit_softcapping);
  if (hooks_.after_head) hooks_.after_head();
  if (logits && logits_view.data != logits)
    copy_bytes(logits, Device::kCpu, logits_view.data, logits_view.device,
               static_cast<size_t>(logits_view.numel()) * sizeof(float));
  if (train && T_ > Tr) ops::zero(dlnf_.row_range(Tr, T_ - Tr));
  return s;
}

void Transformer::backward(double scale) {
  if (!has_forward_) fail("model", "backward called without a forward");
  if (!trainable().has_grads()) trainable().allocate_grads();
  const ModelConfig& c = config_;
  const int64_t T = T_, L = c.num_hidden_layers;
  if (head_grad_scale_ && *head_grad_scale_ != scale)
    fail("model", "backward scale differs from the one the forward's LM head used");
  if (!head_grad_scale_) head(nullptr, scale, true);  // unfused: the head's gradient now
  // The backward scratch also serves the layer recomputation of gradient checkpointing.
  carve(bwd_, [&](Carver& cv) {
    LayerShape shape = LayerShape::of(c, T, compute_, tp_.size);
    shape.expert_rows_elsewhere = expert_exchange_on();
    scratch_ = carve_layer_scratch(cv, shape, LayerPass::kTrainBackward);
    if (c.has_experts() && aux_weight_ != 0)
      scratch_.moe_dprobs = take<float>(cv, T, c.num_experts);
  });
  LayerScratch& g = scratch_;
  if (!g.moe_dprobs.empty()) add_router_aux_loss_grad(g);
  if (c.logits_scaling != 1) ops::scale(dlnf_, static_cast<float>(1.0 / c.logits_scaling));
  final_norm().backward(g.dres, dlnf_, resid_.row_range(L * T, T), rstdf_);
  for (int64_t l = L - 1; l >= 0; --l) {
    if (hooks_.before_backward) hooks_.before_backward(l);
    // The last layer needs no recomputation: the shared set still holds its activations from
    // the forward (only the final norm and the head ran since, and they write elsewhere).
    if (gradient_checkpointing_ && l != L - 1)
      decoder_layer_recompute(resid_.row_range((l + 1) * T, T), la_[static_cast<size_t>(l)],
                              scratch_, resid_.row_range(l * T, T), attention_inputs(l),
                              layers_[static_cast<size_t>(l)], mlp_kept(static_cast<size_t>(l)));
    decoder_layer_backward(g, la_[static_cast<size_t>(l)], resid_.row_range(l * T, T),
                           attention_inputs(l), layers_[static_cast<size_t>(l)]);
    if (hooks_.after_backward) hooks_.after_backward(l);
  }
  if (!embed_->grad.empty()) {
    if (embed_scale_ != 1) ops::scale(g.dres, embed_scale_);
    ops::embedding_backward(embed_->grad, g.dres, device_tokens_, vocab_shard_);
  }
  head_grad_scale_.reset();
}

// d(weight · aux)/d p[t, e] = weight · E · (tokens routed to e / rows) / rows on every row of
// every expert layer that is not padding (the token counts carry no gradient); 0 on the rest.
void Transformer::add_router_aux_loss_grad(LayerScratch& g) {
  const int64_t E = config_.num_experts;
  ops::zero(g.moe_dprobs);
  if (aux_rows_ == 0) return;
  const double rows = static_cast<double>(aux_rows_);
  aux_grad_row_.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e)
    aux_grad_row_[static_cast<size_t>(e)] =
        static_cast<float>(aux_weight_ * static_cast<double>(E) *
                           router_load_[static_cast<size_t>(e)] / (rows * rows));
  // Onto every run of rows that are not padding (on a device, from its copy there).
  ops::View row = ops::view_of(aux_grad_row_.data(), 1, E);
  if (!device_moe_rows_.empty()) {
    const ops::View there = device_moe_rows_.row_range(2, 1);
    copy_bytes(there.data, there.device, row.data, Device::kCpu,
               aux_grad_row_.size() * sizeof(float));
    row = there;
  }
  for (int64_t t = 0; t < T_real_;) {
    int64_t end = t;
    while (end < T_real_ && (padding_.empty() || !padding_[static_cast<size_t>(end)])) ++end;
    if (end > t) ops::add_bias(g.moe_dprobs.row_range(t, end - t), row);
    t = end + 1;
  }
}

std::vector<NamedTensor> Transformer::activations() const {
  std::vector<NamedTensor> out;
  if (!has_forward_) return out;
  const ModelConfig& c = config_;
  const int64_t T = T_, H = c.num_attention_heads / tp_.size,
                Hkv = c.num_key_value_heads / tp_.size, D = c.head_dim,
                I = c.intermediate_size / tp_.size;
  auto view = [&](const std::string& name, const ops::View& v, Shape shape) {
    if (!v.empty())
      out.push_back({name, Tensor::borrow(v.dtype, std::move(shape), v.data, nullptr)});
  };
  view("embed", resid_.row_range(0, T), {T, c.hidden_size});
  for (size_t l = 0; l < la_.size(); ++l) {
    const LayerActivations& a = la_[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    view(p + "attn_norm", a.ln1, {T, c.hidden_size});
    view(p + "q_proj", a.attn.q_raw, {T, H, D});
    view(p + "k_proj", a.attn.k_raw, {T, Hkv, D});
    view(p + "q_rope", a.attn.q, {T, H, D});
    view(p + "k_rope", a.attn.k, {T, Hkv, D});
    view(p + "v", a.attn.v, {T, Hkv, D});
    view(p + "attn", a.attn.att, {T, H * D});
    view(p + "attn_residual", a.x_mid, {T, c.hidden_size});
    view(p + "mlp_norm", a.ln2, {T, c.hidden_size});
    view(p + "gate", a.mlp.gate, {T, I});
    view(p + "up", a.mlp.up, {T, I});
    view(p + "swiglu", a.mlp.h, {T, I});
    if (a.moe.expert_of) {  // the routing: what a reference's router chose, to compare with
      view(p + "router_probs", a.moe.probs, {T, c.num_experts});
      out.push_back({p + "experts", Tensor::borrow(DType::kI64, {T, c.num_experts_per_tok},
                                                   a.moe.expert_of, nullptr)});
    }
    view(p + "output", resid_.row_range(static_cast<int64_t>(l + 1) * T, T), {T, c.hidden_size});
  }
  view("final_norm", lnf_, {T, c.hidden_size});
  return out;
}

}  // namespace sft::model
