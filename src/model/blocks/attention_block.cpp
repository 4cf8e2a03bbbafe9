// AttentionBlock: carve plans, the fp32 and bf16 forward variants, and the backward. See
// attention_block.h.
#include "model/blocks/attention_block.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "model/blocks/shared_scratch.h"

namespace sft::model {

namespace {

// Per-head views for q_norm / k_norm: (T, NH·D) as (T·NH, D).
ops::View per_head(const ops::View& v, int64_t D) {
  return v.reshaped(v.numel() / D, D);
}

// `saved` (bf16) receives `value` rounded; returns the fp32 view the block goes on with: value
// rounded in place when it is dense, else (a column block of the stacked product) `dense`
// holding the rounded values (the per-head norms read dense rows).
ops::View keep_rounded(ops::View saved, ops::View value, ops::View dense) {
  ops::cast(saved, value);
  const ops::View rounded = value.dense() ? value : dense.first(value.rows, value.cols);
  ops::cast(rounded, saved);
  return rounded;
}

// x (fp32, dense) rounded to bf16 in place, through `staging` (bf16, x's shape).
void round_in_place(ops::View x, ops::View staging) {
  ops::cast(staging, x);
  ops::cast(x, staging);
}

// The saved bf16 values widened into `scratch`, or the fp32 saved view itself.
ops::View widened(const ops::View& saved, const ops::View& scratch) {
  if (saved.dtype != DType::kBF16) return saved;
  const ops::View out = scratch.first(saved.rows, saved.cols);
  ops::cast(out, saved);
  return out;
}

// q, k and v as one product (StackedLinear) when the block trains in bf16 (the only variant
// with fp32 scratch in between; fp32 training and decoding write their own views) and they
// stack.
std::optional<StackedLinear> stacked_qkv(const AttentionBlock& w, const AttentionBlock::Saved& a) {
  if (a.q.dtype != DType::kBF16 || a.k.empty()) return std::nullopt;
  return StackedLinear::of({&w.q, &w.k, &w.v});
}

}  // namespace

AttentionBlock::Saved AttentionBlock::carve_saved(Carver& cv, const LayerShape& s, bool own_kv) {
  const int64_t T = s.T, Q = s.q_width(), KV = s.kv_width();
  // q, k, v are saved in bf16 only when the layer owns its keys and values (training): in
  // decoding k and v are the fp32 cache, and q stays fp32 with them.
  const DType qkv = own_kv ? s.compute : DType::kF32;
  Saved a;
  if (s.qk_norm) {
    a.q_raw = take_view(cv, qkv, T, Q);
    a.q_rstd = take_f32(cv, T * s.H, 1);
    a.k_raw = take_view(cv, qkv, T, KV);
    a.k_rstd = take_f32(cv, T * s.Hkv, 1);
  }
  a.q = take_view(cv, qkv, T, Q);
  if (own_kv) {
    a.k = take_view(cv, qkv, T, KV);
    a.v = take_view(cv, qkv, T, KV);
  }
  // Under bf16 only the o projection's bf16 input is saved (attention writes it; backward reads
  // it as attention's output); the fp32 output of bf16 decoding is scratch (att32).
  if (!s.bf16()) a.att = take_f32(cv, T, Q);
  a.lse = take_f32(cv, T, s.H);
  a.att_in = s.bf16() ? take_view(cv, DType::kBF16, T, Q) : a.att;
  return a;
}

size_t AttentionBlock::kernel_workspace_bytes(const LayerShape& s, LayerPass pass) {
  // The window and scale do not change the bytes; the soft-cap does (attention.h).
  const ops::AttentionDims dims{.H = s.H, .Hkv = s.Hkv, .D = s.D, .softcap = s.softcap};
  const bool decode = pass == LayerPass::kDecode;
  return ops::attention_workspace_bytes({.dtype = decode ? DType::kF32 : s.compute,
                                         .q_rows = s.T,
                                         .k_rows = s.T,
                                         .forward_only = pass != LayerPass::kTrainBackward},
                                        dims);
}

AttentionBlock::Scratch AttentionBlock::carve_scratch(Carver& cv, const LayerShape& s,
                                                      LayerPass pass) {
  const int64_t T = s.T, Q = s.q_width(), KV = s.kv_width();
  Scratch g;
  g.kernel = ops::take_workspace(cv, kernel_workspace_bytes(s, pass));
  if (s.bf16()) {
    if (pass == LayerPass::kDecode || s.sinks) g.att32 = take_f32(cv, T, Q);
    if (pass != LayerPass::kDecode) {
      g.qkv32 = take_f32(cv, T, Q + 2 * KV);
      g.q32 = take_f32(cv, T, Q);
      g.k32 = take_f32(cv, T, KV);
      g.v32 = take_f32(cv, T, KV);
      if (s.qk_norm) {
        g.q_raw32 = take_f32(cv, T, Q);
        g.k_raw32 = take_f32(cv, T, KV);
      }
    }
  }
  if (pass != LayerPass::kTrainBackward) return g;
  g.datt = take_f32(cv, T, Q);
  g.dq = take_f32(cv, T, Q);
  g.dk = take_f32(cv, T, KV);
  g.dv = take_f32(cv, T, KV);
  if (s.qk_norm) {
    g.dq2 = take_f32(cv, T, Q);
    g.dk2 = take_f32(cv, T, KV);
  }
  return g;
}

void AttentionBlock::forward(ops::View y, Saved& a, const Scratch& s, ops::View ln,
                             const AttentionInputs& in) const {
  poison_if_checking({s.qkv32, s.q32, s.k32, s.v32, s.q_raw32, s.k_raw32, s.att32});
  if (a.q.dtype == DType::kBF16)
    forward_bf16_qkv(a, s, ln, in);
  else
    forward_fp32_qkv(a, s, ln, in);
  o.forward(y, a.att_in);
}

ops::View AttentionBlock::norm_rows(const ops::View& v) const {
  return qk_norm_over_projection ? v : per_head(v, dims.D);
}

ops::View AttentionBlock::norm_rstd(const ops::View& rstd, const ops::View& v) const {
  return qk_norm_over_projection ? rstd.first(v.rows, 1) : rstd;
}

void AttentionBlock::rope_forward(ops::View x, const AttentionInputs& in) const {
  if (rotary_dims > 0) ops::rope_forward(x, in.cos, in.sin, dims.D);
}

void AttentionBlock::rope_backward(ops::View dx, const AttentionInputs& in) const {
  if (rotary_dims > 0) ops::rope_backward(dx, in.cos, in.sin, dims.D);
}

void AttentionBlock::scale_queries(ops::View q, const AttentionInputs& in) const {
  if (query_scaling.beta == 0) return;
  const int64_t period = query_scaling.period;
  for (const ops::AttentionSegment& seg : in.segments) {
    // Query i of the segment sits at position q_offset + i; the factor is constant over each
    // run of `period` positions and 1 over the first, so short documents are untouched.
    for (int64_t block = seg.q_offset / period + (seg.q_offset / period == 0);
         block * period < seg.q_offset + seg.q_len; ++block) {
      const int64_t first = std::max(block * period, seg.q_offset) - seg.q_offset;
      const int64_t last = std::min((block + 1) * period, seg.q_offset + seg.q_len) - seg.q_offset;
      // In fp32, as transformers computes the factor before casting it to the queries' dtype.
      const float factor = 1.0f + static_cast<float>(query_scaling.beta) *
                                      std::log(1.0f + static_cast<float>(block));
      const ops::View rows = q.row_range(seg.q_begin + first, last - first);
      if (rows.dense()) {
        ops::scale(rows, factor);
      } else {  // q is a column block of the stacked q/k/v product: each row is contiguous
        for (int64_t r = 0; r < rows.rows; ++r) ops::scale(rows.row_range(r, 1), factor);
      }
    }
  }
}

void AttentionBlock::attend(ops::View att, Saved& a, const Scratch& s,
                            const AttentionInputs& in) const {
  ops::attention_forward(att, a.lse, a.q, in.k_all, in.v_all, in.segments, dims, s.kernel);
  if (sinks) ops::attention_sinks_forward(att, a.lse, sinks->value);
}

void AttentionBlock::forward_fp32_qkv(Saved& a, const Scratch& s, ops::View ln,
                                      const AttentionInputs& in) const {
  q.forward(q_norm.bound() ? a.q_raw : a.q, ln);
  k.forward(k_norm.bound() ? a.k_raw : a.k, ln);
  v.forward(a.v, ln);
  if (q_norm.bound()) {
    q_norm.forward(norm_rows(a.q), norm_rstd(a.q_rstd, a.q), norm_rows(a.q_raw));
    k_norm.forward(norm_rows(a.k), norm_rstd(a.k_rstd, a.k), norm_rows(a.k_raw));
  }
  rope_forward(a.q, in);
  rope_forward(a.k, in);
  scale_queries(a.q, in);
  // Against in's keys and values (the layer's own rows, or the decode cache); under bf16
  // decoding attention writes scratch and att_in is its bf16 copy.
  const ops::View att = a.att.empty() ? s.att32.first(a.q.rows, a.q.cols) : a.att;
  attend(att, a, s, in);
  if (a.att_in.data != att.data) ops::cast(a.att_in, att);
}

void AttentionBlock::forward_bf16_qkv(Saved& a, const Scratch& s, ops::View ln,
                                      const AttentionInputs& in) const {
  const int64_t T = a.q.rows, Q = a.q.cols, KV = a.k.cols;
  // The fp32 projection outputs: column blocks of one stacked product, or each its own buffer;
  // with qk-norm the projections are q_raw, k_raw and the norms write q32, k32.
  ops::View qf = s.q32.first(T, Q), kf = s.k32.first(T, KV), vf = s.v32.first(T, KV);
  ops::View q_proj = q_norm.bound() ? s.q_raw32.first(T, Q) : qf;
  ops::View k_proj = k_norm.bound() ? s.k_raw32.first(T, KV) : kf;
  // Projections that write their saved bf16 copy themselves (4-bit bases: the product rounds
  // its own output) where the rounded value is all that is read after them: v, and q_raw,
  // k_raw before their norms. q and k without a norm go to RoPE in fp32, so they stay fp32.
  bool q_rounded = false, k_rounded = false, v_rounded = false;
  if (const std::optional<StackedLinear> qkv = stacked_qkv(*this, a)) {
    const ops::View y = s.qkv32.first(T, Q + 2 * KV);
    qkv->forward(y, ln);
    q_proj = y.columns(0, Q);
    k_proj = y.columns(Q, KV);
    vf = y.columns(Q + KV, KV);
    if (!q_norm.bound()) qf = q_proj, kf = k_proj;
  } else {
    q_rounded = q_norm.bound() && q.writes_rounded_output();
    k_rounded = k_norm.bound() && k.writes_rounded_output();
    v_rounded = v.writes_rounded_output();
    q.forward(q_rounded ? a.q_raw : q_proj, ln);
    k.forward(k_rounded ? a.k_raw : k_proj, ln);
    v.forward(v_rounded ? a.v : vf, ln);
  }
  if (q_norm.bound()) {
    // The norms read the rounded values in fp32: widened from the saved copy the product
    // wrote, or the fp32 product rounded into it and back.
    const ops::View q_raw =
        q_rounded ? widened(a.q_raw, s.q_raw32) : keep_rounded(a.q_raw, q_proj, s.q_raw32);
    const ops::View k_raw =
        k_rounded ? widened(a.k_raw, s.k_raw32) : keep_rounded(a.k_raw, k_proj, s.k_raw32);
    q_norm.forward(norm_rows(qf), norm_rstd(a.q_rstd, qf), norm_rows(q_raw));
    k_norm.forward(norm_rows(kf), norm_rstd(a.k_rstd, kf), norm_rows(k_raw));
    // RoPE turns the norms' bf16 outputs (a.q, a.k stage them; RoPE's result replaces them).
    if (qk_norm_output_rounded) {
      round_in_place(qf, a.q);
      round_in_place(kf, a.k);
    }
  }
  rope_forward(qf, in);
  rope_forward(kf, in);
  scale_queries(qf, in);
  ops::cast(a.q, qf);
  ops::cast(a.k, kf);
  if (!v_rounded) ops::cast(a.v, vf);
  // in.k_all, in.v_all are a.k, a.v (training owns its keys and values). Attention writes the
  // bf16 att_in itself, but with sinks an fp32 output they rescale, then rounded once.
  const ops::View att = sinks ? s.att32.first(T, Q) : a.att_in;
  attend(att, a, s, in);
  if (att.data != a.att_in.data) ops::cast(a.att_in, att);
}

void AttentionBlock::backward(ops::View dln, const Scratch& s, const BlockGradScratch& g,
                              const Saved& a, ops::View dy, ops::View ln,
                              const AttentionInputs& in) const {
  poison_if_checking({s.datt, s.dq, s.dk, s.dv, s.dq2, s.dk2, s.q_raw32, s.k_raw32});
  o.backward(s.datt, dy, a.att_in, dy.dtype == DType::kBF16 ? ops::View{} : g.rounded(dy));
  // Under bf16 the saved bf16 q, k, v and output (att_in) go to attention as they are.
  const ops::View att = a.q.dtype == DType::kBF16 ? a.att_in : a.att;
  // The sinks' gradient reads d(att) and att as attention's backward does; their lse is a.lse.
  if (sinks)
    ops::attention_sinks_backward(g.grad_or_sink(*sinks), s.datt, att, a.lse, sinks->value);
  ops::attention_backward(s.dq, s.dk, s.dv, s.datt, att, a.lse, a.q, in.k_all, in.v_all,
                          in.segments, dims, s.kernel);
  scale_queries(s.dq, in);
  rope_backward(s.dq, in);
  rope_backward(s.dk, in);
  ops::View dq = s.dq, dk = s.dk;
  if (q_norm.bound()) {
    // The gradient autocast hands the norms' bf16 outputs is bf16 (training in bf16 only).
    if (qk_norm_output_rounded && a.q.dtype == DType::kBF16) {
      round_in_place(s.dq, g.rounded(s.dq));
      round_in_place(s.dk, g.rounded(s.dk));
    }
    q_norm.backward(norm_rows(s.dq2), norm_rows(s.dq), norm_rows(widened(a.q_raw, s.q_raw32)),
                    norm_rstd(a.q_rstd, s.dq));
    k_norm.backward(norm_rows(s.dk2), norm_rows(s.dk), norm_rows(widened(a.k_raw, s.k_raw32)),
                    norm_rstd(a.k_rstd, s.dk));
    dq = s.dq2;
    dk = s.dk2;
  }
  if (const std::optional<StackedLinear> qkv = stacked_qkv(*this, a)) {
    // The three output gradients rounded side by side, as the stacked forward wrote them.
    const int64_t Q = dq.cols, KV = dk.cols;
    const ops::View d16 = g.rounded(dq.rows, Q + 2 * KV);
    ops::cast(d16.columns(0, Q), dq);
    ops::cast(d16.columns(Q, KV), dk);
    ops::cast(d16.columns(Q + KV, KV), s.dv);
    qkv->backward(dln, d16, ln);
  } else {
    q.backward(dln, dq, ln, g.rounded(dq));
    k.backward(dln, dk, ln, g.rounded(dk), true);
    v.backward(dln, s.dv, ln, g.rounded(s.dv), true);
  }
  if (tp_group) tp_group->sum({dln.as<float>(), static_cast<size_t>(dln.numel())});
}

}  // namespace sft::model
