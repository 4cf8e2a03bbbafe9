// Decoder layer forward/backward as ops:: calls. See decoder_layer.h.
#include "model/decoder_layer.h"

#include <algorithm>
#include <optional>

namespace sft::model {

namespace {

template <typename T>
ops::View take(Carver& cv, int64_t rows, int64_t cols) {
  return ops::view_of(cv.take<T>(rows * cols), rows, cols);
}

ops::View take_as(Carver& cv, DType dtype, int64_t rows, int64_t cols) {
  return dtype == DType::kBF16 ? take<uint16_t>(cv, rows, cols) : take<float>(cv, rows, cols);
}

Linear linear(const ParameterSet& p, ParamSlot w, ParamSlot b, int layer) {
  return Linear{&p.at(w, layer), p.find(b, layer)};
}

// Per-head views for q_norm / k_norm: (T, NH·D) as (T·NH, D).
ops::View per_head(const ops::View& v, int64_t D) {
  return v.reshaped(v.numel() / D, D);
}

// The fp32 values a projection output is computed with: `saved` itself when it is fp32, else
// `scratch` (fp32) holding it. Forward writes the projection into the result, then keep_rounded()
// stores it and replaces it with its bf16 rounding.
ops::View fp32_of(const ops::View& saved, const ops::View& scratch) {
  return saved.dtype == DType::kBF16 ? scratch.first(saved.rows, saved.cols) : saved;
}

// Returns the fp32 view the layer goes on with: value itself (rounded in place when saved is
// bf16), or, when value is a column block of the stacked q/k/v product, `scratch` holding the
// rounded values densely (the per-head norms read dense rows).
ops::View keep_rounded(ops::View saved, ops::View value, ops::View scratch) {
  if (saved.data == value.data) return value;
  ops::cast(saved, value);
  const ops::View rounded = value.dense() ? value : scratch.first(value.rows, value.cols);
  ops::cast(rounded, saved);
  return rounded;
}

// q, k and v as one product (StackedLinear) when the layer trains in bf16 (the only case that
// saves bf16 q, k, v; fp32 training and decoding keep their own buffers) and they stack.
std::optional<StackedLinear> stacked_qkv(const DecoderLayer& w, const LayerActivations& a) {
  if (a.q.dtype != DType::kBF16 || a.k.empty()) return std::nullopt;
  return StackedLinear::of({&w.q, &w.k, &w.v});
}

// Backward: the saved (bf16) values widened into `scratch`, or the fp32 saved view itself.
ops::View widened(const ops::View& saved, const ops::View& scratch) {
  if (saved.dtype != DType::kBF16) return saved;
  const ops::View out = scratch.first(saved.rows, saved.cols);
  ops::cast(out, saved);
  return out;
}

// Column-parallel projections: each rank's input gradient covers its own heads / MLP slice.
void sum_over_tp(const DecoderLayer& w, ops::View dx) {
  if (w.tp_group) w.tp_group->sum({dx.as<float>(), static_cast<size_t>(dx.numel())});
}

}  // namespace

DecoderLayer DecoderLayer::bind(const ParameterSet& p, const ModelConfig& c, int layer,
                                const TensorParallel& tp) {
  DecoderLayer d;
  d.q = linear(p, ParamSlot::kQ, ParamSlot::kQBias, layer);
  d.k = linear(p, ParamSlot::kK, ParamSlot::kKBias, layer);
  d.v = linear(p, ParamSlot::kV, ParamSlot::kVBias, layer);
  d.o = linear(p, ParamSlot::kO, ParamSlot::kOBias, layer);
  d.gate = linear(p, ParamSlot::kGate, ParamSlot::kGateBias, layer);
  d.up = linear(p, ParamSlot::kUp, ParamSlot::kUpBias, layer);
  d.down = linear(p, ParamSlot::kDown, ParamSlot::kDownBias, layer);
  d.input_norm = &p.at(ParamSlot::kInputNorm, layer);
  d.post_norm = &p.at(ParamSlot::kPostNorm, layer);
  d.q_norm = p.find(ParamSlot::kQNorm, layer);
  d.k_norm = p.find(ParamSlot::kKNorm, layer);
  const size_t l = static_cast<size_t>(layer);
  const bool sliding =
      l < c.layer_sliding_window.size() && c.layer_sliding_window[l] && c.sliding_window;
  d.dims = {c.num_attention_heads / tp.size, c.num_key_value_heads / tp.size, c.head_dim,
            sliding ? *c.sliding_window : 0};
  d.eps = c.rms_norm_eps;
  d.o.sum_output = d.down.sum_output = d.tp_group = tp.group;
  return d;
}

LayerShape LayerShape::of(const ModelConfig& c, int64_t tokens, DType compute, int tp_size) {
  return {tokens,
          c.hidden_size,
          c.intermediate_size / tp_size,
          c.num_attention_heads / tp_size,
          c.num_key_value_heads / tp_size,
          c.head_dim,
          c.qk_norm,
          compute};
}

LayerActivations carve_layer_activations(Carver& cv, const LayerShape& s, bool own_kv) {
  const int64_t T = s.T, Q = s.H * s.D, KV = s.Hkv * s.D;
  const bool bf16 = s.compute == DType::kBF16;
  LayerActivations a;
  a.ln1 = take_as(cv, s.compute, T, s.C);
  a.rstd1 = take<float>(cv, T, 1);
  // q, k, v are saved in bf16 only when the layer owns its keys and values (training): in
  // decoding k and v are the fp32 cache, and q stays fp32 with them.
  const DType qkv = own_kv ? s.compute : DType::kF32;
  if (s.qk_norm) {
    a.q_raw = take_as(cv, qkv, T, Q);
    a.q_rstd = take<float>(cv, T * s.H, 1);
    a.k_raw = take_as(cv, qkv, T, KV);
    a.k_rstd = take<float>(cv, T * s.Hkv, 1);
  }
  a.q = take_as(cv, qkv, T, Q);
  if (own_kv) {
    a.k = take_as(cv, qkv, T, KV);
    a.v = take_as(cv, qkv, T, KV);
  }
  // Under bf16 only the o projection's bf16 input is saved; the fp32 output of attention is
  // scratch (LayerScratch::att32) and backward widens the bf16 copy again.
  if (!bf16) a.att = take<float>(cv, T, Q);
  a.lse = take<float>(cv, T, s.H);
  a.att_in = bf16 ? take<uint16_t>(cv, T, Q) : a.att;
  a.x_mid = take<float>(cv, T, s.C);
  a.ln2 = take_as(cv, s.compute, T, s.C);
  a.rstd2 = take<float>(cv, T, 1);
  a.gate = take_as(cv, s.compute, T, s.I);
  a.up = take_as(cv, s.compute, T, s.I);
  a.h = take_as(cv, s.compute, T, s.I);
  return a;
}

size_t layer_attention_workspace_bytes(const LayerShape& s, bool backward) {
  const ops::AttentionDims dims{s.H, s.Hkv, s.D, 0};
  const size_t train = ops::attention_workspace_bytes(
      {.dtype = s.compute, .q_rows = s.T, .k_rows = s.T, .forward_only = !backward}, dims);
  if (backward) return train;
  return std::max(
      train, ops::attention_workspace_bytes(
                 {.dtype = DType::kF32, .q_rows = s.T, .k_rows = s.T, .forward_only = true}, dims));
}

LayerScratch carve_layer_scratch(Carver& cv, const LayerShape& s, bool backward) {
  const int64_t T = s.T, Q = s.H * s.D, KV = s.Hkv * s.D;
  LayerScratch g;
  g.attention = ops::take_workspace(cv, layer_attention_workspace_bytes(s, backward));
  g.o32 = take<float>(cv, T, s.C);
  if (s.compute == DType::kBF16) {
    g.h32 = take<float>(cv, T, s.I);
    // att32 serves bf16 decoding only (fp32 q against the fp32 cache); the backward scratch
    // (training, also its forward recomputation) has none.
    if (!backward) g.att32 = take<float>(cv, T, Q);
    g.q32 = take<float>(cv, T, Q);
    g.k32 = take<float>(cv, T, KV);
    g.v32 = take<float>(cv, T, KV);
    g.qkv32 = take<float>(cv, T, Q + 2 * KV);
    // Aliases of buffers that are free while these are live: q_raw is normed into q before
    // attention writes att32, and backward widens q_raw, k_raw into q32, k32, unused there.
    if (s.qk_norm) {
      g.q_raw32 = backward ? g.q32 : g.att32;
      g.k_raw32 = backward ? g.k32 : take<float>(cv, T, KV);
    }
  }
  if (!backward) return g;
  g.dres = take<float>(cv, T, s.C);
  g.dtmp = take<float>(cv, T, s.C);
  g.dln = take<float>(cv, T, s.C);
  g.datt = take<float>(cv, T, Q);
  g.dq = take<float>(cv, T, Q);
  g.dk = take<float>(cv, T, KV);
  g.dv = take<float>(cv, T, KV);
  if (s.qk_norm) {
    g.dq2 = take<float>(cv, T, Q);
    g.dk2 = take<float>(cv, T, KV);
  }
  g.dh = take<float>(cv, T, s.I);
  g.dgate = take<float>(cv, T, s.I);
  g.dup = take<float>(cv, T, s.I);
  if (s.compute == DType::kBF16) {
    g.dy16 = take<uint16_t>(cv, T, std::max({s.I, s.C, Q + 2 * KV}));
    // dgate16 and dup16 are h32's bytes: h32 lives only inside a forward, these only between
    // SwiGLU's backward and the up projection's (a recomputed forward never falls in between).
    if (uint16_t* bits = static_cast<uint16_t*>(g.h32.data)) {  // null while carve() measures
      g.dgate16 = ops::view_of(bits, T, s.I, g.h32.device);
      g.dup16 = ops::view_of(bits + T * s.I, T, s.I, g.h32.device);
    }
  }
  g.norm_sink = take<float>(cv, 1, std::max(s.C, s.D));
  return g;
}

void decoder_layer_forward(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                           const AttentionInputs& attn, const DecoderLayer& w) {
  const int64_t D = w.dims.D;
  // A bf16 ln1 / ln2 is written rounded by the norm itself (no fp32 pass).
  ops::rmsnorm_forward(a.ln1, a.rstd1, x, w.input_norm->value, w.eps);
  // The fp32 projection outputs: column blocks of one stacked product, or each its own buffer
  // (before qk-norm: q_raw, k_raw).
  ops::View q = fp32_of(a.q, s.q32), k = fp32_of(a.k, s.k32), v = fp32_of(a.v, s.v32);
  ops::View q_proj = w.q_norm ? fp32_of(a.q_raw, s.q_raw32) : q;
  ops::View k_proj = w.q_norm ? fp32_of(a.k_raw, s.k_raw32) : k;
  if (const std::optional<StackedLinear> qkv = stacked_qkv(w, a)) {
    const int64_t Q = q.cols, KV = k.cols;
    const ops::View y = s.qkv32.first(x.rows, Q + 2 * KV);
    qkv->forward(y, a.ln1);
    q_proj = y.columns(0, Q);
    k_proj = y.columns(Q, KV);
    v = y.columns(Q + KV, KV);
    if (!w.q_norm) q = q_proj, k = k_proj;
  } else {
    w.q.forward(q_proj, a.ln1);
    w.k.forward(k_proj, a.ln1);
    w.v.forward(v, a.ln1);
  }
  if (w.q_norm) {
    const ops::View q_raw = keep_rounded(a.q_raw, q_proj, s.q_raw32);
    const ops::View k_raw = keep_rounded(a.k_raw, k_proj, s.k_raw32);
    ops::rmsnorm_forward(per_head(q, D), a.q_rstd, per_head(q_raw, D), w.q_norm->value, w.eps);
    ops::rmsnorm_forward(per_head(k, D), a.k_rstd, per_head(k_raw, D), w.k_norm->value, w.eps);
  }
  ops::rope_forward(q, attn.cos, attn.sin);
  ops::rope_forward(k, attn.cos, attn.sin);
  if (a.q.dtype == DType::kBF16) {
    // bf16 training (the layer's own k, v, which attn names): attention reads the bf16 q, k, v
    // and writes the o projection's bf16 input itself.
    ops::cast(a.q, q);
    ops::cast(a.k, k);
    ops::cast(a.v, v);
    ops::attention_forward(a.att_in, a.lse, a.q, attn.k_all, attn.v_all, attn.segments, w.dims,
                           s.attention);
  } else {
    // fp32 q against attn's keys and values (the layer's rows, or the decode cache); under bf16
    // decoding attention writes scratch and att_in is its bf16 copy.
    const ops::View att = a.att.empty() ? s.att32 : a.att;
    ops::attention_forward(att, a.lse, q, attn.k_all, attn.v_all, attn.segments, w.dims,
                           s.attention);
    if (a.att_in.data != att.data) ops::cast(a.att_in, att);
  }
  // o writes scratch that stays in cache (not x_mid, fresh memory every layer); the residual
  // add and the norm after it are one pass that writes x_mid.
  const ops::View o = s.o32.first(x.rows, x.cols);
  w.o.forward(o, a.att_in);
  ops::add_rmsnorm_forward(a.x_mid, a.ln2, a.rstd2, o, x, w.post_norm->value, w.eps);
  // Under bf16 gate and up go through h32 (free until SwiGLU writes it) into their bf16
  // copies, which SwiGLU reads.
  auto project = [&](const Linear& lin, ops::View saved) {
    const ops::View y = fp32_of(saved, s.h32);
    lin.forward(y, a.ln2);
    if (y.data != saved.data) ops::cast(saved, y);
  };
  project(w.gate, a.gate);
  project(w.up, a.up);
  ops::swiglu_forward(a.h, a.gate, a.up);  // bf16 h: rounded by SwiGLU itself
  w.down.forward(out, a.h);
  ops::add(out, a.x_mid);
}

void decoder_layer_backward(LayerScratch& g, const LayerActivations& a, ops::View x,
                            const AttentionInputs& attn, const DecoderLayer& w) {
  const int64_t D = w.dims.D;
  // The bf16 copy of a linear's output gradient (bf16 compute only).
  auto dy16 = [&](const ops::View& dy) {
    return g.dy16.empty() ? g.dy16 : g.dy16.first(dy.rows, dy.cols);
  };
  // MLP: g.dres is d(layer output).
  w.down.backward(g.dh, g.dres, a.h, dy16(g.dres));
  // Under bf16 gate and up read their output gradients only rounded (unless a bias gradient
  // needs fp32): SwiGLU's backward writes them rounded, in the same pass.
  const bool rounded = !g.dgate16.empty() && w.gate.takes_rounded_dy() && w.up.takes_rounded_dy();
  const ops::View dgate = rounded ? g.dgate16 : g.dgate, dup = rounded ? g.dup16 : g.dup;
  ops::swiglu_backward(dgate, dup, g.dh, a.gate, a.up);
  w.gate.backward(g.dln, dgate, a.ln2, dy16(dgate));
  w.up.backward(g.dln, dup, a.ln2, dy16(dup), true);
  sum_over_tp(w, g.dln);
  ops::rmsnorm_backward(g.dtmp, grad_or_sink(*w.post_norm, g), g.dln, a.x_mid, a.rstd2,
                        w.post_norm->value);
  // d x_mid; under bf16 the add also writes its rounding, o's bf16 output gradient.
  const bool round_dres = !g.dy16.empty() && w.o.takes_rounded_dy();
  const ops::View dres16 = round_dres ? dy16(g.dres) : ops::View{};
  ops::add(g.dres, g.dtmp, dres16);
  // Attention.
  w.o.backward(g.datt, round_dres ? dres16 : g.dres, a.att_in, dy16(g.dres));
  // Under bf16 the saved bf16 q, k, v and output (att_in) go to attention as they are.
  const ops::View att = a.q.dtype == DType::kBF16 ? a.att_in : a.att;
  ops::attention_backward(g.dq, g.dk, g.dv, g.datt, att, a.lse, a.q, attn.k_all, attn.v_all,
                          attn.segments, w.dims, g.attention);
  ops::rope_backward(g.dq, attn.cos, attn.sin);
  ops::rope_backward(g.dk, attn.cos, attn.sin);
  ops::View dq = g.dq, dk = g.dk;
  if (w.q_norm) {
    ops::rmsnorm_backward(per_head(g.dq2, D), grad_or_sink(*w.q_norm, g), per_head(g.dq, D),
                          per_head(widened(a.q_raw, g.q_raw32), D), a.q_rstd, w.q_norm->value);
    ops::rmsnorm_backward(per_head(g.dk2, D), grad_or_sink(*w.k_norm, g), per_head(g.dk, D),
                          per_head(widened(a.k_raw, g.k_raw32), D), a.k_rstd, w.k_norm->value);
    dq = g.dq2;
    dk = g.dk2;
  }
  if (const std::optional<StackedLinear> qkv = stacked_qkv(w, a)) {
    // The three output gradients rounded side by side, as the stacked forward wrote them.
    const int64_t Q = dq.cols, KV = dk.cols;
    const ops::View dy = g.dy16.first(dq.rows, Q + 2 * KV);
    ops::cast(dy.columns(0, Q), dq);
    ops::cast(dy.columns(Q, KV), dk);
    ops::cast(dy.columns(Q + KV, KV), g.dv);
    qkv->backward(g.dln, dy, a.ln1);
  } else {
    w.q.backward(g.dln, dq, a.ln1, dy16(dq));
    w.k.backward(g.dln, dk, a.ln1, dy16(dk), true);
    w.v.backward(g.dln, g.dv, a.ln1, dy16(g.dv), true);
  }
  sum_over_tp(w, g.dln);
  ops::rmsnorm_backward(g.dtmp, grad_or_sink(*w.input_norm, g), g.dln, x, a.rstd1,
                        w.input_norm->value);
  ops::add(g.dres, g.dtmp);  // d(layer input)
}

}  // namespace sft::model
