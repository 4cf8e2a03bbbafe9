// AttentionBlock: a decoder layer's self-attention from its normed input to the o projection's
// output (the residual add is the layer's): q, k, v = linear(ln) [→ per-head q_norm, k_norm];
// rope(q, k) on each head's first rotary_dims dims (all, part, or none); att = attention(q, k,
// v) over packed documents with the plan's score map (dims.scale, dims.softcap) [→ the sinks
// joining each softmax: ops::attention_sinks_*]; y = o(att).
//
// Two variants side by side, chosen by the saved q's dtype:
// - fp32 q, k, v (fp32 training, and decoding under either compute: k and v are the fp32
//   cache): the projections write the saved views, attention runs in fp32; under bf16 compute
//   its output is rounded into att_in, the o projection's bf16 input.
// - bf16 q, k, v (bf16 training): the projections write fp32 scratch — one stacked q/k/v
//   product where the three stack (StackedLinear) — which is rounded into the saved views as
//   torch autocast rounds them (4-bit bases write v, and q_raw, k_raw before a qk-norm,
//   rounded themselves: Linear::writes_rounded_output), the norms and RoPE run on the rounded
//   values, and attention reads the bf16 q, k, v and writes att_in itself. Where the plan says so
//   the q/k norms' outputs are rounded too (Gemma 3, OLMo 2: their norms return the bf16 input's
//   dtype).
// Saved (Saved): q_raw, k_raw and their rstd (qk-norm only), q, k, v after norm and RoPE, att
// (fp32 variant), lse, att_in. Backward reads them and the layer's ln. With sinks, attention's
// output passes through fp32 (att, or att32 under bf16) before att_in is rounded.
// Signature rule: outputs first, then saved activations, inputs, weights; parameter grads
// accumulate (+=), activation grads overwrite (=).
// Dimensions: T tokens, C hidden, H heads, Hkv kv heads, D head dim, Q = H·D, KV = Hkv·D.
#pragma once

#include <span>

#include "core/shard_group.h"
#include "model/blocks/block_grad_scratch.h"
#include "model/blocks/layer_shape.h"
#include "model/blocks/norm_block.h"
#include "model/linear.h"
#include "model/parameters.h"
#include "ops/ops.h"
#include "ops/workspace.h"

namespace sft::model {

// Where attention reads keys and values from and how the rows pair up.
// Llama 4's attention scaling (Ministral 3): each query times 1 + beta·log(1 + ⌊position /
// period⌋) after RoPE, as Ministral3Attention scales query_states; beta 0 = none.
struct QueryScaling {
  double beta = 0;
  int64_t period = 0;
};

struct AttentionInputs {
  ops::View k_all, v_all;  // (Tk, Hkv·D), including this call's rows
  std::span<const ops::AttentionSegment> segments;
  ops::View cos, sin;  // (T, D/2) rope tables of this call's rows
};

// Which pass a layer's scratch serves: what a training forward needs, a training backward
// (which also recomputes the forward under gradient checkpointing), or decoding.
enum class LayerPass { kTrainForward, kTrainBackward, kDecode };

struct AttentionBlock {
  Linear q, k, v, o;
  RmsNormBlock q_norm, k_norm;           // (D) Qwen3's per-head RMSNorm before RoPE, or unbound
  bool qk_norm_over_projection = false;  // OLMo 2: q_norm (H·D), k_norm (Hkv·D) over all heads
  // bf16 training: the norms' outputs rounded to bf16 before RoPE, and their gradient before
  // the norms' backward, as autocast rounds them (LayerPlan::qk_norm_output_rounded).
  bool qk_norm_output_rounded = false;
  // This rank's heads, head dim, the layer's sliding window and score map.
  ops::AttentionDims dims;
  int64_t rotary_dims = 0;           // the dims of a head RoPE turns (0: no RoPE)
  const Parameter* sinks = nullptr;  // (H) this rank's heads' sink logits, or null
  QueryScaling query_scaling;        // Ministral 3: queries scaled by position after RoPE
  // Tensor parallelism: q, k, v are column-parallel, so ln's gradient is summed over this group
  // (o sums its output itself); null without.
  ShardGroup* tp_group = nullptr;

