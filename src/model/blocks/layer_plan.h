// LayerPlan: what one decoder layer is made of, read once from ModelConfig when the model is
// bound. Families differ here as data; the blocks (norm_block.h, attention_block.h,
// mlp_block.h) carry them out. A layer is two residual branches, attention then the MLP, each
//   x ← x + post_norm(branch(pre_norm(x)))
// with either norm present or not (BranchNorms): Llama, Mistral, Qwen and SmolLM3 have the pre
// norms only (the add after attention fused with the MLP's norm), OLMo 2 the post norms only,
// Gemma both. Inside attention the plan names the q/k norm, how much of a head RoPE turns
// (all, part, or none), the score map (scale, soft-cap), the window and the sinks. A family
// that replaces the MLP with experts adds a field here and a block beside the others
// (docs/architecture.md, "How to add a model family"). The projections' biases are the
// parameter layout's (model/param_layout.h): a Linear has one when its bias parameter exists.
#pragma once

#include <cstdint>
#include <string>

#include "model/blocks/attention_block.h"
#include "model/blocks/mlp_block.h"
#include "model/config.h"

namespace sft::model {

// The norms around one residual branch: before it, on its output before the add, or both.
struct BranchNorms {
  bool pre = true;
  bool post = false;
};

struct LayerPlan {
  BranchNorms norms;                     // the same around attention and around the MLP
  float norm_weight_offset = 0;          // 1: every norm of the layer scales by (1 + w) (Gemma)
  bool qk_norm = false;                  // RMSNorm on q and k before RoPE: per head (Qwen3),
  bool qk_norm_over_projection = false;  // or over the whole projection (OLMo 2)
  int64_t rotary_dims = 0;               // a head's dims RoPE turns: D, fewer (partial), 0 (none)
  int64_t window = 0;                    // this layer's sliding window, 0 = full causal attention
  double attention_scale = 0;            // 0 = 1/sqrt(D)
  double softcap = 0;                    // attention scores' soft-cap, 0 = none
  bool sinks = false;                    // a learnable sink logit per head
  QueryScaling query_scaling;            // Ministral 3's position-dependent query scale
  float residual_multiplier = 1;         // each branch's output times this (Granite)
  // Under bf16 the q/k norms' outputs are rounded to bf16 before RoPE, and their gradient before
  // the norms' backward, where autocast rounds them (ModelConfig::norm_output_in_input_dtype:
  // Gemma 3, OLMo 2; Qwen3's norm rounds before its weight, which no kernel here does).
  bool qk_norm_output_rounded = false;
  MlpActivation activation = MlpActivation::kSilu;
  bool experts = false;  // the MLP is a mixture of experts (blocks/moe_block.h)
  // gpt-oss's experts: biased router and projections, the clamped SwiGLU (swiglu_limit > 0).
  bool clamped_experts = false;

  // Whether the layer's backward reads what its MLP's output feeds: a post norm's backward
  // reads the MLP's output, the router's gradient reads each expert's. A pre-norm dense layer's
  // MLP output only goes into the residual sum, the next layer's input, so gradient
  // checkpointing's recomputation skips the down projection and that add there.
  bool backward_reads_mlp_output() const { return norms.post || experts; }

  // Throws "[model] ..." naming `source` (the config file, or what built the config) and the
  // field when the config asks for a layer no block implements.
  static LayerPlan of(const ModelConfig& config, int layer, const std::string& source);
};

// One line ("norm · attention(q/k norm, causal) · add + norm · SwiGLU MLP · add" for Qwen3),
// for logs and tests.
std::string describe(const LayerPlan& plan, int64_t head_dim);

}  // namespace sft::model
