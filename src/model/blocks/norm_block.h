// Norm blocks: an RMSNorm around a layer's branches — before attention and the MLP (Llama's
// input_layernorm and post_attention_layernorm), on their outputs (OLMo 2's and Gemma's post
// norms) — and the same norm fused with the residual add before it.
// Saved: the normed output (compute dtype: a bf16 output is rounded by the norm itself) and
// rstd (T, 1) f32; backward also reads the norm's input, which the layer keeps.
// (1 + w) norms (Gemma): the block scales by 1 + w, written before each use into the model's
// one norm-weight scratch ((1, max(C, D)) f32: norms run one at a time); the kernels see a
// plain weight, and the gradient with respect to w is the one with respect to 1 + w.
// Signature rule: outputs first, then saved activations, inputs, weights; the weight gradient
// accumulates (+=), dx overwrites (=). A frozen weight (LoRA) gets no gradient: the kernel skips
// that pass over the rows.
#pragma once

#include "model/blocks/block_grad_scratch.h"
#include "model/parameters.h"
#include "ops/view.h"

namespace sft::model {

struct RmsNormBlock {
  const Parameter* weight = nullptr;  // (C), or (D) for q/k norms; null: the layer has no norm here
  double eps = 1e-6;
  float weight_offset = 0;          // 1: scales by (1 + w)
  ops::View offset_weight_scratch;  // (1, ≥ C) f32 when weight_offset is set

  bool bound() const { return weight != nullptr; }
  // The weight the kernels apply: w, or 1 + w written into offset_weight_scratch.
  ops::View applied_weight() const;

  // out (T, C) compute dtype =, rstd (T, 1) =; x (T, C) f32.
  void forward(ops::View out, ops::View rstd, ops::View x) const;
  // The residual add and this norm in one pass (same bits as ops::add, then forward):
  // sum (T, C) = a + b, out and rstd as forward(out, rstd, sum) computes them.
  void add_forward(ops::View sum, ops::View out, ops::View rstd, ops::View a, ops::View b) const;
  // dx (T, C) f32 =; dout (T, C) f32; x and rstd as in forward.
  void backward(ops::View dx, ops::View dout, ops::View x, ops::View rstd) const;
};

}  // namespace sft::model
