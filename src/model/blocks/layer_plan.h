// LayerPlan: what one decoder layer is made of, read once from ModelConfig when the model is
// bound. Families differ here as data; the blocks (norm_block.h, attention_block.h,
// mlp_block.h) carry them out. Today's families (Llama, Mistral, Qwen2, Qwen3) share one
// arrangement — pre-norm attention and pre-norm MLP, each a residual branch, the add after
// attention fused with the MLP's norm — and differ in the fields below. A family that
// arranges its norms differently (post-norms, four norms, (1 + w) weights) or replaces the
// MLP with experts adds a field here and a block beside the others (docs/architecture.md,
// "How to add a model family"). The projections' biases are the parameter layout's
// (model/param_layout.h): a Linear has one when its bias parameter exists.
#pragma once

#include <cstdint>
#include <string>

#include "model/blocks/mlp_block.h"
#include "model/config.h"

namespace sft::model {

struct LayerPlan {
  bool qk_norm = false;  // per-head RMSNorm on q and k before RoPE (Qwen3)
  int64_t window = 0;    // this layer's sliding window, 0 = full causal attention
  MlpActivation activation = MlpActivation::kSilu;

  // Throws "[model] ..." naming `source` (the config file, or what built the config) and the
  // field when the config asks for a layer no block implements.
  static LayerPlan of(const ModelConfig& config, int layer, const std::string& source);
};

// One line ("norm · attention(q/k norm, causal) · add + norm · SwiGLU MLP · add"), for logs
// and tests.
std::string describe(const LayerPlan& plan);

}  // namespace sft::model
