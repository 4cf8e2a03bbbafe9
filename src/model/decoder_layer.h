// One Llama / Mistral / Qwen2 / Qwen3 decoder layer as a list of ops:: calls on views —
// training forward, its backward, and (the same forward) decoding against a KV cache:
//   ln1 = rmsnorm(x); q, k, v = linear(ln1) (one stacked product where they stack: bf16
//   training, no biases or adapters) [→ q_norm, k_norm]; rope(q, k);
//   att = attention(q, k, v); x_mid = x + o(att), ln2 = rmsnorm(x_mid) (one fused op);
//   out = x_mid + down(swiglu(gate(ln2), up(ln2)))
// Under bf16 compute the inputs of the seven projections (ln1, att, ln2, h) are kept in bf16
// and multiplied with the weights' bf16 copies, fp32 accumulation. The saved projection outputs
// (q, k, v — and q_raw, k_raw before qk-norm — gate, up) are rounded to bf16 as torch autocast
// rounds them, and the layer computes with the rounded values: attention reads the bf16 q, k, v
// and writes its bf16 output (ops/attention.h, bf16), the norms and SwiGLU run in fp32 scratch;
// what stays fp32 is the residual stream (x_mid), the norms' statistics and attention's
// log-sum-exp. Decoding keeps q, k, v in fp32 (k, v are the cache) and attention in fp32.
// Signature rule: outputs first, then saved activations, inputs, weights; parameter grads
// accumulate (+=), activation grads overwrite (=).
// Dimensions: T tokens, C hidden, I intermediate, H heads, Hkv kv heads, D head dim.
#pragma once

#include <span>

#include "core/arena.h"
#include "model/config.h"
#include "model/linear.h"
#include "model/parameters.h"
#include "model/tensor_parallel.h"
#include "ops/ops.h"

namespace sft::model {

struct DecoderLayer {
  Linear q, k, v, o, gate, up, down;
  const Parameter* input_norm = nullptr;  // (C)
  const Parameter* post_norm = nullptr;   // (C)
  const Parameter* q_norm = nullptr;      // (D) Qwen3, else null
  const Parameter* k_norm = nullptr;      // (D)
  ops::AttentionDims dims;  // this rank's heads, head dim and the layer's sliding window
  double eps = 1e-6;
  // Tensor parallelism: the group the input gradients of the column-parallel projections
  // (q, k, v into ln1; gate, up into ln2) are summed over; null without.
  ShardGroup* tp_group = nullptr;

  // params holds this rank's slices (tensor_parallel.h); o and down then sum over tp.group.
  static DecoderLayer bind(const ParameterSet& params, const ModelConfig& config, int layer,
                           const TensorParallel& tp = {});
};

// Activations of one layer over T tokens (views into an activation arena). k and v are where
// this call's keys and values go: the layer's own rows in training, the cache rows in decoding.
struct LayerActivations {
  ops::View ln1, rstd1;     // (T, C) compute dtype, (T, 1)
  ops::View q_raw, q_rstd;  // (T, H·D) compute dtype, (T·H, 1) before q_norm (qk_norm only)
  ops::View k_raw, k_rstd;  // (T, Hkv·D) compute dtype, (T·Hkv, 1)
  ops::View q, k, v;        // (T, H·D), (T, Hkv·D) ×2 compute dtype, after norm and rope
  ops::View att, lse;       // (T, H·D) f32 (empty under bf16: att_in is kept), (T, H)
  ops::View att_in;         // (T, H·D) the o projection's input (att itself, or bf16)
  ops::View x_mid;          // (T, C) residual after attention
  ops::View ln2, rstd2;     // (T, C) compute dtype, (T, 1)
  ops::View gate, up, h;    // (T, I) compute dtype
};

// Scratch of one forward or backward call, shared by all layers (never saved).
struct LayerScratch {
  ops::View o32;               // (T, C) f32 the o projection's output (forward)
  ops::View h32;               // (T, I) f32 the gate and up projections' outputs under bf16
  ops::View dres, dtmp, dln;   // (T, C)
  ops::View datt, dq, dk, dv;  // (T, H·D), (T, Hkv·D) ×2
  ops::View dq2, dk2;          // (T, H·D), (T, Hkv·D) before rope's inverse (qk_norm)
  ops::View dh, dgate, dup;    // (T, I)
  ops::View dy16;  // (T, max(I, C, (H + 2 Hkv)·D)) bf16 gradient of a linear's output, or of
                   // the stacked q, k, v
  ops::View dgate16, dup16;  // (T, I) bf16: dgate, dup as SwiGLU's backward rounds them
                             // (backward only; they alias h32)
  ops::View att32;      // (T, H·D) f32 attention output of bf16 decoding (forward scratch only)
  ops::View norm_sink;  // (1, max(C, D)) the discarded weight gradient of a frozen norm (LoRA)
  // Under bf16: fp32 values of the bf16-saved projection outputs (some alias other scratch).
  ops::View q32, k32, v32;     // (T, H·D), (T, Hkv·D) ×2
  ops::View qkv32;             // (T, (H + 2 Hkv)·D) the stacked q, k, v product (StackedLinear)
  ops::View q_raw32, k_raw32;  // (T, H·D), (T, Hkv·D) qk_norm only
  ops::Workspace attention;    // ops::attention_*'s (attention_workspace_bytes of T rows)
};

// A norm weight's gradient, or the scratch sink when the weight is frozen (no grad view).
inline ops::View grad_or_sink(const Parameter& p, const LayerScratch& s) {
  return p.grad.empty() ? s.norm_sink.first(1, p.value.cols) : p.grad;
}

struct LayerShape {
  int64_t T = 0, C = 0, I = 0, H = 0, Hkv = 0, D = 0;
  bool qk_norm = false;
  DType compute = DType::kF32;  // kF32 or kBF16
  // This rank's share under tensor parallelism: I, H and Hkv divided by tp_size.
  static LayerShape of(const ModelConfig& config, int64_t tokens, DType compute, int tp_size = 1);
};

// Carves one layer's activations; k and v are left empty when `own_kv` is false (decoding
// points them at the cache).
LayerActivations carve_layer_activations(Carver& cv, const LayerShape& s, bool own_kv = true);
LayerScratch carve_layer_scratch(Carver& cv, const LayerShape& s, bool backward);
// The attention workspace carve_layer_scratch carves: training runs attention in the compute
// dtype over T rows (with backward: both passes); the forward scratch also serves decoding,
// fp32 forward only against the cache (its need does not depend on the key rows).
size_t layer_attention_workspace_bytes(const LayerShape& s, bool backward);

// Where attention reads keys and values from and how the rows pair up.
struct AttentionInputs {
  ops::View k_all, v_all;  // (Tk, Hkv·D), including this call's rows
  std::span<const ops::AttentionSegment> segments;
  ops::View cos, sin;  // (T, D/2) rope tables of this call's rows
};

// out (T, C) =; acts saved; x (T, C) the layer input.
void decoder_layer_forward(ops::View out, LayerActivations& acts, LayerScratch& scratch,
                           ops::View x, const AttentionInputs& attn, const DecoderLayer& w);

// scratch.dres holds d(out) on entry and d(x) on return; weight grads +=.
void decoder_layer_backward(LayerScratch& scratch, const LayerActivations& acts, ops::View x,
                            const AttentionInputs& attn, const DecoderLayer& w);

}  // namespace sft::model