  struct Saved {
    ops::View q_raw, q_rstd;  // (T, Q) compute dtype, (T·H, 1): before q_norm (qk-norm only)
    ops::View k_raw, k_rstd;  // (T, KV), (T·Hkv, 1)
    ops::View q, k, v;        // (T, Q), (T, KV) ×2 after norm and RoPE; k, v empty in decoding
    ops::View att, lse;       // (T, Q) f32 (fp32 training only), (T, H)
    ops::View att_in;         // (T, Q) the o projection's input: att itself, or bf16
  };
  struct Scratch {
    // Forward, bf16 compute: fp32 values of the bf16-saved projection outputs.
    ops::View qkv32;             // (T, Q + 2 KV) the stacked q, k, v product
    ops::View q32, k32, v32;     // (T, Q), (T, KV) ×2 the unstacked ones (and q, k after norm)
    ops::View q_raw32, k_raw32;  // (T, Q), (T, KV) qk-norm: the rounded q_raw, k_raw densely
                                 // (forward), or widened from the saved bf16 (backward)
    ops::View att32;             // (T, Q) f32 attention output of bf16 decoding
    // Backward.
    ops::View datt, dq, dk, dv;  // (T, Q), (T, KV) ×2
    ops::View dq2, dk2;          // (T, Q), (T, KV) before the norms' backward (qk-norm)
    // ops::attention_*'s own scratch (tiles, per-worker accumulators), sized for the pass.
    ops::Workspace kernel;
  };

  static Saved carve_saved(Carver& cv, const LayerShape& s, bool own_kv);
  static Scratch carve_scratch(Carver& cv, const LayerShape& s, LayerPass pass);
  // Scratch::kernel's size: attention in the compute dtype over T rows (training; with the
  // backward, both passes), or fp32 forward only (decoding: q stays fp32 against the cache; the
  // need does not depend on the key rows).
  static size_t kernel_workspace_bytes(const LayerShape& s, LayerPass pass);

  // y (T, C) f32 = o(attention(...)); saved; ln (T, C) the normed input, compute dtype.
  void forward(ops::View y, Saved& a, const Scratch& s, ops::View ln,
               const AttentionInputs& in) const;
  // dln (T, C) f32 = (summed over tp_group); dy (T, C): d(y) in f32, or bf16 already rounded
  // when o.takes_rounded_dy() under bf16 compute; ln as in forward.
  void backward(ops::View dln, const Scratch& s, const BlockGradScratch& g, const Saved& a,
                ops::View dy, ops::View ln, const AttentionInputs& in) const;

 private:
  // The rows a q/k norm normalises: each head's (T·NH, D), or each token's (T, NH·D), and their
  // rstd (carved for per-head rows: T·NH ≥ T).
  ops::View norm_rows(const ops::View& v) const;
  ops::View norm_rstd(const ops::View& rstd, const ops::View& v) const;
  void rope_forward(ops::View x, const AttentionInputs& in) const;
  void rope_backward(ops::View dx, const AttentionInputs& in) const;
  // Queries (or their gradient) times their position's QueryScaling factor, in place.
  void scale_queries(ops::View q, const AttentionInputs& in) const;
  // att = attention(a.q, in's keys and values) [with the sinks]; a.lse saved.
  void attend(ops::View att, Saved& a, const Scratch& s, const AttentionInputs& in) const;
  void forward_fp32_qkv(Saved& a, const Scratch& s, ops::View ln, const AttentionInputs& in) const;
  void forward_bf16_qkv(Saved& a, const Scratch& s, ops::View ln, const AttentionInputs& in) const;
};

}  // namespace sft::model
