// One decoder layer as a plan of blocks (model/blocks/), bound once from ModelConfig. With pre
// norms only (Llama, Mistral, Qwen, SmolLM3):
//   ln1 = attn_norm(x);  y = attention(ln1)            (blocks/attention_block.h)
//   x_mid = x + y, ln2 = mlp_norm(x_mid)               (one fused pass: blocks/norm_block.h)
//   out = x_mid + mlp(ln2)                             (blocks/mlp_block.h)
// With post norms (OLMo 2: no pre norms; Gemma: both), each branch's output is normed before
// its add and kept for that norm's backward:
//   ln1 = attn_norm(x) or x;  attn_out = attention(ln1);  x_mid = x + attn_out_norm(attn_out)
//   ln2 = mlp_norm(x_mid) or x_mid;  mlp_out = mlp(ln2);  out = x_mid + mlp_out_norm(mlp_out)
// Granite scales each branch's output by residual_multiplier before its add (pre norms).
// for training (forward, backward) and for decoding against a KV cache (the same forward,
// keys and values written into the cache). Each block carves its own saved activations and
// scratch and owns its forward and backward; this file only wires them through the residual
// stream. Under bf16 compute the blocks keep their matmul inputs in bf16 (fp32 accumulation)
// and round what they save as torch autocast does; what stays fp32 is the residual stream
// (x_mid, out), the norms' statistics and attention's log-sum-exp.
// Signature rule: outputs first, then saved activations, inputs, weights; parameter grads
// accumulate (+=), activation grads overwrite (=).
// Dimensions: T tokens, C hidden, I intermediate, H heads, Hkv kv heads, D head dim.
#pragma once

#include <array>

#include "core/arena.h"
#include "model/blocks/attention_block.h"
#include "model/blocks/block_grad_scratch.h"
#include "model/blocks/layer_plan.h"
#include "model/blocks/layer_shape.h"
#include "model/blocks/mlp_block.h"
#include "model/blocks/moe_block.h"
#include "model/blocks/norm_block.h"
#include "model/config.h"
#include "model/parameters.h"
#include "model/tensor_parallel.h"

namespace sft::model {

struct DecoderLayer {
  LayerPlan plan;
  RmsNormBlock attn_norm;  // input_layernorm (pre norms)
  AttentionBlock attention;
  RmsNormBlock attn_out_norm;  // post_attention_layernorm of the post-norm families
  RmsNormBlock mlp_norm;  // Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm
  GatedMlpBlock mlp;
  MoeMlpBlock moe;            // in place of mlp where the layer has experts (plan.experts)
  RmsNormBlock mlp_out_norm;  // post_feedforward_layernorm (post norms)

  // params holds this rank's slices (tensor_parallel.h); o and down then sum over tp.group.
  // norm_weight_scratch: the model's (1, ≥ max(C, D)) f32 scratch of (1 + w) norms, or empty.
  static DecoderLayer bind(const ParameterSet& params, const ModelConfig& config, int layer,
                           const TensorParallel& tp = {}, ops::View norm_weight_scratch = {});

  // Every projection and every norm weight of the layer (LoRA binds adapters and swaps
  // modules_to_save copies through these; an unbound norm's is null).
  std::array<Linear*, 7> linears() {
    return {&attention.q, &attention.k, &attention.v, &attention.o, &mlp.gate, &mlp.up, &mlp.down};
  }
  std::array<const Parameter**, 6> norm_weights() {
    return {&attn_norm.weight,    &attn_out_norm.weight,    &mlp_norm.weight,
            &mlp_out_norm.weight, &attention.q_norm.weight, &attention.k_norm.weight};
  }
};

// Activations of one layer over T tokens (views into an activation arena). attn.k and attn.v
// are where this call's keys and values go: the layer's own rows in training, the cache rows
// in decoding.
struct LayerActivations {
  ops::View ln1, rstd1;  // (T, C) compute dtype, (T, 1); without a pre norm ln1 is x cast
  AttentionBlock::Saved attn;
  ops::View attn_out, attn_out_rstd;  // (T, C) f32, (T, 1): post norms only
  ops::View x_mid;                    // (T, C) f32 residual after attention
  ops::View ln2, rstd2;               // (T, C) compute dtype, (T, 1)
  GatedMlpBlock::Saved mlp;
  MoeMlpBlock::Saved moe;           // a layer with experts
  ops::View mlp_out, mlp_out_rstd;  // (T, C) f32, (T, 1): post norms only
};

// Scratch of one forward or backward call, shared by all layers (never saved).
struct LayerScratch {
  ops::View y;  // (T, C) f32 the attention block's output before the residual add (pre norms)
  ops::View z;  // (T, C) compute dtype: a post norm's output before its add (post norms)
  AttentionBlock::Scratch attn;
  GatedMlpBlock::Scratch mlp;
  MoeMlpBlock::Scratch moe;
  // Backward, a layer with experts: the load-balancing loss's gradient on its router's
  // probabilities (T, E) f32, set by the model before the layer's backward; empty = none.
  ops::View moe_dprobs;
  // Backward: the residual stream's gradient and the blocks' shared scratch.
  ops::View dres, dtmp, dln;  // (T, C) f32
  BlockGradScratch grad;
};

// Carves one layer's activations; attn.k and attn.v are left empty when `own_kv` is false
// (decoding points them at the cache).
LayerActivations carve_layer_activations(Carver& cv, const LayerShape& s, bool own_kv = true);
LayerScratch carve_layer_scratch(Carver& cv, const LayerShape& s, LayerPass pass);

// out (T, C) =; acts saved; x (T, C) the layer input.
void decoder_layer_forward(ops::View out, LayerActivations& acts, LayerScratch& scratch,
                           ops::View x, const AttentionInputs& attn, const DecoderLayer& w);

// Gradient checkpointing's recomputation before the layer's backward: every activation the
// backward reads, bit for bit as decoder_layer_forward saved it. out is rewritten (the same
// values) only where the backward reads the MLP's output (LayerPlan::backward_reads_mlp_output);
// a pre-norm dense layer skips its down projection and the residual add, out being the next
// layer's input, kept since the forward.
// With mlp_kept (the forward kept this layer's gate and up products: a pre-norm dense layer
// under Transformer::set_checkpoint_keeps_mlp) only h = act(gate) · up is formed again.
void decoder_layer_recompute(ops::View out, LayerActivations& acts, LayerScratch& scratch,
                             ops::View x, const AttentionInputs& attn, const DecoderLayer& w,
                             bool mlp_kept = false);

// scratch.dres holds d(out) on entry and d(x) on return; weight grads +=.
void decoder_layer_backward(LayerScratch& scratch, const LayerActivations& acts, ops::View x,
                            const AttentionInputs& attn, const DecoderLayer& w);

}  // namespace sft::model
