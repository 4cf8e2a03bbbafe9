// MoeMlpBlock: a mixture-of-experts layer's MLP from its normed input to the combined experts'
// output (the residual add is the layer's), as transformers' Qwen3MoeSparseMoeBlock computes it:
//   logits = router(ln)                                  (T, E)   mlp.gate, a Linear
//   probs = softmax(logits); the top k per token; weights (renormalised with norm_topk_prob)
//   xs = ln permuted into expert order                   (R, C)   R = T·k (ops/moe.h)
//   gate_e, up_e = xs_e · W_gate,eᵀ, xs_e · W_up,eᵀ      (R, I)   grouped GEMMs, experts'
//   h = silu(gate) · up; ys_e = h_e · W_down,eᵀ          (R, C)   stacked weights' blocks
//   y[t] = Σ_j weights[t, j] · ys[row of (t, j)]         (T, C)
// gpt-oss adds a bias to the router (a Linear's), per-expert biases to the gate, up and down
// products (blocks/moe_expert_bias.h) and takes the clamped SwiGLU, h = (clamp(up) + 1) ·
// g σ(alpha g) with g = min(gate, limit) (ops::swiglu_clamped_*), when swiglu_limit > 0.
// Every step is an ops:: kernel (ops/ops.h's moe_* and grouped_matmul*), deterministic for any
// thread count. Under bf16 compute the grouped GEMMs read bf16 operands (the weights' bf16
// copies; xs, h and the rounded output gradients bf16) with fp32 accumulation, as mlp_block.h;
// the router's softmax and the combine stay fp32.
// On a device the routing's arrays are device memory (ops/moe.h) and the token sort runs on the
// host: the router's ids cross to a host mirror and the sorted arrays back, one round trip per
// layer and forward.
// LoRA on the stacks (PEFT's target_parameters) is data the block receives: an ExpertStack
// hands the grouped GEMMs W + delta and routes their weight gradient to the adapter
// (model/expert_lora.h).
// Expert parallelism (model/expert_parallel.h, `ep` set): the routing, permutation and combine
// stay on the token's rank; the experts' part (experts_forward / experts_backward, the same
// code either way) runs on the owner over the rows it received (moe_block_ep.cpp).
// Saved: probs, weights and the routing (expert_of, offsets, row_of, token_of), xs, gate, up,
// h and ys (the combine's backward reads ys for the weights' gradient). Backward reads them
// and the layer's ln. The load-balancing loss's gradient on the probabilities comes in as
// dprobs (model/moe_aux_loss.h), or none.
// Signature rule: outputs first, then saved activations, inputs, weights; parameter grads
// accumulate (+=), activation grads overwrite (=).
// Dimensions: T tokens, C hidden, E experts, k experts per token, R = T·k routed rows, I an
// expert's intermediate size.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/blocks/block_grad_scratch.h"
#include "model/blocks/layer_shape.h"
#include "model/expert_lora.h"
#include "model/expert_parallel.h"
#include "model/linear.h"
#include "ops/moe.h"
#include "ops/view.h"

namespace sft::model {

struct MoeMlpBlock {
  Linear router;        // mlp.gate.weight (E, C)
  ExpertStack gate_up;  // mlp.experts.gate_up_proj (E·2I, C), with its LoRA adapter or none
  ExpertStack down;     // mlp.experts.down_proj (E·C, I), likewise
  int64_t experts = 0, top_k = 0, I = 0;
  bool normalize = false;  // norm_topk_prob
  // gpt-oss: mlp.experts.gate_up_proj_bias (E, 2I: gate entries, then up entries) and
  // down_proj_bias (E, C), or null; the clamped SwiGLU when swiglu_limit > 0.
  const Parameter* gate_up_bias = nullptr;
  const Parameter* down_bias = nullptr;
  double swiglu_limit = 0, swiglu_alpha = 0;
  // Expert parallelism: the group's share of the experts and this layer's exchange (index
  // `layer` of ep->layers), or null.
  ExpertParallel* ep = nullptr;
  int64_t layer = 0;

