// GatedMlpBlock: a decoder layer's MLP from its normed input to the down projection's output
// (the residual add is the layer's): h = act(gate(ln)) · up(ln); y = down(h). The activation is
// named by the layer plan (model/blocks/layer_plan.h): SwiGLU (silu) or GELU-tanh (Gemma).
// Under bf16 compute gate and up write fp32 scratch that is rounded into their saved bf16
// views (torch autocast's rounding) — a 4-bit base (QLoRA) writes them rounded itself
// (Linear::writes_rounded_output) — and SwiGLU reads the rounded values and writes a bf16 h.
// Saved (Saved): gate, up, h. Backward reads them and the layer's ln.
// Scratch: one region serves the fp32 gate / up outputs in the forward and the bf16 rounded
// dgate, dup in the backward (SharedScratch: the two are never live together).
// Signature rule: outputs first, then saved activations, inputs, weights; parameter grads
// accumulate (+=), activation grads overwrite (=).
// Dimensions: T tokens, C hidden, I intermediate (this rank's share).
#pragma once

#include "core/shard_group.h"
#include "model/blocks/block_grad_scratch.h"
#include "model/blocks/layer_shape.h"
#include "model/blocks/shared_scratch.h"
#include "model/linear.h"
#include "ops/view.h"

namespace sft::model {

enum class MlpActivation { kSilu, kGeluTanh };

struct GatedMlpBlock {
  Linear gate, up, down;
  MlpActivation activation = MlpActivation::kSilu;
  // Tensor parallelism: gate and up are column-parallel, so ln's gradient is summed over this
  // group (down sums its output itself); null without.
  ShardGroup* tp_group = nullptr;

  struct Saved {
    ops::View gate, up, h;  // (T, I) compute dtype
  };
  struct Scratch {
    // bf16 compute: (T, I) f32 gate / up outputs (forward), then dgate16, dup16 (T, I) bf16
    // side by side (backward, between SwiGLU's backward and up's).
    SharedScratch projections;
    ops::View dh, dgate, dup;  // (T, I) f32, backward
  };

  static Saved carve_saved(Carver& cv, const LayerShape& s);
  static Scratch carve_scratch(Carver& cv, const LayerShape& s, bool backward);

  // y (T, C) f32 =; saved; ln (T, C) the normed input, compute dtype.
  void forward(ops::View y, Saved& a, const Scratch& s, ops::View ln) const;
  // The saved activations alone (gate, up, h: forward's, bit for bit), without the down
  // projection: gradient checkpointing's recomputation where nothing reads y.
  void forward_saved(Saved& a, const Scratch& s, ops::View ln) const;
  // h = act(gate) · up from the saved gate and up (forward_saved's last step): the
  // recomputation when gradient checkpointing kept the products (Transformer::
  // set_checkpoint_keeps_mlp).
  void activate(Saved& a) const;
  // dln (T, C) f32 = (summed over tp_group); dy (T, C) f32 = d(y); ln as in forward.
  void backward(ops::View dln, const Scratch& s, const BlockGradScratch& g, const Saved& a,
                ops::View dy, ops::View ln) const;
};

}  // namespace sft::model