  bool bound() const { return gate_up.base != nullptr; }

  struct Saved {
    ops::View probs;               // (T, E) f32
    ops::View weights;             // (T, k) f32
    int64_t* expert_of = nullptr;  // (T·k)
    int64_t* offsets = nullptr;    // (E + 1)
    int64_t* row_of = nullptr;     // (T·k)
    int64_t* token_of = nullptr;   // (T·k)
    ops::View xs;                  // (R, C) compute dtype
    ops::View gate, up, h;         // (R, I) compute dtype (none under expert parallelism)
    ops::View ys;                  // (R, C) f32
    // On a device: the four routing arrays' span mirrored on the host, where the sort runs.
    std::vector<int64_t> host;
    ops::ExpertRouting routing() const;
    // The routing's offsets (E + 1) in host memory: offsets itself, or its place in `host`.
    std::span<const int64_t> host_offsets() const;
  };
  struct Scratch {
    ops::View logits;        // (T, E) f32 (forward: the router's output; backward: dlogits)
    ops::View gate32, up32;  // (R, I) f32: bf16 compute's projections before their rounding
    // Backward.
    ops::View dys, dxs;               // (R, C) f32
    ops::View dweights;               // (T, k) f32
    ops::View dh, dgate, dup;         // (R, I) f32
    ops::View dys16, dgate16, dup16;  // bf16 compute: the rounded output gradients
    ops::View dlogits16;              // (T, E) bf16
  };

  static Saved carve_saved(Carver& cv, const LayerShape& s);
  static Scratch carve_scratch(Carver& cv, const LayerShape& s, bool backward);

  // y (T, C) f32 =; saved; ln (T, C) the normed input, compute dtype.
  void forward(ops::View y, Saved& a, const Scratch& s, ops::View ln) const;
  // dln (T, C) f32 =; dy (T, C) f32 = d(y); dprobs (T, E) f32 an extra gradient on the router's
  // probabilities (the load-balancing loss's) or empty; ln as in forward.
  void backward(ops::View dln, const Scratch& s, const Saved& a, ops::View dy, ops::View dprobs,
                ops::View ln) const;

  // The experts' part on N rows grouped by expert (`routing`, its offsets in host memory:
  // this rank's own rows, or the rows its experts received from the group) and the buffers
  // it reads and writes.
  struct ExpertRows {
    ops::View xs;           // (N, C) compute dtype
    ops::View gate, up, h;  // (N, I) compute dtype
  };
  struct ExpertScratch {
    ops::View gate32, up32;    // (N, I) f32, bf16 compute only
    ops::View dh, dgate, dup;  // (N, I) f32, backward
    ops::View dys16;           // (N, C) bf16, backward under bf16
    ops::View dgate16, dup16;  // (N, I) bf16, backward under bf16
  };
  // ys (N, C) f32 = the experts' outputs; x.gate, up, h = (x.xs given).
  void experts_forward(ops::View ys, const ExpertRows& x, const ExpertScratch& s,
                       const ops::ExpertRouting& routing, std::span<const int64_t> offsets) const;
  // dxs (N, C) f32 =; dys (N, C) f32 the outputs' gradient; the weights' (and biases')
  // gradients +=.
  void experts_backward(ops::View dxs, ops::View dys, const ExpertScratch& s, const ExpertRows& x,
                        const ops::ExpertRouting& routing, std::span<const int64_t> offsets) const;

 private:
  // gate, up (R, I) f32 += the experts' gate and up biases (none without them).
  void add_gate_up_bias(ops::View gate, ops::View up, std::span<const int64_t> offsets) const;
  // Under expert parallelism (moe_block_ep.cpp): a.ys = the owners' outputs for a.xs's rows;
  // s.dxs = the owners' input gradients for s.dys's rows.
  void exchange_forward(Saved& a) const;
  void exchange_backward(const Scratch& s, const Saved& a) const;
};

}  // namespace sft::model
